/*
 * etw_session.c - the kernel trace session: properties, start with the
 * already-running / --force / Windows 7 / private-logger rules, loss
 * counters, stop, --cleanup, and the Win32 error translator.
 *
 * Every ETW call goes through the dm_etw table (etw_api.h) so the tests can
 * replace Windows with a fake. Facts: ../shared/docs/etw-facts.md s.1.
 */
#include <stdio.h>
#include <string.h>

#include "diskmon.h"
#include "etw/etw_session.h"
#include "platform/platform.h"

/* {9e814aad-3204-11d2-9a82-006008a86939}, etw-facts.md s.1 [MS-wnode]. */
const GUID dm_etw_system_trace_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

/* diskmon's own, generated once for this project; never reuse elsewhere. */
const GUID dm_etw_private_guid = {
    0x98177c6b, 0x6459, 0x4570, {0x9c, 0xca, 0x91, 0xc5, 0xa0, 0xf5, 0xe9, 0xac}};

int dm_etw_elevated_override = -1;

/* Win32 codes the session logic tells apart (winerror.h, etw-facts.md s.1). */
#define DM_WIN_ACCESS_DENIED 5u
#define DM_WIN_ALREADY_EXISTS 183u
#define DM_WIN_MORE_DATA 234u         /* STOP: stopped, name buffer short */
#define DM_WIN_NO_SYSTEM_RESOURCES 1450u /* no free logger slot */
#define DM_WIN_ACTIVE_CONNECTIONS 2402u  /* STOP: the session is already stopping */
#define DM_WIN_INSTANCE_NOT_FOUND 4201u  /* ERROR_WMI_INSTANCE_NOT_FOUND */

/* TraceSetInformation's TraceSystemTraceEnableFlagsInfo takes a
 * PERFINFO_GROUPMASK: 8 ULONGs, the first being the classic EnableFlags
 * ([MS-tsi], etw-facts.md s.1; phnt ntwmi.h). mingw-w64 does not define the
 * type, so diskmon spells out its size. */
#define DM_PERFINFO_GROUPMASK_ULONGS 8

/*
 * EVENT_TRACE_PROPERTIES followed by room for the two names ControlTrace may
 * write back (1024 characters each, the documented maximum, [MS-props]).
 * The struct is 0x78 bytes on x86 and x64 (etw-facts.md s.0), a multiple of
 * 8, so logger_name starts right after it; offsetof says so exactly.
 */
struct props_buf {
    EVENT_TRACE_PROPERTIES p;
    WCHAR logger_name[1024];
    WCHAR log_file_name[1024];
};

/*
 * Buffer settings. A disk completion record is 72 bytes in the buffer
 * (16-byte PERFINFO header + 52-byte DiskIo v3 payload, 8-aligned,
 * etw-facts.md s.3/s.4); an Init record 48. A fast NVMe disk doing 200,000
 * I/O per second therefore writes about 15 MB/s of DiskIo records.
 *  - 64 KB buffers: a buffer fills in a few milliseconds under load, so
 *    events reach us promptly, and per-buffer overhead stays small.
 *  - MinimumBuffers 2 per CPU (ETW's documented floor, [MS-props]) plus 16
 *    spare, allocated up front so a burst at start finds buffers ready.
 *  - MaximumBuffers = minimum + 240: about 16 MB that ETW may grow to (from
 *    non-paged pool, only when needed), which holds roughly one second of
 *    that load while our consumer thread is descheduled. Our callback never
 *    blocks (a full ring drops and counts), so ETW only has to ride out
 *    scheduling delays, not a slow printer.
 *  - FlushTimer DM_ETW_FLUSH_MS in milliseconds (EVENT_TRACE_USE_MS_FLUSH_
 *    TIMER): at low rates a partly filled buffer is still delivered within
 *    that period. etw_session.h explains the figure and the latency bound.
 *  - Per-processor buffers (no EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING):
 *    Microsoft's Logging Mode Constants page advises against that mode above
 *    about 1,000 events per second, and disk completions alone come far
 *    faster (etw-facts.md s.7; PerfView made it opt-in, PR #1412). So each
 *    CPU fills its own buffers, and buffers of different CPUs reach us in
 *    any order: a completion can arrive before its thread's DCStart or its
 *    Init. etw_source.c puts records back in time order before decoding.
 */
#define DM_ETW_BUFFER_KB 64u
#define DM_ETW_SPARE_BUFFERS 16u
#define DM_ETW_GROWTH_BUFFERS 240u
/* Wnode.ClientContext 1: QueryPerformanceCounter timestamps [MS-wnode]. */
#define DM_ETW_CLOCK_QPC 1u

