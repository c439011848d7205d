/*
 * etw_session.h - starting and stopping the kernel trace session diskmon
 * reads from, and turning Win32 errors into dm_err plus advice.
 *
 * Which session: the NT Kernel Logger when it is free. When another tool
 * holds it, Windows 8 and later let diskmon start a private system logger of
 * its own (named "diskmon", with its own GUID) instead; Windows 7 has only
 * the NT Kernel Logger, so there diskmon stops with a message naming --force.
 * --force stops the running NT Kernel Logger first (and retries StartTrace
 * while it winds down).
 *
 * Documented ground, checked at run time where it is not:
 *  - Right after StartTrace the session is queried by handle
 *    (ControlTrace QUERY): what Windows really set up (LogFileMode,
 *    FlushTimer, buffers, clock) and the session's LoggerThreadId, which
 *    identifies this instance of it.
 *  - The 100 ms flush (EVENT_TRACE_USE_MS_FLUSH_TIMER) is not documented
 *    (the Logging Mode Constants page does not list it). It is kept only
 *    when the QUERY shows the flag and FlushTimer 100; otherwise the
 *    session gets the documented FlushTimer of 1 s (ControlTrace UPDATE,
 *    when the unit is known to be seconds) and the source's releaser sends
 *    EVENT_TRACE_CONTROL_FLUSH by handle every DM_ETW_FLUSH_MS
 *    (dm_etw_session_flush), which the FlushTrace page documents.
 *  - A handle is not an instance: the NT Kernel Logger's handle is its
 *    fixed logger id (KERNEL_LOGGER_ID 0xFFFF, evntrace.h's Loggerhandle
 *    macros), so after an outside stop a new NT Kernel Logger of another
 *    tool answers to diskmon's handle. Before every STOP and FLUSH the
 *    session is queried by handle and its LoggerThreadId compared with the
 *    one of the start; a session that is not diskmon's is left alone.
 *  - The names of files opened before the start (the start rundown) are
 *    asked for by the source (etw_source.c) after OpenTrace, just before
 *    ProcessTrace (dm_etw_start_rundown): System Informer (etwmon.c) and
 *    krabsetw (etw.hpp) say a rundown enabled before a consumer is attached
 *    is lost. On Windows 8+ the NT Kernel Logger gets the group-mask toggle
 *    (TraceSetInformation); the private session the kernel rundown
 *    provider on its own handle, or, when that is refused, on a helper
 *    session "diskmon rundown" (stopped with it).
 * The session is stopped by dm_etw_session_stop(), which is safe from any
 * thread and idempotent, so whatever path ends the run, the session does
 * not outlive diskmon, except after a kill, a crash or a logoff (which end
 * the process without running its handlers; --cleanup then stops what was
 * left). Once started, the session is queried, flushed and stopped by its
 * handle, never by name, and once it was stopped from outside it is never
 * touched again (dm_etw_session_ended_outside).
 * Facts: the EVENT_TRACE_PROPERTIES, ControlTraceW, StartTraceW, FlushTrace
 * and Logging Mode Constants pages of Microsoft Learn.
 */
#ifndef DM_ETW_SESSION_H
#define DM_ETW_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "etw/etw_api.h"

/* The private session's name and GUID (Windows 8+ fallback). The GUID is
 * diskmon's own, fixed so --cleanup can find a session left behind. */
#define DM_ETW_PRIVATE_NAME L"diskmon"
extern const GUID dm_etw_private_guid;
/* The private session's naming helper: an ordinary real-time session with
 * the kernel rundown provider (etw_session.c), and its own GUID. */
#define DM_ETW_RUNDOWN_NAME L"diskmon rundown"
extern const GUID dm_etw_rundown_session_guid;
/* SystemTraceControlGuid {9e814aad-3204-11d2-9a82-006008a86939}
 * (docs/etw.md §1, [mingw evntrace.h]), defined here so no INITGUID is
 * needed. */
extern const GUID dm_etw_system_trace_guid;

enum dm_etw_logger {
    DM_ETW_NONE = 0,
    DM_ETW_KERNEL_LOGGER,  /* "NT Kernel Logger" */
    DM_ETW_PRIVATE_LOGGER, /* "diskmon", EVENT_TRACE_SYSTEM_LOGGER_MODE */
    DM_ETW_RUNDOWN_HELPER  /* "diskmon rundown": names for the private one */
};

/* What a QUERY by handle read back (ControlTrace EVENT_TRACE_CONTROL_QUERY
 * fills the session's properties [EVENT_TRACE_PROPERTIES]). */
