/*
 * win32.c - the platform layer on Windows: Win32 threads,
 * QueryPerformanceCounter, console control handler, the error translator,
 * waiting. The console and the output writer are in win32_console.c.
 *
 * Builds with MSVC and MinGW alike: no GNU extensions, only documented Win32
 * and CRT calls. The semantics follow posix.c; where Windows differs (console
 * close kills the process a few seconds after the handler runs) the
 * difference is explained where it is handled.
 */
#include <windows.h>
#include <errno.h>
#include <io.h>
#include <process.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "platform/platform.h"
#include "platform/win32_io.h"

/*
 * Threads. The start routine and its argument live in their own block that
 * the new thread frees, so a thread left running by dm_thread_join_timeout
 * never touches memory its creator has released.
 */
struct dm_thread {
    HANDLE handle;
};

struct thread_start {
    void (*fn)(void *);
    void *arg;
};

static unsigned __stdcall thread_main(void *p)
{
    struct thread_start start = *(struct thread_start *)p;

    free(p);
    start.fn(start.arg);
    return 0;
}

int dm_thread_start(dm_thread **out, void (*fn)(void *), void *arg)
{
    struct dm_thread *t = calloc(1, sizeof *t);
    struct thread_start *start = malloc(sizeof *start);
    uintptr_t h;

    if (t == NULL || start == NULL) {
        free(t);
        free(start);
        return DM_ENOMEM;
    }
    start->fn = fn;
    start->arg = arg;
    /* _beginthreadex, not CreateThread, so the CRT sets up its per-thread
     * state (errno, stdio locks) for the new thread. */
    h = _beginthreadex(NULL, 0, thread_main, start, 0, NULL);
    if (h == 0) {
        free(start);
        free(t);
        return DM_EOS;
    }
    t->handle = (HANDLE)h;
    *out = t;
    return 0;
}

void dm_thread_join(dm_thread *t)
{
    WaitForSingleObject(t->handle, INFINITE);
    CloseHandle(t->handle);
    free(t);
}

int dm_thread_join_timeout(dm_thread *t, unsigned ms)
{
    if (WaitForSingleObject(t->handle, ms) != WAIT_OBJECT_0)
        return DM_ESTOPPED; /* still running: the caller exits without it */
    CloseHandle(t->handle);
    free(t);
    return 0;
}

/* Ticks to nanoseconds without overflow: whole seconds, then the rest. */
static uint64_t ticks_to_ns(uint64_t ticks, uint64_t freq)
{
    return ticks / freq * 1000000000u + ticks % freq * 1000000000u / freq;
}

uint64_t dm_monotonic_ns(void)
{
    static volatile uint64_t freq; /* cached; QPF never changes after boot */
    LARGE_INTEGER now;
    uint64_t f = dm_atomic_load_relaxed(&freq);

    if (f == 0) {
        LARGE_INTEGER qpf;

        QueryPerformanceFrequency(&qpf);
        f = (uint64_t)qpf.QuadPart;
        dm_atomic_store_release(&freq, f);
    }
    QueryPerformanceCounter(&now);
    return ticks_to_ns((uint64_t)now.QuadPart, f);
}

/*
 * Wall clock. GetSystemTimePreciseAsFileTime (Windows 8+) has sub-microsecond
 * resolution; Windows 7 lacks it, so it is looked up at run time and
 * GetSystemTimeAsFileTime (timer-tick resolution) is the fallback.
 */
typedef VOID(WINAPI *get_time_fn)(LPFILETIME);

static get_time_fn wall_clock_fn(void)
{
    static get_time_fn fn;

    if (fn == NULL) {
        HMODULE k32 = GetModuleHandleW(L"kernel32.dll");
        FARPROC p = k32 != NULL
                        ? GetProcAddress(k32, "GetSystemTimePreciseAsFileTime")
                        : NULL;

        /* The detour through void (*)(void) is the documented way to tell
         * GCC's -Wcast-function-type that the cast is intended. */
        fn = p != NULL ? (get_time_fn)(void (*)(void))p : GetSystemTimeAsFileTime;
    }
    return fn;
}

