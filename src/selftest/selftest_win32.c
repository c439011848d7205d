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
 * Where the bytes are: FSCTL_GET_RETRIEVAL_POINTERS gives the file's runs
 * of clusters on the volume, and IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS the
 * disk and byte offset where the volume starts. DiskIo events carry the
 * byte offset "from the beginning of the physical disk" (Microsoft Learn,
 * DiskIo_TypeGroup1 class), so the two added give the offset to expect.
 * Any answer missing leaves the place unknown, with the reason: the checks
 * then compare sizes and order only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winioctl.h>

#include "platform/platform.h"
#include "platform/win32_volume.h"
#include "selftest/selftest.h"

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

static void fill(unsigned char *p, uint64_t offset, uint32_t bytes)
{
    for (uint32_t i = 0; i < bytes; i += DM_ST_BLOCK)
        memset(p + i, 0xA0 + (int)((offset + i) / DM_ST_BLOCK), DM_ST_BLOCK);
}

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

/* The place of the file's clusters on the physical disk (see the top). */
static void map_file(struct dm_st_file *f, struct dm_st_place *pl)
{
    wchar_t root[8] = L"C:\\", volume[8] = L"\\\\.\\C:";
    DWORD spc, bps, free_c, total_c, got = 0;
    STARTING_VCN_INPUT_BUFFER in;
    union {
        RETRIEVAL_POINTERS_BUFFER rp;
        unsigned char room[sizeof(RETRIEVAL_POINTERS_BUFFER) +
                           DM_ST_MAX_EXTENTS * sizeof(LARGE_INTEGER) * 2];
    } out;
    VOLUME_DISK_EXTENTS vde;
    HANDLE v;
    uint64_t cluster, vcn;

    snprintf(pl->unmapped_why, sizeof pl->unmapped_why, "unknown");
    if (f->name[0] == '\0' || f->name[1] != ':') {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "%s is not on a volume with a drive letter", f->path);
        return;
    }
    root[0] = volume[4] = (wchar_t)f->name[0];
    if (!dm_win32_volume->get_disk_free_space(root, &spc, &bps, &free_c, &total_c)) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "GetDiskFreeSpaceW failed (error %lu)", (unsigned long)GetLastError());
        return;
    }
    cluster = (uint64_t)spc * bps;
    memset(&in, 0, sizeof in);
    if (!dm_win32_volume->device_io_control(f->h, FSCTL_GET_RETRIEVAL_POINTERS, &in, sizeof in, &out,
                         sizeof out, &got, NULL)) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "FSCTL_GET_RETRIEVAL_POINTERS failed (error %lu)",
                 (unsigned long)GetLastError());
        return;
    }
    v = dm_win32_volume->create_file(volume, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0,
                    NULL);
    if (v == INVALID_HANDLE_VALUE ||
        !dm_win32_volume->device_io_control(v, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, NULL, 0, &vde,
                         sizeof vde, &got, NULL) ||
        vde.NumberOfDiskExtents != 1) {
        /* More than one extent: a volume spanning disks (dynamic disks,
         * Storage Spaces), whose clusters do not map onto one disk. */
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the volume's place on its disk is unknown (IOCTL_VOLUME_GET_VOLUME_DISK_"
                 "EXTENTS: error %lu)", (unsigned long)GetLastError());
        if (v != INVALID_HANDLE_VALUE)
            dm_win32_volume->close_handle(v);
        return;
    }
    dm_win32_volume->close_handle(v);
    pl->disk = vde.Extents[0].DiskNumber;
    snprintf(pl->disk_name, sizeof pl->disk_name, "disk %lu",
             (unsigned long)vde.Extents[0].DiskNumber);
    vcn = (uint64_t)out.rp.StartingVcn.QuadPart;
    for (DWORD i = 0; i < out.rp.ExtentCount && pl->n_ext < DM_ST_MAX_EXTENTS; i++) {
        uint64_t next = (uint64_t)out.rp.Extents[i].NextVcn.QuadPart;
        int64_t lcn = out.rp.Extents[i].Lcn.QuadPart;
        struct dm_st_extent *e = &pl->ext[pl->n_ext++];

        if (lcn < 0) { /* -1: a hole or compressed run, not on the disk */
            pl->n_ext = 0;
            snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                     "the file has a run with no clusters (sparse or compressed)");
            return;
        }
        e->file_offset = vcn * cluster;
        e->disk_offset = (uint64_t)vde.Extents[0].StartingOffset.QuadPart +
                         (uint64_t)lcn * cluster;
        e->bytes = (next - vcn) * cluster;
        vcn = next;
    }
    if (vcn * cluster < FILE_BYTES) {
        pl->n_ext = 0;
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the retrieval pointers cover %llu of its %u bytes",
                 (unsigned long long)(vcn * cluster), FILE_BYTES);
        return;
    }
    pl->mapped = 1;
    snprintf(pl->where, sizeof pl->where, "retrieval pointers, %llu-byte clusters, volume "
             "at byte %lld of the disk", (unsigned long long)cluster,
             (long long)vde.Extents[0].StartingOffset.QuadPart);
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
    fill(f->buf, 0, FILE_BYTES);
    if (!WriteFile(f->h, f->buf, FILE_BYTES, &done, NULL) || done != FILE_BYTES ||
        !FlushFileBuffers(f->h))
        return win_fail(msg, len, "cannot write the file", GetLastError());
    /* The long DOS path the File column shows ("\\?\C:\..." without its
     * prefix), not a short 8.3 spelling of TEMP. */
    n = dm_win32_volume->get_final_path(f->h, final, MAX_PATH, FILE_NAME_NORMALIZED);
    if (n > 0 && n < MAX_PATH)
        to_utf8(wcsncmp(final, L"\\\\?\\", 4) == 0 ? final + 4 : final, f->name,
                sizeof f->name);
    map_file(f, place);
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
        fill(f->buf, offset, bytes);
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
    if (request == DM_REQ_READ) {
        for (uint32_t i = 0; i < bytes; i++) {
            if (f->buf[i] != (unsigned char)(0xA0 + (offset + i) / DM_ST_BLOCK)) {
                snprintf(msg, len, "the %u bytes read at %llu are not those written", bytes,
                         (unsigned long long)offset);
                return DM_EIO;
            }
        }
    }
    return 0;
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