static const WCHAR *logger_name(enum dm_etw_logger logger)
{
    return logger == DM_ETW_PRIVATE_LOGGER ? DM_ETW_PRIVATE_NAME
                                           : KERNEL_LOGGER_NAMEW;
}

static const char *logger_label(enum dm_etw_logger logger)
{
    return logger == DM_ETW_PRIVATE_LOGGER ? "the trace session \"diskmon\""
                                           : "the NT Kernel Logger";
}

static const GUID *logger_guid(enum dm_etw_logger logger)
{
    return logger == DM_ETW_PRIVATE_LOGGER ? &dm_etw_private_guid
                                           : &dm_etw_system_trace_guid;
}

/* Properties for ControlTrace (QUERY, STOP): size, GUID and name room. */
static void init_control_props(struct props_buf *b, enum dm_etw_logger logger)
{
    memset(b, 0, sizeof *b);
    b->p.Wnode.BufferSize = (ULONG)sizeof *b;
    b->p.Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    b->p.Wnode.Guid = *logger_guid(logger);
    b->p.LoggerNameOffset = (ULONG)offsetof(struct props_buf, logger_name);
    b->p.LogFileNameOffset = (ULONG)offsetof(struct props_buf, log_file_name);
}

static ULONG cpu_count(void)
{
    SYSTEM_INFO si;

    GetSystemInfo(&si);
    return si.dwNumberOfProcessors > 0 ? si.dwNumberOfProcessors : 1;
}

/* Properties for StartTrace: real time, no log file (LogFileNameOffset 0). */
static void init_start_props(struct props_buf *b, enum dm_etw_logger logger,
                             ULONG enable_flags)
{
    init_control_props(b, logger);
    b->p.LogFileNameOffset = 0;
    b->p.Wnode.ClientContext = DM_ETW_CLOCK_QPC;
    b->p.BufferSize = DM_ETW_BUFFER_KB;
    b->p.MinimumBuffers = 2 * cpu_count() + DM_ETW_SPARE_BUFFERS;
    b->p.MaximumBuffers = b->p.MinimumBuffers + DM_ETW_GROWTH_BUFFERS;
    b->p.FlushTimer = DM_ETW_FLUSH_MS;
    b->p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_USE_MS_FLUSH_TIMER;
    if (logger == DM_ETW_PRIVATE_LOGGER)
        b->p.LogFileMode |= EVENT_TRACE_SYSTEM_LOGGER_MODE;
    b->p.EnableFlags = enable_flags;
}

int dm_etw_error(unsigned long code, const char *what, char *msg, size_t len)
{
    char text[256];
    const char *advice = "";
    int err;

    dm_win32_strerror(code, text, sizeof text);
    /* The generic meaning from the platform's one translator; the session
     * adds advice for the codes whose remedy it knows. */
    err = dm_err_from_win32(code);
    if (err == 0)
        err = DM_EOS; /* a failure reported with ERROR_SUCCESS: still one */
    switch (code) {
    case DM_WIN_ACCESS_DENIED:
        /* Advice to elevate only helps who is not elevated already. */
        advice = dm_etw_is_elevated()
                     ? ": diskmon already runs elevated, so a security policy "
                       "or a protected process denies it"
                     : ": only administrators can trace the kernel; run "
                       "diskmon from an elevated prompt (Run as administrator)";
        break;
    case DM_WIN_NO_SYSTEM_RESOURCES:
        advice = ": all trace sessions are in use; list them with "
                 "'logman query -ets' and stop one you do not need with "
                 "'logman stop NAME -ets'";
        break;
    default:
        break;
    }
    if (msg != NULL && len > 0)
        snprintf(msg, len, "%s failed: error %lu (%s)%s", what, code, text,
                 advice);
    return err;
}

int dm_etw_is_win8_or_later(void)
{
    OSVERSIONINFOEXW v;
    DWORDLONG mask = 0;

    memset(&v, 0, sizeof v);
    v.dwOSVersionInfoSize = sizeof v;
    v.dwMajorVersion = 6; /* Windows 8 is NT 6.2 */
    v.dwMinorVersion = 2;
    mask = VerSetConditionMask(mask, VER_MAJORVERSION, VER_GREATER_EQUAL);
    mask = VerSetConditionMask(mask, VER_MINORVERSION, VER_GREATER_EQUAL);
    return VerifyVersionInfoW(&v, VER_MAJORVERSION | VER_MINORVERSION, mask) != 0;
}

