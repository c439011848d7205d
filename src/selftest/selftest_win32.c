/*
 * selftest_win32.c - the self-test's file and I/O on Windows (selftest.h).
 *
 * The file is made new (CREATE_NEW, which fails on any existing name, a
 * symbolic link's too) in %SystemRoot%\Temp by default, a folder of the
 * system drive that an elevated prompt may write, and it is opened with
 * FILE_FLAG_DELETE_ON_CLOSE, so Windows removes it whenever the handle
 * closes, even when diskmon is killed. Every request is unbuffered and
 * written through (FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH) with a
 * page-aligned buffer (VirtualAlloc), so each is one request to the disk.
 *
 * Where the bytes are on the physical disk, and whether it has a write
 * cache, is selftest_win32_map.c's job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winioctl.h>

#include "platform/platform.h"
#include "platform/win32_volume.h"
#include "selftest/selftest.h"
#include "selftest/selftest_win32.h"

#define FILE_BYTES (DM_ST_FILE_BLOCKS * DM_ST_BLOCK)
#define OPEN_FLAGS (FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH)
#define SHARE_ALL (FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
/* The kernel keeps a process's image file name in 15 characters
 * (EPROCESS ImageFileName; what the Process events carry). */
#define IMAGE_NAME_MAX 15

struct dm_st_file {
    HANDLE h;          /* made by dm_st_prepare, before the session */
    HANDLE late;       /* opened at the first read, during the session */
    unsigned char *buf;
    wchar_t wpath[MAX_PATH];
    char path[MAX_PATH * 3];
    char name[MAX_PATH * 3]; /* as the File column shows it */
};

static int win_fail(char *msg, size_t len, const char *what, DWORD code)
{
    char text[256];

    dm_win32_strerror(code, text, sizeof text);
    snprintf(msg, len, "%s: %s (error %lu)", what, text, (unsigned long)code);
    return dm_err_from_win32(code);
}

static void to_utf8(const wchar_t *w, char *out, size_t len)
{
    if (WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)len, NULL, NULL) == 0)
        out[0] = '\0';
}

/* The folder: path itself, the folder of a file, or %SystemRoot%\Temp.
 * main's argv is in the ANSI code page (as win32.c reads paths). */
static int pick_dir(const char *path, wchar_t *dir, char *msg, size_t len)
{
    DWORD attr;

    if (path == NULL) {
        UINT n = GetWindowsDirectoryW(dir, MAX_PATH - 64);

        if (n == 0 || n >= MAX_PATH - 64)
            return win_fail(msg, len, "GetWindowsDirectoryW", GetLastError());
        wcscat(dir, L"\\Temp");
        return 0;
    }
    if (MultiByteToWideChar(CP_ACP, 0, path, -1, dir, MAX_PATH - 64) == 0) {
        snprintf(msg, len, "%s: path too long", path);
        return DM_EUSAGE;
    }
    attr = GetFileAttributesW(dir);
    if (attr == INVALID_FILE_ATTRIBUTES) {
        char what[MAX_PATH + 16];

        snprintf(what, sizeof what, "cannot use %s", path);
        return win_fail(msg, len, what, GetLastError());
    }
    if (!(attr & FILE_ATTRIBUTE_DIRECTORY)) {
        wchar_t *cut = wcsrchr(dir, L'\\');

        if (cut == NULL)
            wcscpy(dir, L".");
        else
            *cut = L'\0';
    }
    return 0;
}

int dm_st_prepare(struct dm_st_file **out, const char *path, struct dm_st_place *place,
                  char *msg, size_t len)
{
    struct dm_st_file *f = calloc(1, sizeof *f);
    wchar_t dir[MAX_PATH], final[MAX_PATH];
    DWORD done = 0, n;
    int rc;

    *out = NULL;
    memset(place, 0, sizeof *place);
    place->write_cache = -1;
    snprintf(place->where, sizeof place->where, "unknown");
    snprintf(place->disk_name, sizeof place->disk_name, "?");
    if (f == NULL ||
        (f->buf = VirtualAlloc(NULL, FILE_BYTES, MEM_COMMIT | MEM_RESERVE,
                               PAGE_READWRITE)) == NULL) {
        free(f);
        snprintf(msg, len, "%s", dm_strerror(DM_ENOMEM));
        return DM_ENOMEM;
    }
    f->h = f->late = INVALID_HANDLE_VALUE;
    *out = f;
    rc = pick_dir(path, dir, msg, len);
    if (rc != 0)
        return rc;
    for (unsigned tries = 0; f->h == INVALID_HANDLE_VALUE && tries < 100; tries++) {
        _snwprintf(f->wpath, MAX_PATH, L"%ls\\diskmon-selftest.%lu.%u.tmp", dir,
                   (unsigned long)GetCurrentProcessId(),
                   (unsigned)(dm_monotonic_ns() % 1000000u) + tries);
        f->wpath[MAX_PATH - 1] = L'\0';
        f->h = CreateFileW(f->wpath, GENERIC_READ | GENERIC_WRITE, SHARE_ALL, NULL,
                           CREATE_NEW, OPEN_FLAGS | FILE_FLAG_DELETE_ON_CLOSE, NULL);
        if (f->h == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_EXISTS)
            break;
    }
    to_utf8(f->wpath, f->path, sizeof f->path);
    if (f->h == INVALID_HANDLE_VALUE)
        return win_fail(msg, len, "cannot create a file (CreateFileW)", GetLastError());
    dm_st_fill(f->buf, 0, FILE_BYTES);
    if (!WriteFile(f->h, f->buf, FILE_BYTES, &done, NULL) || done != FILE_BYTES ||
        !FlushFileBuffers(f->h))
        return win_fail(msg, len, "cannot write the file", GetLastError());
    /* The long DOS path the File column shows ("\\?\C:\..." without its
     * prefix), not a short 8.3 spelling of TEMP. */
    n = dm_win32_volume->get_final_path(f->h, final, MAX_PATH, FILE_NAME_NORMALIZED);
    if (n == 0 || n >= MAX_PATH)
        final[0] = L'\0';
    else
        to_utf8(wcsncmp(final, L"\\\\?\\", 4) == 0 ? final + 4 : final, f->name,
                sizeof f->name);
    dm_st_map_file(f->h, final, place);
    return 0;
}

