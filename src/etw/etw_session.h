/*
 * etw_session.h - starting and stopping the kernel trace session diskmon
 * reads from, and turning Win32 errors into dm_err plus advice.
 *
 * Which session: the NT Kernel Logger when it is free. When another tool
 * holds it, Windows 8 and later let diskmon start a private system logger of
 * its own (named "diskmon", with its own GUID) instead; Windows 7 has only
 * the NT Kernel Logger, so there diskmon stops with a message naming --force.
 * --force stops the running NT Kernel Logger first (and retries StartTrace
 * while it winds down). On Windows 8+ a file rundown is forced right after
 * the start, so files opened earlier are named from the first I/O on. The
 * session is stopped by dm_etw_session_stop(), which is safe from any thread
 * and idempotent, so whatever path ends the run, the session never outlives
 * diskmon; but once the session was stopped from outside it is never
 * queried or stopped again (dm_etw_session_ended_outside).
 * Facts: ../shared/docs/etw-facts.md sections 1 and 7.
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
/* SystemTraceControlGuid {9e814aad-3204-11d2-9a82-006008a86939}
 * (etw-facts.md s.1, [mingw evntrace.h]), defined here so no INITGUID is
 * needed. */
extern const GUID dm_etw_system_trace_guid;

enum dm_etw_logger {
    DM_ETW_NONE = 0,
    DM_ETW_KERNEL_LOGGER,  /* "NT Kernel Logger" */
    DM_ETW_PRIVATE_LOGGER  /* "diskmon", EVENT_TRACE_SYSTEM_LOGGER_MODE */
};

struct dm_etw_session {
    enum dm_etw_logger logger;
    TRACEHANDLE handle;           /* from StartTrace */
    ULONG enable_flags;           /* EVENT_TRACE_FLAG_* asked for */
    int active;                   /* started by us, not stopped, still ours */
    int stop_requested;           /* dm_etw_session_stop() was called */
    int rundown_forced;           /* the start-time file rundown was asked for */
    CRITICAL_SECTION lock;        /* serialises stop and ended_outside */
    int lock_ready;
    /* Session loss counters, from the QUERY and STOP that end the session:
     * events the logger could not record, buffers not delivered in real
     * time. */
    uint64_t events_lost;
    uint64_t rt_buffers_lost;
    char notice[320];             /* a note for the user, e.g. the fallback;
                                   * the source hands it on (struct dm_notes) */
};

/* Tests only: -1 (default) asks the OS whether diskmon runs elevated;
 * 0 or 1 pretends. */
extern int dm_etw_elevated_override;

/* --force: after STOP, StartTrace of the same name can still fail with 183
 * for a moment while the old session winds down. PerfView stops, sleeps
 * 100 ms and retries once (TraceEventSession.cs EnsureStarted); diskmon
 * retries every DM_ETW_RESTART_WAIT_MS for at most DM_ETW_RESTART_TRIES
 * tries, so --force gives up after about 2 s. */
#define DM_ETW_RESTART_WAIT_MS 100u
/*
 * How long a line can take, in one place (the README's "Latency" repeats it).
 *  - DM_ETW_FLUSH_MS: the session's FlushTimer, in milliseconds through
 *    EVENT_TRACE_USE_MS_FLUSH_TIMER (Windows 7+; etw-facts.md s.8). Windows
 *    hands a consumer a buffer only when it is full, when the FlushTimer
 *    expires and the buffer holds events, on a FLUSH, or at stop (the
 *    FlushTrace page), so on a quiet machine an event waits in its CPU's
 *    buffer for up to one period. The flag, rather than a periodic
 *    ControlTrace(FLUSH) from diskmon, because it needs no call that could
 *    act on another program's session (ControlTrace acts on the name,
 *    [MS-ctl]) and Microsoft's own real-time readers use it (ctsTraffic
 *    ctEtwReader.hpp, ntl ntlEtwReader.hpp). 100 ms: ten flushes a second
 *    of at most one partly filled buffer per CPU.
 *  - DM_ETW_MARGIN_MS: how much later than its period a flushed buffer may
 *    reach the callback (the logger thread's wake-up, the real-time
 *    delivery, the consumer thread's scheduling) and still be put in order.
 *    Not a documented figure: a budget, checked by the fake's delivery
 *    model (tests/unit/etw_fake.c) and by live_exact on real Windows.
 *  - DM_ETW_HOLD_MS = FlushTimer + margin: a record is released in time
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
#define DM_ETW_MARGIN_MS 150u
#define DM_ETW_HOLD_MS (DM_ETW_FLUSH_MS + DM_ETW_MARGIN_MS)
#define DM_ETW_RELEASE_EVERY_MS 50u
#define DM_ETW_LINE_BOUND_MS (DM_ETW_HOLD_MS + DM_ETW_RELEASE_EVERY_MS + 100u)
/* EVENT_TRACE_USE_MS_FLUSH_TIMER: not in every SDK's evntrace.h (ntwmi.h
 * has it; etw-facts.md s.8). */
#ifndef EVENT_TRACE_USE_MS_FLUSH_TIMER
#define EVENT_TRACE_USE_MS_FLUSH_TIMER 0x00000010
#endif
#define DM_ETW_RESTART_TRIES 20u

/*
 * Start the session (see the file comment for which). force: stop a running
 * NT Kernel Logger first. win8: the OS has private system loggers (pass
 * dm_etw_is_win8_or_later()). Returns 0, or a negative dm_err with a message
 * that says what to do in msg. s->notice is non-empty when the user should
 * be told something (the private fallback, --force having stopped a
 * session).
 */
int dm_etw_session_start(struct dm_etw_session *s, int force, int win8,
                         char *msg, size_t len);

/* The session's name, for OpenTrace. */
const WCHAR *dm_etw_session_name(const struct dm_etw_session *s);

/*
 * Read the loss counters (ControlTrace QUERY) and stop the session
 * (ControlTrace STOP). Any thread; only the first call does the work, later
 * ones wait for it and return. Does nothing once dm_etw_session_ended_outside()
 * said the session is no longer ours. Returns 0 or a negative dm_err
 * (message in msg, which may be NULL).
 */
int dm_etw_session_stop(struct dm_etw_session *s, char *msg, size_t len);

/*
 * Called when ProcessTrace returned on its own. ControlTrace acts on the
 * session *name* (the handle is ignored when a name is given, and the NT
 * Kernel Logger's id is fixed, [MS-ctl]), so once someone else stopped our
 * session, a QUERY or STOP by name could hit a session another program has
 * started since. Returns 1 and forgets the session (no QUERY, no STOP ever
 * again) when dm_etw_session_stop() had not been asked for: it was stopped
 * from outside. Returns 0 when the end was ours. Any thread.
 */
int dm_etw_session_ended_outside(struct dm_etw_session *s);

/* Stop if still running, then release the lock. */
void dm_etw_session_free(struct dm_etw_session *s);

/*
 * --cleanup: stop a "diskmon" session left behind by a diskmon that was
 * killed. Returns 0 when one was stopped, DM_ENOTFOUND when none was
 * running, or another negative dm_err; msg always says what happened.
 */
int dm_etw_cleanup(char *msg, size_t len);

/*
 * The Win32 error translator: maps code to a dm_err and writes
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

/* The larger of two loss counts (the session's and the stream's). */
static inline uint64_t dm_etw_max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

#endif /* DM_ETW_SESSION_H */
