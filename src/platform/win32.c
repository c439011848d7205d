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
#include <malloc.h> /* _aligned_malloc */
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

void *dm_aligned_alloc(size_t align, size_t size)
{
    return _aligned_malloc(size, align);
}

void dm_aligned_free(void *p)
{
    _aligned_free(p);
}

uint64_t dm_monotonic_ns(void)
{
    static dm_atomic_u64 freq; /* cached; QPF never changes after boot */
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
 * interprocessor interrupt (Microsoft Learn, FlushProcessWriteBuffers).
 * Wine (8.0) has it as a stub that does nothing ("fixme:virtual:
 * NtFlushProcessWriteBuffers stub"), so there -1: the ring then fences
 * every push itself. */
int dm_win32_under_wine(void)
{
    static volatile int state; /* 0 not known yet, 1 Wine, -1 Windows */
    int s = dm_atomic_load_int(&state);

    if (s == 0) {
        HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");

        s = ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL ? 1 : -1;
        dm_atomic_store_int(&state, s);
    }
    return s > 0;
}

int dm_fence_all_threads(void)
{
    if (dm_win32_under_wine())
        return -1;
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
                               * reader exited (docs/etw.md §8) */
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
