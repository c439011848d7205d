/*
 * win32_io.h - the console and file calls behind dm_write_all on Windows
 * (win32_console.c), behind one table, as the ETW calls are (etw/etw_api.h).
 *
 * dm_win32_io points at the real kernel32 functions. Windows-only unit tests
 * point it at fakes to play a reader that went away (WriteFile failing with
 * ERROR_NO_DATA 232 or ERROR_BROKEN_PIPE 109) and consoles that report odd
 * counts, none of which Wine can be made to produce on demand.
 */
#ifndef DM_WIN32_IO_H
#define DM_WIN32_IO_H

#include <windows.h>

struct dm_win32_io {
    BOOL(WINAPI *write_file)(HANDLE h, LPCVOID buf, DWORD len, LPDWORD written,
                             LPOVERLAPPED ov);
    BOOL(WINAPI *write_console)(HANDLE h, const WCHAR *buf, DWORD len,
                                LPDWORD written);
    /* Whether h is a console: GetConsoleMode succeeds only for one. */
    BOOL(WINAPI *get_console_mode)(HANDLE h, LPDWORD mode);
};

/* The table in use; the real one unless a test replaced it. */
extern const struct dm_win32_io *dm_win32_io;

/* 1 under Wine, whose ntdll exports wine_get_version (Windows' does not):
 * the fence falls back where Wine's FlushProcessWriteBuffers is a stub,
 * and the ETW source explains a failure by it (win32.c). Once per process. */
int dm_win32_under_wine(void);
extern const struct dm_win32_io dm_win32_io_real;

/* The errno value for a Win32 error code, from the same translator as
 * dm_err_from_win32: ERROR_NO_DATA and ERROR_BROKEN_PIPE are EPIPE. */
int dm_errno_from_win32(unsigned long code);

#endif /* DM_WIN32_IO_H */