uint64_t dm_wall_ns(void)
{
    /* FILETIME counts 100 ns units since 1601-01-01; 11644473600 s separate
     * that from 1970-01-01 (the Win32 FILETIME documentation). */
    const uint64_t epoch_diff = 116444736000000000u;
    FILETIME ft;
    uint64_t t;

    wall_clock_fn()(&ft);
    t = (uint64_t)ft.dwHighDateTime << 32 | ft.dwLowDateTime;
    return t < epoch_diff ? 0 : (t - epoch_diff) * 100u;
}

void dm_sleep_ms(unsigned ms)
{
    Sleep(ms);
}

void dm_yield(void)
{
    SwitchToThread();
}

/* FlushProcessWriteBuffers (Windows Vista): "flushes the write queue of
 * each processor that is running a thread of the current process", by an
 * interprocessor interrupt (Microsoft Learn, FlushProcessWriteBuffers). */
int dm_fence_all_threads(void)
{
    FlushProcessWriteBuffers();
    return 0;
}

/*
 * Console control. Windows runs the handler on a new thread. Ctrl+C and
 * Ctrl+Break only set the flag; the main thread sees it and stops the
 * source. Console close, logoff and shutdown kill the process as soon as the
 * handler returns (or after about 5 s if it does not), so for those the
 * handler waits for dm_interrupt_done(), which main calls once the ETW
 * session is stopped, to never leave the kernel session running behind us.
 * Every event returns TRUE: falling through to the default handler would
 * exit at once, with the session still running.
 */
static volatile LONG interrupted;
static HANDLE done_event; /* manual reset; set by dm_interrupt_done */

/* 4.5 s: inside the roughly 5 s Windows grants a CTRL_CLOSE_EVENT handler
 * (the HandlerRoutine documentation), so we return before being killed. */
#define DM_CLOSE_WAIT_MS 4500

/* *slot's manual-reset event, created by the first thread that asks;
 * NULL when none could be made. */
static HANDLE lazy_event(HANDLE volatile *slot)
{
    if (*slot == NULL) {
        HANDLE h = CreateEventW(NULL, TRUE, FALSE, NULL);

        if (h != NULL &&
            InterlockedCompareExchangePointer((PVOID volatile *)slot, h, NULL) != NULL)
            CloseHandle(h); /* another thread won the race */
    }
    return *slot;
}

static HANDLE get_done_event(void)
{
    return lazy_event(&done_event);
}

static void interrupt_wake(void); /* with the waiters, at the end */

static BOOL WINAPI on_console_event(DWORD type)
{
    InterlockedExchange(&interrupted, 1);
    interrupt_wake();
    switch (type) {
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT: {
        HANDLE ev = get_done_event();

        if (ev != NULL)
            WaitForSingleObject(ev, DM_CLOSE_WAIT_MS);
        return TRUE;
    }
    default:
        return TRUE;
    }
}

void dm_interrupt_install(void)
{
    get_done_event();
    SetConsoleCtrlHandler(on_console_event, TRUE);
}

int dm_interrupted(void)
{
    return InterlockedCompareExchange(&interrupted, 0, 0) != 0;
}

void dm_interrupt_done(void)
{
    HANDLE ev = get_done_event();

    if (ev != NULL)
        SetEvent(ev);
}

void dm_interrupt_raise(void)
{
    InterlockedExchange(&interrupted, 1);
    interrupt_wake();
}

static void interrupt_unwake(void);

void dm_interrupt_clear(void)
{
    InterlockedExchange(&interrupted, 0);
    interrupt_unwake();
    if (done_event != NULL)
        ResetEvent(done_event);
}

/* ---- errors: the one Win32 translator ------------------------------------ */

/* winerror.h values; the generic meaning only (etw_session.c adds advice
 * for the ETW calls). */
#define WIN_ACCESS_DENIED 5u
#define WIN_NOT_ENOUGH_MEMORY 8u
#define WIN_OUTOFMEMORY 14u
#define WIN_BROKEN_PIPE 109u  /* the documented "pipe has been ended" */
#define WIN_DISK_FULL 112u
#define WIN_NO_DATA 232u      /* "the pipe is being closed": a write after the
                               * reader exited (etw-facts.md s.8) */
#define WIN_PIPE_NOT_CONNECTED 233u /* "no process is on the other end":
                               * what Wine 8 answers for a Unix pipe whose
                               * reader exited (tests/scripts/windows.sh);
                               * libuv makes it EPIPE too */
#define WIN_ALREADY_EXISTS 183u
#define WIN_WMI_INSTANCE_NOT_FOUND 4201u