int dm_etw_is_elevated(void)
{
    TOKEN_ELEVATION elevation;
    HANDLE token;
    DWORD got = 0;
    BOOL ok;

    if (dm_etw_elevated_override >= 0)
        return dm_etw_elevated_override;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return 0;
    ok = GetTokenInformation(token, TokenElevation, &elevation, sizeof elevation, &got);
    CloseHandle(token);
    return ok && elevation.TokenIsElevated != 0;
}

static ULONG start_logger(struct dm_etw_session *s, enum dm_etw_logger logger)
{
    struct props_buf b;
    TRACEHANDLE h = 0;
    ULONG rc;

    init_start_props(&b, logger, s->enable_flags);
    rc = dm_etw->start_trace(&h, logger_name(logger), &b.p);
    if (rc == ERROR_SUCCESS) {
        s->logger = logger;
        s->handle = h;
        s->active = 1;
    }
    return rc;
}

/* --force: stop whoever runs the NT Kernel Logger. Not running is fine. */
static int stop_kernel_logger(struct dm_etw_session *s, char *msg, size_t len)
{
    struct props_buf b;
    ULONG rc;

    init_control_props(&b, DM_ETW_KERNEL_LOGGER);
    rc = dm_etw->control_trace(0, KERNEL_LOGGER_NAMEW, &b.p,
                               EVENT_TRACE_CONTROL_STOP);
    /* 2402 ERROR_ACTIVE_CONNECTIONS: it is stopping already, which is what
     * --force wants ([MS-ctl], etw-facts.md s.7). */
    if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA ||
        rc == DM_WIN_ACTIVE_CONNECTIONS) {
        snprintf(s->notice, sizeof s->notice,
                 "diskmon: --force: stopped the running NT Kernel Logger "
                 "session; the program that started it gets no more events\n");
        return 0;
    }
    if (rc == DM_WIN_INSTANCE_NOT_FOUND)
        return 0;
    if (rc == DM_WIN_ACCESS_DENIED && dm_etw_is_elevated()) {
        /* An administrator may stop any ordinary session, so a refusal means
         * the session's owner is protected (a protected-process-light
         * anti-malware or EDR service, etw-facts.md s.7). Elevating again
         * would change nothing. */
        snprintf(msg, len,
                 "--force: the running NT Kernel Logger belongs to a protected "
                 "process (typically an anti-malware or EDR service), and "
                 "Windows does not let diskmon stop it (error 5, access "
                 "denied, although diskmon runs elevated). Run diskmon without "
                 "--force to use a private kernel session instead, or stop "
                 "that product");
        return DM_EACCESS;
    }
    return dm_etw_error(rc, "stopping the running NT Kernel Logger (--force)",
                        msg, len);
}

/*
 * Windows 8+: make the kernel log a file rundown now, so files opened before
 * diskmon started are named from the first I/O on. During a session the
 * kernel names files only as they are opened (FileCreate) and closed
 * (FileDelete); FileRundown, the names of files already open, comes only
 * when a session stops (etw-facts.md s.7; both sample traces show it).
 * Setting the session's group mask to all zeros and then back to the real
 * flags with TraceSetInformation(TraceSystemTraceEnableFlagsInfo) makes the
 * kernel emit its rundown again: fibratus does exactly this right after
 * StartTrace (internal/etw/trace.go, "the first call ... with empty group
 * masks activates rundown events"), for the same file-object snapshot.
 * diskmon prefers it to System Informer's alternative (etwmon.c: a second,
 * short session of the kernel rundown provider) because it needs no second
 * logger slot, of which Windows has only 8 (etw-facts.md s.1), and its
 * rundown lands in the very stream diskmon reads, in time order.
 * Returns 0 (done, or not possible: a note), or a negative dm_err when the
 * session was left without its flags (the second call failed).
 */
static int force_file_rundown(struct dm_etw_session *s, char *msg, size_t len)
{
    ULONG mask[DM_PERFINFO_GROUPMASK_ULONGS];
    ULONG rc;

    memset(mask, 0, sizeof mask);
    rc = dm_etw->set_information(s->handle, TraceSystemTraceEnableFlagsInfo, mask,
                                 (ULONG)sizeof mask);
    if (rc != ERROR_SUCCESS) {
        /* The session still has the flags StartTrace gave it: diskmon works,
         * only files opened before it started stay unnamed until reopened. */
        snprintf(s->notice + strlen(s->notice), sizeof s->notice - strlen(s->notice),
                 "diskmon: note: could not ask Windows for the names of files "
                 "already open (TraceSetInformation error %lu); their I/O "
                 "shows no file name until they are opened again\n",
                 (unsigned long)rc);
        return 0;
    }
    mask[0] = s->enable_flags;
    rc = dm_etw->set_information(s->handle, TraceSystemTraceEnableFlagsInfo, mask,
                                 (ULONG)sizeof mask);
    if (rc != ERROR_SUCCESS)
        return dm_etw_error(rc,
                            "re-enabling the kernel events after the file "
                            "rundown (TraceSetInformation)",
                            msg, len);
    s->rundown_forced = 1;
    return 0;
}