struct dm_etw_queried {
    ULONG rc;                     /* ERROR_SUCCESS, or the QUERY's error */
    ULONG log_file_mode;
    ULONG flush_timer;
    ULONG buffer_size;            /* KB */
    ULONG minimum_buffers;
    ULONG maximum_buffers;
    ULONG client_context;         /* Wnode.ClientContext: the clock */
    ULONG_PTR logger_thread_id;   /* LoggerThreadId: this instance */
};

/* How the start rundown was asked for (dm_etw_start_rundown). */
enum dm_etw_rundown {
    DM_ETW_RUNDOWN_NOT_ASKED = 0, /* not asked (Windows 7), or not yet */
    DM_ETW_RUNDOWN_BY_TOGGLE,     /* NT Kernel Logger: the group-mask toggle */
    DM_ETW_RUNDOWN_BY_PROVIDER,   /* private: KernelRundownGuid on its handle */
    DM_ETW_RUNDOWN_BY_HELPER,     /* private: ... on "diskmon rundown" */
    DM_ETW_RUNDOWN_REFUSED        /* asked, refused: a note says so */
};

struct dm_etw_session {
    enum dm_etw_logger logger;
    TRACEHANDLE handle;           /* from StartTrace */
    ULONG enable_flags;           /* EVENT_TRACE_FLAG_* asked for */
    int win8;                     /* the OS has private system loggers */
    int active;                   /* started by us, not stopped, still ours */
    int stop_requested;           /* dm_etw_session_stop() was called */
    int rundown_forced;           /* the start-time file rundown was asked for */
    enum dm_etw_rundown rundown;  /* ... and how */
    ULONG rundown_error;          /* DM_ETW_RUNDOWN_REFUSED: the last refusal */
    TRACEHANDLE helper_handle;    /* "diskmon rundown", when helper_active */
    int helper_active;            /* started by us, not stopped */
    CRITICAL_SECTION lock;        /* serialises stop, flush, ended_outside */
    int lock_ready;
    /* What StartTrace was asked for, and what the QUERY right after it read
     * back (etw_session.c check_started). */
    ULONG asked_log_file_mode;
    ULONG asked_flush_timer;
    ULONG asked_buffer_kb, asked_minimum_buffers, asked_maximum_buffers;
    struct dm_etw_queried queried;
    /* 1: the undocumented 100 ms flush timer was not confirmed, so the
     * source sends EVENT_TRACE_CONTROL_FLUSH every DM_ETW_FLUSH_MS. */
    int flush_by_handle;
    ULONG flush_timer_update_rc;  /* the UPDATE to FlushTimer 1 s, if sent */
    /* The instance diskmon started: LoggerThreadId from that QUERY
     * (identity_known 0 when it failed). */
    int identity_known;
    ULONG_PTR logger_thread_id;
    int replaced;                 /* the handle named another instance: left alone */
    int lost_outside;             /* found gone or replaced before any stop */
    uint64_t flushes, flush_failures; /* FLUSH by handle, sent and refused */
    /* Session loss counters, from the QUERY and STOP that end the session:
     * events the logger could not record, buffers not delivered in real
     * time. */
    uint64_t events_lost;
    uint64_t rt_buffers_lost;
    char notice[640];             /* a note for the user, e.g. the fallback;
                                   * the source hands it on (struct dm_notes) */
};

/* Tests only: -1 (default) asks the OS whether diskmon runs elevated;
 * 0 or 1 pretends. */
extern int dm_etw_elevated_override;
/* Tests only: -1 (default) looks for another diskmon.exe process; 0 or 1
 * pretends (a leftover NT Kernel Logger is recognised only when none runs). */
extern int dm_etw_other_diskmon_override;

/* --force: after STOP, StartTrace of the same name can still fail with 183
 * for a moment while the old session winds down. PerfView stops, sleeps
 * 100 ms and retries once (TraceEventSession.cs EnsureStarted); diskmon
 * retries every DM_ETW_RESTART_WAIT_MS for at most DM_ETW_RESTART_TRIES
 * tries, so --force gives up after about 2 s. */
