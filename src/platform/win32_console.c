/*
 * win32_console.c - the one writer on Windows: dm_write_all, through which
 * every byte diskmon prints goes (stdout and stderr alike: the event lines,
 * --top, the messages, the notes, the -s summary; output/text.h), and the
 * console around it (whether a stream is one, its size, VT mode, binary
 * stdio). A console gets UTF-16 through WriteConsoleW, whatever its code
 * page; a pipe or a file gets the UTF-8 bytes through WriteFile, whose
 * errors pass through the one translator (dm_errno_from_win32, win32.c).
 * The Win32 calls go through the dm_win32_io table (win32_io.h), so tests
 * can play the answers Wine cannot give.
 */
#include <windows.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>

#include "diskmon.h"
#include "platform/platform.h"
#include "platform/win32_io.h"

/* ---- the console and file calls behind dm_write_all (win32_io.h) -------- */

/* Wrappers, not the kernel32 functions themselves, for the same reason as
 * etw_api.c: a static table of dllimport addresses is MSVC warning C4232. */
static BOOL WINAPI real_write_file(HANDLE h, LPCVOID buf, DWORD len, LPDWORD written,
                                   LPOVERLAPPED ov)
{
    return WriteFile(h, buf, len, written, ov);
}

static BOOL WINAPI real_write_console(HANDLE h, const WCHAR *buf, DWORD len,
                                      LPDWORD written)
{
    return WriteConsoleW(h, buf, len, written, NULL);
}

static BOOL WINAPI real_get_console_mode(HANDLE h, LPDWORD mode)
{
    return GetConsoleMode(h, mode);
}

const struct dm_win32_io dm_win32_io_real = {
    real_write_file,
    real_write_console,
    real_get_console_mode,
};

const struct dm_win32_io *dm_win32_io = &dm_win32_io_real;

/* The OS handle behind f, or INVALID_HANDLE_VALUE. */
static HANDLE handle_of(FILE *f)
{
    int fd = _fileno(f);

    return fd < 0 ? INVALID_HANDLE_VALUE : (HANDLE)_get_osfhandle(fd);
}

/* The console behind f, or NULL. Not _isatty, which is also true for the
 * NUL device and serial ports: GetConsoleMode fails for anything but a
 * console. */
static HANDLE console_of(FILE *f)
{
    HANDLE h = handle_of(f);
    DWORD mode;

    if (h == INVALID_HANDLE_VALUE || h == NULL ||
        !dm_win32_io->get_console_mode(h, &mode))
        return NULL;
    return h;
}

int dm_is_terminal(FILE *f)
{
    return console_of(f) != NULL;
}

/*
 * A console gets UTF-16 through WriteConsoleW, which needs no code page:
 * with UTF-8 bytes and code page 65001, consoles before Windows 10 report
 * characters written, not bytes, and garble a character split across two
 * writes (docs/etw.md §8; microsoft/terminal#386). Python does the same
 * since 3.6 (PEP 528). A batch is cut only between UTF-8 characters, and
 * CONSOLE_CHUNK bytes give at most CONSOLE_CHUNK UTF-16 units (a UTF-8
 * character of n bytes is at most n units), 16 KiB: inside the 64 KiB shared
 * heap that consoles before Windows 8 take their write buffers from.
 * Files and pipes get the UTF-8 bytes unchanged, at most FILE_WRITE_MAX at
 * a time (WriteFile takes a DWORD count).
 */
#define CONSOLE_CHUNK 8192u
#define FILE_WRITE_MAX (1u << 30)

/* The longest prefix of p[0..len) that ends between UTF-8 characters, at
 * most most bytes; at least one byte, so invalid input still moves on. */
static size_t utf8_cut(const unsigned char *p, size_t len, size_t most)
{
    size_t n = len < most ? len : most, cut = n;

    if (n == len)
        return n;
    /* p[cut] starts the next piece: back over continuation bytes
     * (10xxxxxx) to a character's first byte, at most 3 (a character is
     * at most 4 bytes). Not found (invalid input): cut at the limit. */
    while (cut > 0 && n - cut < 3 && (p[cut] & 0xC0u) == 0x80u)
        cut--;
    return cut == 0 || (p[cut] & 0xC0u) == 0x80u ? n : cut;
}

/* Set errno for a failed WriteFile or WriteConsoleW and return -1. */
static int write_failed(void)
{
    errno = dm_errno_from_win32(GetLastError());
    return -1;
}