/* A Windows 8+ session has just started: force the file rundown. If that
 * left the session without its flags, stop it again. */
static int started(struct dm_etw_session *s, char *msg, size_t len)
{
    int err = force_file_rundown(s, msg, len);

    if (err < 0)
        dm_etw_session_stop(s, NULL, 0);
    return err;
}

int dm_etw_session_start(struct dm_etw_session *s, int force, int win8,
                         char *msg, size_t len)
{
    ULONG rc;
    int err;

    memset(s, 0, sizeof *s);
    InitializeCriticalSection(&s->lock);
    s->lock_ready = 1;
    /* Process and thread events name the process behind each I/O; file
     * names need DISK_FILE_IO. Windows 7's DiskIo v2 completions lack
     * IssuingThreadId, so there the Init events (full header with the
     * thread) are needed to attribute I/O; v3 (Windows 8+) completions carry
     * it, and Init would only double the event rate (etw-facts.md s.1, s.3). */
    s->enable_flags = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD |
                      EVENT_TRACE_FLAG_DISK_IO | EVENT_TRACE_FLAG_DISK_FILE_IO;
    if (!win8)
        s->enable_flags |= EVENT_TRACE_FLAG_DISK_IO_INIT;

    if (force) {
        err = stop_kernel_logger(s, msg, len);
        if (err < 0)
            return err;
    }
    rc = start_logger(s, DM_ETW_KERNEL_LOGGER);
    /* Just after --force's STOP the old session may still be winding down
     * and StartTrace says 183 for a moment; wait and retry, bounded
     * (etw_session.h, PerfView TraceEventSession.cs). */
    for (unsigned tries = 1; force && rc == DM_WIN_ALREADY_EXISTS &&
                             tries < DM_ETW_RESTART_TRIES;
         tries++) {
        Sleep(DM_ETW_RESTART_WAIT_MS);
        rc = start_logger(s, DM_ETW_KERNEL_LOGGER);
    }
    if (rc == ERROR_SUCCESS)
        return win8 ? started(s, msg, len) : 0;
    if (rc != DM_WIN_ALREADY_EXISTS)
        return dm_etw_error(rc, "starting the NT Kernel Logger (StartTraceW)",
                            msg, len);
    if (force) {
        snprintf(msg, len,
                 "the NT Kernel Logger was still running %u ms after --force "
                 "stopped it: another program restarts it; close that "
                 "program and retry",
                 DM_ETW_RESTART_WAIT_MS * DM_ETW_RESTART_TRIES);
        return DM_EEXISTS;
    }
    if (!win8) {
        snprintf(msg, len,
                 "the NT Kernel Logger is already running (another tool such "
                 "as xperf, Process Monitor or perfmon uses it, or a diskmon "
                 "that did not exit cleanly). Windows 7 has no other kernel "
                 "session: close that tool, or run diskmon --force to stop "
                 "the running session (that tool then gets no more events)");
        return DM_EEXISTS;
    }
    /* Windows 8+: leave the other tool's session alone and use our own. */
    rc = start_logger(s, DM_ETW_PRIVATE_LOGGER);
    if (rc == ERROR_SUCCESS) {
        snprintf(s->notice, sizeof s->notice,
                 "diskmon: the NT Kernel Logger is in use by another program; "
                 "using a private kernel session \"diskmon\" instead (run "
                 "with --force to take over the NT Kernel Logger)\n");
        return started(s, msg, len);
    }
    if (rc == DM_WIN_ALREADY_EXISTS) {
        snprintf(msg, len,
                 "the NT Kernel Logger is in use by another program, and a "
                 "trace session named \"diskmon\" is already running too: "
                 "another diskmon is running, or one did not exit cleanly "
                 "(stop it with diskmon --cleanup), or run diskmon --force to "
                 "take over the NT Kernel Logger");
        return DM_EEXISTS;
    }
    if (rc == DM_WIN_NO_SYSTEM_RESOURCES) {
        /* Windows 8+ runs at most 8 system loggers, 2 of them reserved for
         * the NT Kernel Logger and the Circular Kernel Context Logger
         * ([MS-stp], etw-facts.md s.1 and s.7): 1450 here means those are
         * all taken, not the general limit of 64 sessions. */
        snprintf(msg, len,
                 "the NT Kernel Logger is in use by another program, and "
                 "starting a private kernel session \"diskmon\" failed with "
                 "error 1450: Windows allows only 8 kernel (system logger) "
                 "sessions, and all are in use. Tools that commonly hold one: "
                 "Process Monitor, Windows Performance Recorder or xperf, "
                 "Sysmon, Microsoft Defender or another anti-malware/EDR "
                 "agent, PerfView. List the running sessions with 'logman "
                 "query -ets', close a tool you do not need, or run diskmon "
                 "--force to take over the NT Kernel Logger");
        return DM_EOS;
    }
    return dm_etw_error(rc,
                        "the NT Kernel Logger is in use by another program; "
                        "starting a private kernel session \"diskmon\" "
                        "(StartTraceW)",
                        msg, len);
}