#define DM_ETW_RESTART_WAIT_MS 100u
/* The session's BufferSize in KB (etw_logger.c explains it). */
#define DM_ETW_BUFFER_KB 64u
/*
 * How long a line can take, in one place (docs/output.md's "Latency" repeats it).
 *  - DM_ETW_FLUSH_MS: how often a partly filled buffer is handed over.
 *    Windows hands a consumer a buffer only when it is full, when the
 *    FlushTimer expires and the buffer holds events, on a FLUSH, or at stop
 *    (the FlushTrace page), so on a quiet machine an event waits in its
 *    CPU's buffer for up to one period. Two ways to a 100 ms period:
 *    FlushTimer 100 with EVENT_TRACE_USE_MS_FLUSH_TIMER (not on the Logging
 *    Mode Constants page; Microsoft's ctsTraffic ctEtwReader.hpp and ntl
 *    ntlEtwReader.hpp use it on ordinary sessions), kept only when the
 *    QUERY after the start shows Windows took it; else ControlTrace
 *    EVENT_TRACE_CONTROL_FLUSH by handle every DM_ETW_FLUSH_MS from the
 *    source's releaser, documented, on a session checked to be diskmon's
 *    own before each call. Either way ten flushes a second of at most one
 *    partly filled buffer per CPU.
 *  - DM_ETW_FALLBACK_FLUSH_S: the documented FlushTimer (seconds; 1 is the
 *    real-time minimum, EVENT_TRACE_PROPERTIES) the fallback sets, so a
 *    FLUSH that fails costs at most a second, not the 100 s that FlushTimer
 *    100 means without the flag.
 *  - DM_ETW_MARGIN_MS: how much later than its period a flushed buffer may
 *    reach the callback (the logger thread's wake-up, the real-time
 *    delivery, the consumer thread's scheduling) and still be put in order.
 *    Not a documented figure: a budget, checked by the fake's delivery
 *    model (tests/unit/etw_fake.c) and by live_exact on real Windows.
 *  - DM_ETW_HOLD_MS = flush period + margin: a record is released in time
 *    order once it is this old, whether or not another buffer came; the
 *    source checks every DM_ETW_RELEASE_EVERY_MS. Records of busy CPUs
 *    leave sooner, once every CPU has gone past them (decode/reorder.h).
 *  - The printer writes at least every 100 ms (core/printer.c). So a line
 *    is out at most DM_ETW_LINE_BOUND_MS after its event on a machine that
 *    is not overloaded.
 * Held records: at 200,000 events/s, DM_ETW_HOLD_MS holds 50,000, inside
 * the reorder stage's count bound (etw_source.c DM_REORDER_MAX_HELD).
 */
#define DM_ETW_FLUSH_MS 100u
#define DM_ETW_FALLBACK_FLUSH_S 1u
#define DM_ETW_MARGIN_MS 150u
#define DM_ETW_HOLD_MS (DM_ETW_FLUSH_MS + DM_ETW_MARGIN_MS)
#define DM_ETW_RELEASE_EVERY_MS 50u
#define DM_ETW_LINE_BOUND_MS (DM_ETW_HOLD_MS + DM_ETW_RELEASE_EVERY_MS + 100u)
/* EVENT_TRACE_USE_MS_FLUSH_TIMER: not in every SDK's evntrace.h (phnt
 * ntwmi.h has it), not on the Logging Mode Constants page. */
#ifndef EVENT_TRACE_USE_MS_FLUSH_TIMER
#define EVENT_TRACE_USE_MS_FLUSH_TIMER 0x00000010
#endif
#define DM_ETW_RESTART_TRIES 20u

/*
 * Start the session (see the file comment for which) and check what Windows
 * set up (the QUERY, the flush timer). force: stop a running NT Kernel
 * Logger first. win8: the OS has private system loggers (pass
 * dm_etw_is_win8_or_later()). Returns 0, or a negative dm_err with a
 * message that says what to do in msg. s->notice is non-empty when the user
 * should be told something (the private fallback, --force having stopped a
 * session).
 */
int dm_etw_session_start(struct dm_etw_session *s, int force, int win8,
                         char *msg, size_t len);

/* The session's name, for OpenTrace. */
const WCHAR *dm_etw_session_name(const struct dm_etw_session *s);

/*
 * Ask for the start rundown, the names of the files already open. Call it
 * after the session's consumer was opened (OpenTrace) and just before
 * ProcessTrace (file comment). NT Kernel Logger on Windows 8+: the toggle;
 * private session: KernelRundownGuid on its own handle. Sets s->rundown;
 * DM_ETW_RUNDOWN_BY_HELPER there means the caller should start the helper
 * (dm_etw_helper_start, its consumer, dm_etw_helper_enable). Returns 0, or a
 * negative dm_err when the toggle left the session without its flags (msg
 * says so; the session is stopped then). Source thread.
 */
int dm_etw_start_rundown(struct dm_etw_session *s, char *msg, size_t len);

