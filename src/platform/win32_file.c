/*
 * win32_file.c - the file calls of the platform layer on Windows
 * (platform.h "Files"): file identity, kinds, sizes, reads at an offset,
 * and the one safe way to replace an output file. Split from win32.c, which
 * keeps threads, clocks, the console and the error translator.
 */
#include <windows.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "platform/platform.h"

/* ---- file identity and reads at an offset --------------------------------- */

/* The volume serial number and the 64-bit file index together name one file
 * on one volume (GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION). */
static int id_from_handle(HANDLE h, struct dm_file_id *id)
{
    BY_HANDLE_FILE_INFORMATION info;

    if (h == INVALID_HANDLE_VALUE || GetFileType(h) != FILE_TYPE_DISK ||
        !GetFileInformationByHandle(h, &info))
        return 0;
    id->volume = info.dwVolumeSerialNumber;
    id->index = ((uint64_t)info.nFileIndexHigh << 32) | info.nFileIndexLow;
    return 1;
}

int dm_file_id_of_path(const char *path, struct dm_file_id *id)
{
    HANDLE h;
    int ok;

    if (path == NULL)
        return 0;
    /* No access right is needed to read the file's information; share
     * everything so a file another program holds open can still be asked.
     * BACKUP_SEMANTICS lets a directory open too. The A call takes the same
     * spelling of the path as fopen() does. */
    h = CreateFileA(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                    NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    ok = id_from_handle(h, id);
    CloseHandle(h);
    return ok;
}

int dm_file_id_of_stream(FILE *f, struct dm_file_id *id)
{
    return id_from_handle((HANDLE)_get_osfhandle(_fileno(f)), id);
}

/* path in the ANSI code page, as the A calls and fopen() read it, as UTF-16
 * for the W call; NULL when it does not convert or memory runs out. */
static wchar_t *wide_path(const char *path)
{
    int n = MultiByteToWideChar(CP_ACP, 0, path, -1, NULL, 0);
    wchar_t *w;

    if (n <= 0 || (w = malloc((size_t)n * sizeof *w)) == NULL)
        return NULL;
    if (MultiByteToWideChar(CP_ACP, 0, path, -1, w, n) != n) {
        free(w);
        return NULL;
    }
    return w;
}

/* A reader that opened path without FILE_SHARE_DELETE (windows_exporter
 * reading it, an editor) makes the replace fail until it closes the file:
 * try a few times before giving up until the next interval. */
#define REPLACE_TRIES 5
#define REPLACE_WAIT_MS 20

int dm_file_replace(const char *path, const char *tmp, const void *data, size_t len)
{
    const char *p = data;
    wchar_t *wpath = NULL, *wtmp = NULL;
    DWORD e = 0;
    HANDLE h;

    h = CreateFileA(tmp, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return dm_err_from_win32(GetLastError());
    while (len > 0) {
        DWORD chunk = len > 0x40000000u ? 0x40000000u : (DWORD)len, done = 0;

        if (!WriteFile(h, p, chunk, &done, NULL) || done == 0) {
            e = GetLastError();
            if (e == 0)
                e = ERROR_WRITE_FAULT;
            break;
        }
        p += done;
        len -= done;
    }
    if (!CloseHandle(h) && e == 0)
        e = GetLastError();
    if (e == 0) {
        wpath = wide_path(path);
        wtmp = wide_path(tmp);
        if (wpath == NULL || wtmp == NULL)
            e = ERROR_NOT_ENOUGH_MEMORY;
    }
    for (int i = 0; e == 0; i++) {
        if (MoveFileExW(wtmp, wpath, MOVEFILE_REPLACE_EXISTING))
            break;
        e = GetLastError();
        if (i + 1 < REPLACE_TRIES &&
            (e == ERROR_ACCESS_DENIED || e == ERROR_SHARING_VIOLATION)) {
            Sleep(REPLACE_WAIT_MS);
            e = 0;
        }
    }
    free(wpath);
    free(wtmp);
    if (e != 0) {
        DeleteFileA(tmp);
        return dm_err_from_win32(e);
    }
    return 0;
}

enum dm_file_kind dm_file_kind(const char *path, uint64_t *size)
{
    WIN32_FILE_ATTRIBUTE_DATA data;

    if (!GetFileAttributesExA(path, GetFileExInfoStandard, &data))
        return DM_FILE_MISSING;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        return DM_FILE_DIRECTORY;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DEVICE)
        return DM_FILE_OTHER;
    *size = ((uint64_t)data.nFileSizeHigh << 32) | data.nFileSizeLow;
    return DM_FILE_REGULAR;
}

int dm_file_size(FILE *f, uint64_t *size)
{
    __int64 end;

    if (_fseeki64(f, 0, SEEK_END) != 0 || (end = _ftelli64(f)) < 0)
        return -1;
    *size = (uint64_t)end;
    return 0;
}

int dm_file_read_at(FILE *f, uint64_t off, void *dst, size_t len)
{
    HANDLE h = (HANDLE)_get_osfhandle(_fileno(f));
    unsigned char *p = dst;

    if (h == INVALID_HANDLE_VALUE)
        return -1;
    while (len > 0) {
        /* ReadFile takes a DWORD count; 1 GB at a time stays well inside. */
        DWORD want = len > (1u << 30) ? (DWORD)(1u << 30) : (DWORD)len, got = 0;
        OVERLAPPED at;

        memset(&at, 0, sizeof at);
        at.Offset = (DWORD)(off & 0xFFFFFFFFu);
        at.OffsetHigh = (DWORD)(off >> 32);
        if (!ReadFile(h, p, want, &got, &at) || got == 0)
            return -1; /* an error, or the end of the file */
        p += got;
        off += got;
        len -= got;
    }
    return 0;
}
