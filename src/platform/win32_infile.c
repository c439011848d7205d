/*
 * win32_infile.c - dm_infile (platform.h) on Windows: CreateFileA (the
 * ANSI code page, as fopen reads a path) or the standard input handle,
 * ReadFile straight into the caller's buffer. A pipe (`ssh host diskmon
 * -f json | diskmon -r -`) is asked with PeekNamedPipe first, so a wait
 * ends after wait_ms; its writer closing it (ERROR_BROKEN_PIPE) is the end
 * of the input (Microsoft Learn, "ReadFile function", "PeekNamedPipe
 * function"). A console is read as it is: a read waits for a line.
 */
#include <stdlib.h>
#include <string.h>

#include <windows.h>

#include "diskmon.h"
#include "platform/platform.h"

/* How often a wait on a pipe asks whether bytes came. */
#define PIPE_POLL_MS 5u

struct dm_infile {
    HANDLE h;
    int own;
    DWORD type;     /* GetFileType: FILE_TYPE_DISK, _PIPE, _CHAR */
    int no_peek;    /* PeekNamedPipe failed once: read as it comes */
    uint64_t size;
};

int dm_infile_open(dm_infile **out, const char *path, char *why, size_t cap)
{
    struct dm_infile *f = calloc(1, sizeof *f);
    LARGE_INTEGER size;

    *out = NULL;
    if (f == NULL) {
        snprintf(why, cap, "out of memory");
        return DM_ENOMEM;
    }
    if (strcmp(path, "-") == 0) {
        f->h = GetStdHandle(STD_INPUT_HANDLE);
    } else {
        f->h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, FILE_FLAG_SEQUENTIAL_SCAN, NULL);
        f->own = 1;
    }
    if (f->h == INVALID_HANDLE_VALUE || f->h == NULL) {
        DWORD e = GetLastError();

        dm_win32_strerror(e, why, cap);
        free(f);
        return dm_err_from_win32(e);
    }
    f->type = GetFileType(f->h);
    if (f->type == FILE_TYPE_DISK && GetFileSizeEx(f->h, &size))
        f->size = (uint64_t)size.QuadPart;
    *out = f;
    return 0;
}

int dm_infile_read(dm_infile *f, void *buf, size_t cap, unsigned wait_ms, size_t *got)
{
    DWORD want = cap > (1u << 30) ? (DWORD)(1u << 30) : (DWORD)cap, n = 0;

    *got = 0;
    if (f->type == FILE_TYPE_PIPE && !f->no_peek) {
        unsigned waited = 0;
        DWORD avail = 0;

        for (;;) {
            if (!PeekNamedPipe(f->h, NULL, 0, NULL, &avail, NULL)) {
                DWORD e = GetLastError();

                if (e == ERROR_BROKEN_PIPE)
                    return 1;
                /* A pipe that cannot be asked (Wine's answer for a POSIX
                 * pipe): ReadFile, which returns what a pipe has as soon
                 * as it has some, though a wait then lasts until it does. */
                f->no_peek = 1;
                avail = (DWORD)want;
                break;
            }
            if (avail > 0)
                break;
            if (waited >= wait_ms)
                return 0;
            Sleep(PIPE_POLL_MS);
            waited += PIPE_POLL_MS;
        }
        if (want > avail)
            want = avail;
    }
    if (!ReadFile(f->h, buf, want, &n, NULL)) {
        DWORD e = GetLastError();

        return e == ERROR_BROKEN_PIPE || e == ERROR_HANDLE_EOF ? 1 : dm_err_from_win32(e);
    }
    if (n == 0)
        return 1;
    *got = n;
    return 0;
}

uint64_t dm_infile_size(const dm_infile *f)
{
    return f->size;
}

void dm_infile_close(dm_infile *f)
{
    if (f == NULL)
        return;
    if (f->own)
        CloseHandle(f->h);
    free(f);
}