const char *dm_st_path(const struct dm_st_file *f)
{
    return f->path;
}

const char *dm_st_file_name(const struct dm_st_file *f)
{
    return f->name[0] != '\0' ? f->name : f->path;
}

/* The second handle: the same file by name, checked to be the same file
 * (volume serial number and file index), not one put in its place. */
static int open_late(struct dm_st_file *f, char *msg, size_t len)
{
    BY_HANDLE_FILE_INFORMATION a, b;

    f->late = CreateFileW(f->wpath, GENERIC_READ | GENERIC_WRITE, SHARE_ALL, NULL,
                          OPEN_EXISTING, OPEN_FLAGS, NULL);
    if (f->late == INVALID_HANDLE_VALUE)
        return win_fail(msg, len, "cannot open the file again", GetLastError());
    if (!GetFileInformationByHandle(f->h, &a) || !GetFileInformationByHandle(f->late, &b) ||
        a.dwVolumeSerialNumber != b.dwVolumeSerialNumber ||
        a.nFileIndexHigh != b.nFileIndexHigh || a.nFileIndexLow != b.nFileIndexLow) {
        snprintf(msg, len, "%s, opened again, is not the file made", f->path);
        return DM_EIO;
    }
    return 0;
}

int dm_st_request(struct dm_st_file *f, int request, uint64_t offset, uint32_t bytes,
                  int early, char *msg, size_t len)
{
    OVERLAPPED ov;
    DWORD done = 0;
    HANDLE h = f->h;
    BOOL ok;

    if (!early && f->late == INVALID_HANDLE_VALUE) {
        int rc = open_late(f, msg, len);

        if (rc != 0)
            return rc;
    }
    if (!early)
        h = f->late;
    if (request == DM_REQ_FLUSH)
        return FlushFileBuffers(h) ? 0 : win_fail(msg, len, "FlushFileBuffers", GetLastError());
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)offset;
    ov.OffsetHigh = (DWORD)(offset >> 32);
    if (request == DM_REQ_WRITE) {
        dm_st_fill(f->buf, offset, bytes);
        ok = WriteFile(h, f->buf, bytes, &done, &ov);
    } else {
        memset(f->buf, 0, bytes);
        ok = ReadFile(h, f->buf, bytes, &done, &ov);
    }
    if (!ok)
        return win_fail(msg, len, request == DM_REQ_WRITE ? "WriteFile" : "ReadFile",
                        GetLastError());
    if (done != bytes) {
        snprintf(msg, len, "%lu of %u bytes at %llu", (unsigned long)done, bytes,
                 (unsigned long long)offset);
        return DM_EIO;
    }
    return request == DM_REQ_READ ? dm_st_check_read(f->buf, offset, bytes, msg, len) : 0;
}

void dm_st_remove(struct dm_st_file *f)
{
    if (f == NULL)
        return;
    if (f->late != INVALID_HANDLE_VALUE)
        CloseHandle(f->late);
    if (f->h != INVALID_HANDLE_VALUE)
        CloseHandle(f->h); /* FILE_FLAG_DELETE_ON_CLOSE: the file goes with it */
    if (f->buf != NULL)
        VirtualFree(f->buf, 0, MEM_RELEASE);
    free(f);
}

uint32_t dm_st_own_pid(void)
{
    return (uint32_t)GetCurrentProcessId();
}

void dm_st_own_name(char *buf, size_t len)
{
    wchar_t exe[MAX_PATH];
    const wchar_t *base;
    DWORD n = GetModuleFileNameW(NULL, exe, MAX_PATH);
    char name[MAX_PATH * 3];

    if (n == 0 || n >= MAX_PATH) {
        snprintf(buf, len, "diskmon.exe");
        return;
    }
    base = wcsrchr(exe, L'\\');
    to_utf8(base != NULL ? base + 1 : exe, name, sizeof name);
    snprintf(buf, len, "%.*s", IMAGE_NAME_MAX, name);
}