int dm_err_from_win32(unsigned long code)
{
    switch (code) {
    case 0:
        return 0;
    case WIN_ACCESS_DENIED:
        return DM_EACCESS;
    case WIN_ALREADY_EXISTS:
        return DM_EEXISTS;
    case WIN_WMI_INSTANCE_NOT_FOUND:
        return DM_ENOTFOUND;
    case WIN_NOT_ENOUGH_MEMORY:
    case WIN_OUTOFMEMORY:
        return DM_ENOMEM;
    case WIN_BROKEN_PIPE:
    case WIN_NO_DATA:
    case WIN_PIPE_NOT_CONNECTED:
        return DM_EIO;
    default:
        return DM_EOS;
    }
}

int dm_errno_from_win32(unsigned long code)
{
    switch (code) {
    case 0:
        return 0;
    case WIN_BROKEN_PIPE:
    case WIN_NO_DATA:
    case WIN_PIPE_NOT_CONNECTED:
        return EPIPE; /* the reader went away: the quiet end of output */
    case WIN_ACCESS_DENIED:
        return EACCES;
    case WIN_NOT_ENOUGH_MEMORY:
    case WIN_OUTOFMEMORY:
        return ENOMEM;
    case WIN_DISK_FULL:
        return ENOSPC;
    default:
        return EIO;
    }
}

void dm_win32_strerror(unsigned long code, char *buf, size_t len)
{
    WCHAR wide[512];
    DWORD n;
    int m;

    if (len == 0)
        return;
    n = FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                       NULL, (DWORD)code, 0, wide,
                       (DWORD)(sizeof wide / sizeof wide[0]), NULL);
    while (n > 0 && (wide[n - 1] == L'\r' || wide[n - 1] == L'\n' ||
                     wide[n - 1] == L' ' || wide[n - 1] == L'.'))
        n--;
    m = n > 0 ? WideCharToMultiByte(CP_UTF8, 0, wide, (int)n, buf,
                                    (int)(len - 1), NULL, NULL)
              : 0;
    if (m <= 0) {
        snprintf(buf, len, "unknown error");
        return;
    }
    buf[m] = '\0';
}

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

/* ---- waiting (platform.h "dm_waiter") ------------------------------------
 * A waiter is an auto-reset event: SetEvent from any thread, the console
 * handler's thread included. Ctrl+C sets one manual-reset event that every
 * waiter made with on_interrupt also waits on. An output whose reader went
 * away is not watched: Windows has no poll for a pipe's far end, and the
 * next write fails with ERROR_NO_DATA as before. */

struct dm_waiter {
    HANDLE event;
    int on_interrupt;
};

static HANDLE interrupt_event; /* manual reset; set while interrupted */

static HANDLE get_interrupt_event(void)
{
    return lazy_event(&interrupt_event);
}

static void interrupt_wake(void)
{
    HANDLE ev = get_interrupt_event();

    if (ev != NULL)
        SetEvent(ev);
}

static void interrupt_unwake(void)
{
    if (interrupt_event != NULL)
        ResetEvent(interrupt_event);
}

dm_waiter *dm_waiter_create(int on_interrupt)
{
    dm_waiter *w = calloc(1, sizeof *w);

    if (w == NULL)
        return NULL;
    w->event = CreateEventW(NULL, FALSE, FALSE, NULL);
    if (w->event == NULL) {
        free(w);
        return NULL;
    }
    w->on_interrupt = on_interrupt;
    if (on_interrupt)
        get_interrupt_event();
    return w;
}

void dm_waiter_destroy(dm_waiter *w)
{
    if (w == NULL)
        return;
    CloseHandle(w->event);
    free(w);
}

void dm_waiter_wake(dm_waiter *w)
{
    SetEvent(w->event);
}

int dm_waiter_wait(dm_waiter *w, unsigned ms, FILE *watch)
{
    HANDLE h[2];
    DWORD n = 0, rc;

    (void)watch;
    h[n++] = w->event;
    if (w->on_interrupt && interrupt_event != NULL)
        h[n++] = interrupt_event;
    rc = WaitForMultipleObjects(n, h, FALSE, ms == DM_WAIT_FOREVER ? INFINITE : ms);
    return rc == WAIT_TIMEOUT || rc == WAIT_FAILED ? 0 : 1;
}
