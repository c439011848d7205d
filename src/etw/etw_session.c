/*
 * etw_session.c - the kernel trace session: start with the
 * already-running / --force / Windows 7 / private-logger rules, the check
 * of what Windows set up (and the flush fallback), the start rundown, the
 * instance check before every STOP and FLUSH, loss counters and stop. The
 * sessions' names, properties and the Win32 error translator are in
 * etw_logger.c; --cleanup is in etw_cleanup.c.
 *
 * Every ETW call goes through the dm_etw table (etw_api.h) so the tests can
 * replace Windows with a fake (tests/unit/etw_fake.c).
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "diskmon.h"
#include "etw/etw_internal.h"
#include "etw/etw_session.h"
#include "platform/platform.h"

/* KernelRundownGuid {3b9c9951-3480-4220-9377-9c8e5184f5cd} and its
 * keyword KERNEL_FILE_KEYWORD_FILENAME 0x10 (System Informer
 * plugins/ExtendedTools/etwmon.c). */
static const GUID kernel_rundown_guid = {
    0x3b9c9951, 0x3480, 0x4220, {0x93, 0x77, 0x9c, 0x8e, 0x51, 0x84, 0xf5, 0xcd}};
#define DM_KERNEL_FILE_KEYWORD_FILENAME 0x10u

/* TraceSetInformation's TraceSystemTraceEnableFlagsInfo takes a
 * PERFINFO_GROUPMASK: 8 ULONGs, the first being the classic EnableFlags
 * (the TraceSetInformation page; phnt ntwmi.h). mingw-w64 does not define
 * the type, so diskmon spells out its size. */
#define DM_PERFINFO_GROUPMASK_ULONGS 8