/* The naming helper "diskmon rundown": start the session (0, or -1 with
 * s->rundown_error), then, once its consumer is open, enable the kernel
 * rundown provider on it (0, or -1: the helper is stopped again). */
int dm_etw_helper_start(struct dm_etw_session *s);
int dm_etw_helper_enable(struct dm_etw_session *s);

/* Stop the naming helper only (its consumer failed to open). Any thread. */
void dm_etw_helper_stop(struct dm_etw_session *s);

/*
 * The flush fallback: when s->flush_by_handle, the source calls this every
 * DM_ETW_FLUSH_MS. Sends EVENT_TRACE_CONTROL_FLUSH by handle, only to the
 * session diskmon started and still owns (the LoggerThreadId check of the
 * file comment), never after a stop was asked for. Returns 1 when flushed,
 * 0 when not (not ours, stopped, or refused: counted). Any thread.
 */
int dm_etw_session_flush(struct dm_etw_session *s);

/*
 * Read the loss counters (ControlTrace QUERY) and stop the session
 * (ControlTrace STOP), both by handle, and the STOP only when the QUERY
 * shows the instance diskmon started. Any thread; only the first call does
 * the work, later ones wait for it and return. Does nothing once
 * dm_etw_session_ended_outside() said the session is no longer ours.
 * Returns 0 or a negative dm_err (message in msg, which may be NULL).
 */
int dm_etw_session_stop(struct dm_etw_session *s, char *msg, size_t len);

/*
 * Called when ProcessTrace returned on its own. ControlTrace acts on the
 * session *name* when one is given, and the NT Kernel Logger's handle is
 * its fixed id ([MS-ctl], evntrace.h), so once someone else stopped our
 * session, a QUERY or STOP could hit a session another program has started
 * since. Returns 1 and forgets the session (no QUERY, no STOP ever again)
 * when dm_etw_session_stop() had not been asked for: it was stopped from
 * outside. Returns 0 when the end was ours. Any thread.
 */
int dm_etw_session_ended_outside(struct dm_etw_session *s);

/*
 * Write what the start set up and what Windows answered into info, one
 * "key: value" line each (diskmon.h, struct dm_source info): logger,
 * session kind, log file mode asked/queried, flush timer asked/queried,
 * flush mode, buffer size kb, minimum/maximum buffers, clock, logger
 * thread id. Main thread, after dm_etw_session_start() succeeded.
 */
void dm_etw_session_info(const struct dm_etw_session *s, struct dm_notes *info);

/* Stop if still running, then release the lock. */
void dm_etw_session_free(struct dm_etw_session *s);

/*
 * --cleanup: stop what a diskmon that was killed or crashed left running:
 * a "diskmon" session (diskmon's own name and GUID), and an NT Kernel
 * Logger whose settings are exactly diskmon's while no other diskmon runs.
 * Any other program's NT Kernel Logger is never touched. Returns 0 when
 * something was stopped, DM_ENOTFOUND when nothing was left, or another
 * negative dm_err; msg always says what happened.
 */
int dm_etw_cleanup(char *msg, size_t len);

/*
 * The Win32 error translator (etw_logger.c): maps code to a dm_err and writes
 * "<what> failed: error <code> (<system text>)" plus advice for the codes
 * that have one (5: elevate, unless already elevated; 1450: free a
 * session).
 */
int dm_etw_error(unsigned long code, const char *what, char *msg, size_t len);

/* Nonzero on Windows 8 / Server 2012 (6.2) and later. */
int dm_etw_is_win8_or_later(void);

/* Nonzero when this process runs with an elevated (administrator) token:
 * TokenElevation from GetTokenInformation, or dm_etw_elevated_override. */
int dm_etw_is_elevated(void);

/* The live source (etw_source.c); dm_live_source points at it. */
extern const struct dm_source_ops dm_etw_source;

/* For tests: the most records the reorder stage held after a buffer, and
 * the records that came late (out of time order), of a live source that is
 * open (before close()). */
size_t dm_etw_source_peak_held(const struct dm_source *src);
uint64_t dm_etw_source_late(const struct dm_source *src);
/* For tests: times the reorder stage or the decoder were used without
 * ro_lock (etw_source.c file comment; 0 is right), and the source's
 * session. */
long dm_etw_source_unguarded(const struct dm_source *src);
const struct dm_etw_session *dm_etw_source_session(const struct dm_source *src);

/* The larger of two loss counts (the session's and the stream's). */
static inline uint64_t dm_etw_max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

#endif /* DM_ETW_SESSION_H */