const WCHAR *dm_etw_session_name(const struct dm_etw_session *s)
{
    return logger_name(s->logger);
}

int dm_etw_session_stop(struct dm_etw_session *s, char *msg, size_t len)
{
    struct props_buf b;
    ULONG rc;
    int err = 0;

    if (!s->lock_ready)
        return 0;
    EnterCriticalSection(&s->lock);
    s->stop_requested = 1;
    if (s->active) {
        const WCHAR *name = logger_name(s->logger);

        /* QUERY first: its counters are what the session saw while
         * running. STOP fills the same fields with the final values
         * [MS-ctl]; keep the larger of each. */
        init_control_props(&b, s->logger);
        if (dm_etw->control_trace(s->handle, name, &b.p,
                                  EVENT_TRACE_CONTROL_QUERY) == ERROR_SUCCESS) {
            s->events_lost = dm_etw_max_u64(s->events_lost, b.p.EventsLost);
            s->rt_buffers_lost = dm_etw_max_u64(s->rt_buffers_lost, b.p.RealTimeBuffersLost);
        }
        init_control_props(&b, s->logger);
        rc = dm_etw->control_trace(s->handle, name, &b.p, EVENT_TRACE_CONTROL_STOP);
        if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA) {
            s->events_lost = dm_etw_max_u64(s->events_lost, b.p.EventsLost);
            s->rt_buffers_lost = dm_etw_max_u64(s->rt_buffers_lost, b.p.RealTimeBuffersLost);
            s->active = 0;
        } else if (rc == DM_WIN_INSTANCE_NOT_FOUND) {
            s->active = 0; /* someone else stopped it already */
        } else {
            char what[96];

            snprintf(what, sizeof what, "stopping %s (ControlTraceW)",
                     logger_label(s->logger));
            err = dm_etw_error(rc, what, msg, len);
        }
    }
    LeaveCriticalSection(&s->lock);
    return err;
}

int dm_etw_session_ended_outside(struct dm_etw_session *s)
{
    int outside = 0;

    if (!s->lock_ready)
        return 0;
    EnterCriticalSection(&s->lock);
    if (!s->stop_requested && s->active) {
        s->active = 0; /* not ours any more: never QUERY or STOP it */
        outside = 1;
    }
    LeaveCriticalSection(&s->lock);
    return outside;
}

void dm_etw_session_free(struct dm_etw_session *s)
{
    if (!s->lock_ready)
        return;
    dm_etw_session_stop(s, NULL, 0);
    DeleteCriticalSection(&s->lock);
    s->lock_ready = 0;
}

int dm_etw_cleanup(char *msg, size_t len)
{
    struct props_buf b;
    ULONG rc;

    init_control_props(&b, DM_ETW_PRIVATE_LOGGER);
    rc = dm_etw->control_trace(0, DM_ETW_PRIVATE_NAME, &b.p,
                               EVENT_TRACE_CONTROL_STOP);
    if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA) {
        snprintf(msg, len, "stopped the leftover trace session \"diskmon\"");
        return 0;
    }
    if (rc == DM_WIN_INSTANCE_NOT_FOUND) {
        snprintf(msg, len,
                 "no trace session \"diskmon\" was running; nothing to clean "
                 "up (a leftover NT Kernel Logger is stopped by diskmon "
                 "--force)");
        return DM_ENOTFOUND;
    }
    return dm_etw_error(rc, "stopping the trace session \"diskmon\" (--cleanup)",
                        msg, len);
}