static const char *logger_label(enum dm_etw_logger logger)
{
    return logger == DM_ETW_PRIVATE_LOGGER ? "the trace session \"diskmon\""
                                           : "the NT Kernel Logger";
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

/* A QUERY by handle (InstanceName NULL: the handle decides, the
 * ControlTraceW page) into q. */
static void query_by_handle(struct dm_etw_session *s, struct dm_etw_props *b,
                            struct dm_etw_queried *q)
{
    dm_etw_control_props(b, s->logger);
    memset(q, 0, sizeof *q);
    q->rc = dm_etw->control_trace(s->handle, NULL, &b->p, EVENT_TRACE_CONTROL_QUERY);
    if (q->rc != ERROR_SUCCESS)
        return;
    q->log_file_mode = b->p.LogFileMode;
    q->flush_timer = b->p.FlushTimer;
    q->buffer_size = b->p.BufferSize;
    q->minimum_buffers = b->p.MinimumBuffers;
    q->maximum_buffers = b->p.MaximumBuffers;
    q->client_context = b->p.Wnode.ClientContext;
    q->logger_thread_id = (ULONG_PTR)b->p.LoggerThreadId;
}

/*
 * Right after StartTrace: what did Windows set up? The QUERY (by handle,
 * our own session a moment old) gives the settings and the LoggerThreadId
 * that identifies this instance (EVENT_TRACE_PROPERTIES: "on output, the
 * thread identifier for the event tracing session"). The millisecond flush
 * timer is kept only when the flag and FlushTimer 100 both read back. Else
 * the flush fallback: FLUSH by handle every DM_ETW_FLUSH_MS (the source's
 * releaser), and FlushTimer set to the documented DM_ETW_FALLBACK_FLUSH_S
 * by an UPDATE, but only where the unit is known to be seconds: the flag is
 * gone from LogFileMode. With the flag still there 1 could mean 1 ms; after
 * a failed QUERY nothing is known; FLUSH does the work in both.
 * The UPDATE names what stays, as the ControlTraceW page asks: EnableFlags
 * (0 would disable every kernel provider), LogFileMode real time (0 would
 * turn real-time delivery off).
 */
static void check_started(struct dm_etw_session *s)
{
    struct dm_etw_props b;
    const struct dm_etw_queried *q = &s->queried;
    int flag_kept, timer_kept;

    query_by_handle(s, &b, &s->queried);
    if (q->rc == ERROR_SUCCESS) {
        s->identity_known = 1;
        s->logger_thread_id = q->logger_thread_id;
    }
    flag_kept = q->rc == ERROR_SUCCESS && (q->log_file_mode & EVENT_TRACE_USE_MS_FLUSH_TIMER);
    timer_kept = q->rc == ERROR_SUCCESS && q->flush_timer == DM_ETW_FLUSH_MS;
    s->flush_by_handle = !(flag_kept && timer_kept);
    if (!s->flush_by_handle || q->rc != ERROR_SUCCESS || flag_kept ||
        q->flush_timer == DM_ETW_FALLBACK_FLUSH_S)
        return;
    dm_etw_control_props(&b, s->logger);
    b.p.FlushTimer = DM_ETW_FALLBACK_FLUSH_S;
    b.p.EnableFlags = s->enable_flags;
    b.p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE;
    s->flush_timer_update_rc =
        dm_etw->control_trace(s->handle, NULL, &b.p, EVENT_TRACE_CONTROL_UPDATE);
}

static ULONG start_logger(struct dm_etw_session *s, enum dm_etw_logger logger)
{
    struct dm_etw_props b;
    TRACEHANDLE h = 0;
    ULONG rc;

    dm_etw_start_props(&b, logger, s->enable_flags);
    rc = dm_etw->start_trace(&h, dm_etw_logger_name(logger), &b.p);
    if (rc == ERROR_SUCCESS) {
        s->logger = logger;
        s->handle = h;
        s->active = 1;
        s->asked_log_file_mode = b.p.LogFileMode;
        s->asked_flush_timer = b.p.FlushTimer;
        s->asked_buffer_kb = b.p.BufferSize;
        s->asked_minimum_buffers = b.p.MinimumBuffers;
        s->asked_maximum_buffers = b.p.MaximumBuffers;
        check_started(s);
    }
    return rc;
}

/* --force: stop whoever runs the NT Kernel Logger. Not running is fine. */
static int stop_kernel_logger(struct dm_etw_session *s, char *msg, size_t len)
{
    struct dm_etw_props b;
    ULONG rc;

    dm_etw_control_props(&b, DM_ETW_KERNEL_LOGGER);
    rc = dm_etw->control_trace(0, KERNEL_LOGGER_NAMEW, &b.p,
                               EVENT_TRACE_CONTROL_STOP);
    /* 2402 ERROR_ACTIVE_CONNECTIONS: it is stopping already, which is what
     * --force wants ([MS-ctl], docs/etw.md §7). */
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
         * anti-malware or EDR service, docs/etw.md §7). Elevating again
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
 * NT Kernel Logger, Windows 8+: make the kernel log a file rundown now, so
 * files opened before diskmon started are named from the first I/O on.
 * During a session the kernel names files only as they are opened
 * (FileCreate) and closed (FileDelete); FileRundown, the names of files
 * already open, comes only when a session stops (both sample traces show
 * it). Setting the session's group mask to all zeros and then back to the
 * real flags with TraceSetInformation(TraceSystemTraceEnableFlagsInfo)
 * makes the kernel emit its rundown again: fibratus does exactly this
 * (internal/etw/trace.go, "the first call ... with empty group masks
 * activates rundown events"). The mask put back is the one read with
 * TraceQueryInformation just before, all 8 ULONGs (the TraceSetInformation
 * and TRACE_QUERY_INFO_CLASS pages). diskmon prefers it to System
 * Informer's kernel rundown provider here because its rundown lands in
 * the very stream diskmon reads, in time order. Called after OpenTrace, like the
 * provider (file comment of etw_session.h).
 * Returns 0 (done, or not possible: a note), or a negative dm_err when the
 * session was left without its flags (the second call failed).
 */
static int force_file_rundown(struct dm_etw_session *s, char *msg, size_t len)
{
    ULONG saved[DM_PERFINFO_GROUPMASK_ULONGS], zero[DM_PERFINFO_GROUPMASK_ULONGS];
    ULONG rc, got = 0;

    /* The whole group mask first, to give it back whole: the session may
     * hold bits beyond EnableFlags in Masks[1..7] (krabsetw saves and
     * restores all of it the same way). Unread, it is not touched: the
     * session keeps what it has, and the note says the rundown was
     * refused. */
    memset(saved, 0, sizeof saved);
    rc = dm_etw->query_information(s->handle, TraceSystemTraceEnableFlagsInfo, saved,
                                   (ULONG)sizeof saved, &got);
    if (rc != ERROR_SUCCESS || got < sizeof saved[0]) {
        s->rundown = DM_ETW_RUNDOWN_REFUSED; /* the source notes it */
        s->rundown_error = rc != ERROR_SUCCESS ? rc : ERROR_INVALID_DATA;
        return 0;
    }
    memset(zero, 0, sizeof zero);
    rc = dm_etw->set_information(s->handle, TraceSystemTraceEnableFlagsInfo, zero,
                                 (ULONG)sizeof zero);
    if (rc != ERROR_SUCCESS) {
        /* The session still has the flags StartTrace gave it: diskmon works,
         * only files opened before it started stay unnamed until reopened. */
        s->rundown = DM_ETW_RUNDOWN_REFUSED; /* the source notes it */
        s->rundown_error = rc;
        return 0;
    }
    rc = dm_etw->set_information(s->handle, TraceSystemTraceEnableFlagsInfo, saved,
                                 (ULONG)sizeof saved);
    if (rc != ERROR_SUCCESS)
        return dm_etw_error(rc,
                            "re-enabling the kernel events after the file "
                            "rundown (TraceSetInformation)",
                            msg, len);
    s->rundown = DM_ETW_RUNDOWN_BY_TOGGLE;
    s->rundown_forced = 1;
    return 0;
}

/* KernelRundownGuid with KERNEL_FILE_KEYWORD_FILENAME on a session: the
 * kernel logs a FileRundown for every open file into it. Level 0
 * (TRACE_LEVEL_NONE) and an infinite timeout (the call returns once the
 * provider was enabled), as System Informer calls it (etwmon.c). */
static ULONG enable_rundown_provider(TRACEHANDLE h)
{
    return dm_etw->enable_trace(h, &kernel_rundown_guid, EVENT_CONTROL_CODE_ENABLE_PROVIDER,
                                0, DM_KERNEL_FILE_KEYWORD_FILENAME, 0, INFINITE, NULL);
}

/*
 * The private session. No peer relies on the zero-mask toggle on a private
 * system logger, and private system loggers were seen to give no rundown
 * where the NT Kernel Logger gave thousands (ferrisetw PR #162). System
 * Informer (EtStartEtwRundown) enables the kernel rundown provider on its
 * private logger's own handle first, and only when that is refused on a
 * second, ordinary session; krabsetw (kt.hpp) enables it on the private
 * logger too. diskmon does the same: the names then come in the stream it
 * reads; the helper "diskmon rundown" (etw_source.c reads it on a second
 * consumer) is the fallback. An ordinary session takes no system logger
 * slot.
 */
int dm_etw_start_rundown(struct dm_etw_session *s, char *msg, size_t len)
{
    ULONG rc;
    int err;

    if (!s->win8 || !s->active)
        return 0; /* Windows 7 has neither way (TraceSetInformation page) */
    if (s->logger == DM_ETW_KERNEL_LOGGER) {
        err = force_file_rundown(s, msg, len);
        if (err < 0)
            dm_etw_session_stop(s, NULL, 0);
        return err;
    }
    rc = enable_rundown_provider(s->handle);
    if (rc == ERROR_SUCCESS) {
        s->rundown = DM_ETW_RUNDOWN_BY_PROVIDER;
        s->rundown_forced = 1;
    } else {
        s->rundown = DM_ETW_RUNDOWN_BY_HELPER;
        s->rundown_error = rc;
    }
    return 0;
}

int dm_etw_helper_start(struct dm_etw_session *s)
{
    struct dm_etw_props b;
    TRACEHANDLE h = 0;
    ULONG rc;

    dm_etw_start_props(&b, DM_ETW_RUNDOWN_HELPER, 0);
    rc = dm_etw->start_trace(&h, DM_ETW_RUNDOWN_NAME, &b.p);
    if (rc == DM_WIN_ALREADY_EXISTS) {
        /* Its name and GUID are diskmon's: a killed diskmon left it. */
        dm_etw_control_props(&b, DM_ETW_RUNDOWN_HELPER);
        dm_etw->control_trace(0, DM_ETW_RUNDOWN_NAME, &b.p, EVENT_TRACE_CONTROL_STOP);
        dm_etw_start_props(&b, DM_ETW_RUNDOWN_HELPER, 0);
        rc = dm_etw->start_trace(&h, DM_ETW_RUNDOWN_NAME, &b.p);
    }
    if (rc != ERROR_SUCCESS) {
        s->rundown = DM_ETW_RUNDOWN_REFUSED;
        s->rundown_error = rc;
        return -1;
    }
    EnterCriticalSection(&s->lock);
    s->helper_handle = h;
    s->helper_active = 1;
    LeaveCriticalSection(&s->lock);
    return 0;
}

int dm_etw_helper_enable(struct dm_etw_session *s)
{
    ULONG rc = enable_rundown_provider(s->helper_handle);

    if (rc != ERROR_SUCCESS) {
        s->rundown = DM_ETW_RUNDOWN_REFUSED;
        s->rundown_error = rc;
        dm_etw_helper_stop(s);
        return -1;
    }
    s->rundown = DM_ETW_RUNDOWN_BY_HELPER;
    s->rundown_forced = 1;
    return 0;
}

void dm_etw_helper_stop(struct dm_etw_session *s)
{
    struct dm_etw_props b;

    if (!s->lock_ready)
        return;
    EnterCriticalSection(&s->lock);
    if (s->helper_active) {
        /* By handle, as our own session (dm_etw_session_stop); an ordinary
         * session's handle is not reused by another instance. */
        dm_etw_control_props(&b, DM_ETW_RUNDOWN_HELPER);
        dm_etw->control_trace(s->helper_handle, NULL, &b.p, EVENT_TRACE_CONTROL_STOP);
        s->helper_active = 0;
    }
    LeaveCriticalSection(&s->lock);
}

/*
 * The clock the session really uses. diskmon reads every time stamp as
 * QueryPerformanceCounter ticks (etw_source.c), so a session Windows
 * started with another clock (WNODE_HEADER ClientContext: 2 system time,
 * 3 CPU cycles; before Windows 10 1703 the system loggers shared at most
 * two clock types, docs/etw.md §1) would give wrong times silently: it is
 * stopped and refused in one line. 0 is QPC too ("the default value is
 * QPC", WNODE_HEADER; Wine's QUERY leaves it 0). After a failed QUERY the
 * clock is the one asked.
 */
static int refuse_other_clock(struct dm_etw_session *s, char *msg, size_t len)
{
    ULONG clock = s->queried.client_context;

    if (s->queried.rc != ERROR_SUCCESS || clock == DM_ETW_CLOCK_QPC || clock == 0)
        return 0;
    dm_etw_session_stop(s, NULL, 0);
    snprintf(msg, len,
             "Windows started %s with clock type %lu (%s), not QPC (1), which diskmon "
             "reads every time stamp in: stopped it; a tool that runs its own kernel "
             "session with another clock may force that (close it and retry)",
             logger_label(s->logger), (unsigned long)clock,
             clock == 2 ? "system time" : clock == 3 ? "CPU cycles" : "unknown");
    return DM_EOS;
}

int dm_etw_session_start(struct dm_etw_session *s, int force, int win8,
                         char *msg, size_t len)
{
    ULONG rc;
    int err;

    memset(s, 0, sizeof *s);
    InitializeCriticalSection(&s->lock);
    s->lock_ready = 1;
    s->win8 = win8;
    /* Process and thread events name the process behind each I/O; file
     * names need DISK_FILE_IO. Windows 7's DiskIo v2 completions lack
     * IssuingThreadId, so there the Init events (full header with the
     * thread) are needed to attribute I/O; v3 (Windows 8+) completions carry
     * it, and Init would only double the event rate (docs/etw.md §1, §3). */
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
        return refuse_other_clock(s, msg, len);
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
    if (dm_etw_leftover(DM_ETW_KERNEL_LOGGER)) {
        if (!win8) {
            snprintf(msg, len,
                     "the NT Kernel Logger was left running by a diskmon that "
                     "was killed or crashed (it has diskmon's settings, and no "
                     "other diskmon runs): stop it with diskmon --cleanup, "
                     "then start diskmon again");
            return DM_EEXISTS;
        }
        snprintf(s->notice, sizeof s->notice,
                 "diskmon: the NT Kernel Logger was left running by a diskmon "
                 "that was killed or crashed; using a private kernel session "
                 "\"diskmon\" instead (diskmon --cleanup stops the leftover)\n");
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
        if (s->notice[0] == '\0')
            snprintf(s->notice, sizeof s->notice,
                     "diskmon: the NT Kernel Logger is in use by another "
                     "program; using a private kernel session \"diskmon\" "
                     "instead (run with --force to take over the NT Kernel "
                     "Logger)\n");
        return refuse_other_clock(s, msg, len);
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
         * ([MS-stp], docs/etw.md §1 and §7): 1450 here means those are
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
    return dm_etw_logger_name(s->logger);
}

/*
 * Whether the session behind s->handle is still the instance diskmon
 * started: a QUERY by handle, then its LoggerThreadId against the start's.
 * 1: ours (b holds its properties and counters); 0: gone (4201) or another
 * instance under the same handle (the NT Kernel Logger's fixed id after an
 * outside stop and restart), and s->active is cleared so it is never
 * touched again; -1: the QUERY failed otherwise, so nothing is known. The
 * STOP or FLUSH that follows comes microseconds later under s->lock; a
 * replacement in between is not excluded, only made very unlikely. Lock
 * held.
 */
static int still_ours(struct dm_etw_session *s, struct dm_etw_props *b)
{
    ULONG rc;

    dm_etw_control_props(b, s->logger);
    rc = dm_etw->control_trace(s->handle, NULL, &b->p, EVENT_TRACE_CONTROL_QUERY);
    if (rc != ERROR_SUCCESS && rc != DM_WIN_INSTANCE_NOT_FOUND)
        return -1;
    if (rc == ERROR_SUCCESS &&
        (!s->identity_known || (ULONG_PTR)b->p.LoggerThreadId == s->logger_thread_id))
        return 1;
    s->replaced = rc == ERROR_SUCCESS;
    s->active = 0;
    s->lost_outside = !s->stop_requested;
    return 0;
}

int dm_etw_session_flush(struct dm_etw_session *s)
{
    struct dm_etw_props b;
    int flushed = 0;

    if (!s->lock_ready)
        return 0;
    EnterCriticalSection(&s->lock);
    if (s->active && !s->stop_requested && s->flush_by_handle) {
        int ours = still_ours(s, &b);

        /* Without the start's identity (its QUERY failed) the handle is
         * all there is; with it, an unanswered QUERY is no proof. */
        if (ours == 1 || (ours < 0 && !s->identity_known)) {
            dm_etw_control_props(&b, s->logger);
            if (dm_etw->control_trace(s->handle, NULL, &b.p, EVENT_TRACE_CONTROL_FLUSH) ==
                ERROR_SUCCESS) {
                s->flushes++;
                flushed = 1;
            } else {
                s->flush_failures++;
            }
        }
    }
    LeaveCriticalSection(&s->lock);
    return flushed;
}

int dm_etw_session_stop(struct dm_etw_session *s, char *msg, size_t len)
{
    struct dm_etw_props b;
    ULONG rc;
    int err = 0;

    if (!s->lock_ready)
        return 0;
    EnterCriticalSection(&s->lock);
    s->stop_requested = 1;
    if (s->active) {
        /* By handle, InstanceName NULL, and only on the instance diskmon
         * started (still_ours): a name would reach whatever session holds
         * the name now, and the NT Kernel Logger's handle reaches whatever
         * NT Kernel Logger runs now (etw_session.h). The QUERY's counters
         * are what the session saw while running; STOP fills the same
         * fields with the final values (ControlTraceW); keep the larger. */
        int ours = still_ours(s, &b);

        if (ours == 1) {
            s->events_lost = dm_etw_max_u64(s->events_lost, b.p.EventsLost);
            s->rt_buffers_lost = dm_etw_max_u64(s->rt_buffers_lost, b.p.RealTimeBuffersLost);
        }
        if (ours == 1 || (ours < 0 && !s->identity_known)) {
            dm_etw_control_props(&b, s->logger);
            rc = dm_etw->control_trace(s->handle, NULL, &b.p, EVENT_TRACE_CONTROL_STOP);
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
        } else if (ours < 0) {
            /* Ours a moment ago, and now it cannot be told: leave it rather
             * than stop a session that may be another program's. */
            s->active = 0;
            if (msg != NULL && len > 0)
                snprintf(msg, len,
                         "could not check that %s is still diskmon's session "
                         "(ControlTraceW QUERY failed), so it was left running: "
                         "stop it with 'diskmon --cleanup' or 'logman stop'",
                         logger_label(s->logger));
            err = DM_EOS;
        }
    }
    if (s->helper_active) {
        dm_etw_control_props(&b, DM_ETW_RUNDOWN_HELPER);
        dm_etw->control_trace(s->helper_handle, NULL, &b.p, EVENT_TRACE_CONTROL_STOP);
        s->helper_active = 0;
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
    if (!s->stop_requested && (s->active || s->lost_outside)) {
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

/* A queried value, or the asked one marked so when the QUERY failed. */
static void note_value(struct dm_notes *info, const char *key, ULONG queried,
                       ULONG asked, ULONG query_rc)
{
    if (query_rc == ERROR_SUCCESS)
        dm_note(info, "%s: %lu\n", key, (unsigned long)queried);
    else
        dm_note(info, "%s: %lu (asked; not read back)\n", key, (unsigned long)asked);
}

void dm_etw_session_info(const struct dm_etw_session *s, struct dm_notes *info)
{
    const struct dm_etw_queried *q = &s->queried;
    int ok = q->rc == ERROR_SUCCESS;

    dm_note(info, "logger: %s\n",
            s->logger == DM_ETW_PRIVATE_LOGGER ? "diskmon" : "NT Kernel Logger");
    dm_note(info, "session kind: %s\n",
            s->logger == DM_ETW_PRIVATE_LOGGER
                ? "private system logger (EVENT_TRACE_SYSTEM_LOGGER_MODE)"
                : "NT Kernel Logger (SystemTraceControlGuid)");
    dm_note(info, "log file mode asked: 0x%08lx\n", (unsigned long)s->asked_log_file_mode);
    if (ok)
        dm_note(info, "log file mode queried: 0x%08lx\n", (unsigned long)q->log_file_mode);
    else
        dm_note(info, "log file mode queried: unknown (ControlTraceW QUERY error %lu)\n",
                (unsigned long)q->rc);
    dm_note(info, "flush timer asked: %lu (ms, with EVENT_TRACE_USE_MS_FLUSH_TIMER)\n",
            (unsigned long)s->asked_flush_timer);
    if (!ok)
        dm_note(info, "flush timer queried: unknown (ControlTraceW QUERY error %lu)\n",
                (unsigned long)q->rc);
    else if (s->flush_by_handle && !(q->log_file_mode & EVENT_TRACE_USE_MS_FLUSH_TIMER) &&
             q->flush_timer != DM_ETW_FALLBACK_FLUSH_S)
        dm_note(info, "flush timer queried: %lu (seconds: the flag was dropped; set to %u s: %s)\n",
                (unsigned long)q->flush_timer, DM_ETW_FALLBACK_FLUSH_S,
                s->flush_timer_update_rc == ERROR_SUCCESS ? "UPDATE done" : "UPDATE refused");
    else
        dm_note(info, "flush timer queried: %lu\n", (unsigned long)q->flush_timer);
    dm_note(info, "flush mode: %s\n",
            s->flush_by_handle ? "FLUSH by handle every 100 ms (fallback)"
                               : "ms-timer (checked)");
    note_value(info, "buffer size kb", q->buffer_size, s->asked_buffer_kb, q->rc);
    note_value(info, "minimum buffers", q->minimum_buffers, s->asked_minimum_buffers, q->rc);
    note_value(info, "maximum buffers", q->maximum_buffers, s->asked_maximum_buffers, q->rc);
    if (ok)
        dm_note(info, "clock: QPC (ClientContext asked %u, queried %lu)\n", DM_ETW_CLOCK_QPC,
                (unsigned long)q->client_context);
    else
        dm_note(info, "clock: QPC (ClientContext asked %u)\n", DM_ETW_CLOCK_QPC);
    if (s->identity_known)
        dm_note(info, "logger thread id: %llu\n", (unsigned long long)s->logger_thread_id);
    else
        dm_note(info, "logger thread id: unknown (STOP and FLUSH go by handle unchecked)\n");
}