static int write_console(HANDLE h, const unsigned char *p, size_t len)
{
    WCHAR wide[CONSOLE_CHUNK];

    while (len > 0) {
        size_t take = utf8_cut(p, len, CONSOLE_CHUNK);
        /* Invalid UTF-8 becomes U+FFFD (no MB_ERR_INVALID_CHARS): a name
         * the kernel logged oddly still prints. */
        int units = MultiByteToWideChar(CP_UTF8, 0, (const char *)p, (int)take,
                                        wide, (int)CONSOLE_CHUNK);
        DWORD done = 0;

        if (units <= 0)
            return write_failed();
        while (done < (DWORD)units) {
            DWORD want = (DWORD)units - done, n = 0;

            if (!dm_win32_io->write_console(h, wide + done, want, &n))
                return write_failed();
            if (n == 0) {
                errno = EIO;
                return -1;
            }
            /* A count above what was asked (microsoft/terminal#40) means
             * all of it: never step past the end. */
            done += n < want ? n : want;
        }
        p += take;
        len -= take;
    }
    return 0;
}

static int write_file(HANDLE h, const unsigned char *p, size_t len)
{
    while (len > 0) {
        DWORD want = (DWORD)(len < FILE_WRITE_MAX ? len : FILE_WRITE_MAX), n = 0;

        if (!dm_win32_io->write_file(h, p, want, &n, NULL))
            return write_failed();
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        if (n > want)
            n = want; /* never trust a count above the request */
        p += n;
        len -= n;
    }
    return 0;
}

/*
 * Through the OS handle, not the CRT's _write: _write turns ERROR_NO_DATA
 * 232, what a pipe whose reader exited answers, into errno EINVAL
 * (MicrosoftDocs/cpp-docs#3029), so `diskmon | findstr x` ended by Ctrl+C
 * would end in "Invalid argument". The one translator makes 232 and 109
 * EPIPE, as libuv does (PR #4562), and the printer ends quietly.
 */
int dm_write_all(FILE *f, const void *buf, size_t len)
{
    HANDLE h;

    if (fflush(f) != 0)
        return -1;
    h = handle_of(f);
    if (h == INVALID_HANDLE_VALUE || h == NULL)
        return fwrite(buf, 1, len, f) == len ? 0 : -1;
    if (console_of(f) != NULL)
        return write_console(h, buf, len);
    return write_file(h, buf, len);
}

int dm_terminal_size(FILE *f, int *rows, int *cols)
{
    HANDLE h = console_of(f);
    CONSOLE_SCREEN_BUFFER_INFO info;

    if (h == NULL || !GetConsoleScreenBufferInfo(h, &info))
        return DM_ENOTFOUND;
    /* The visible window, not the whole (scroll-back) buffer. */
    *rows = info.srWindow.Bottom - info.srWindow.Top + 1;
    *cols = info.srWindow.Right - info.srWindow.Left + 1;
    return *rows > 0 && *cols > 0 ? 0 : DM_ENOTFOUND;
}

/* ENABLE_VIRTUAL_TERMINAL_PROCESSING (wincon.h, Windows 10 1511 and later);
 * defined here for SDKs and mingw headers that predate it. */
#ifndef ENABLE_VIRTUAL_TERMINAL_PROCESSING
#define ENABLE_VIRTUAL_TERMINAL_PROCESSING 0x0004
#endif

/* The console mode before dm_terminal_enable_vt changed it: set before the
 * printer thread starts, restored by it at its end (--top), so no lock.
 * The code page is not touched: --top's screen, as every byte, goes out
 * through dm_write_all, as UTF-16 to a console. */
static DWORD saved_console_mode;
static int console_mode_changed;

int dm_terminal_enable_vt(FILE *f)
{
    HANDLE h = console_of(f);
    DWORD mode;

    if (h == NULL || !GetConsoleMode(h, &mode))
        return 0;
    if (mode & ENABLE_VIRTUAL_TERMINAL_PROCESSING)
        return 1;
    /* Older consoles refuse the flag: then --top draws plain blocks. */
    if (!SetConsoleMode(h, mode | ENABLE_VIRTUAL_TERMINAL_PROCESSING))
        return 0;
    saved_console_mode = mode;
    console_mode_changed = 1;
    return 1;
}

void dm_terminal_restore(FILE *f)
{
    HANDLE h = console_of(f);

    if (h != NULL && console_mode_changed)
        SetConsoleMode(h, saved_console_mode);
    console_mode_changed = 0;
}

void dm_stdio_init(void)
{
    /* Binary mode: "\n" stays "\n", so output is byte-identical to POSIX
     * builds. The console code page is left alone: the printer writes UTF-16
     * to a console (dm_write_all), so there is nothing to restore at exit,
     * also not on the _Exit path. */
    fflush(stdout);
    fflush(stderr);
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
}
