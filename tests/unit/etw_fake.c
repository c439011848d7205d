/*
 * etw_fake.c - a FAKE ETW API (see etw_fake.h): a model of the few ETW
 * behaviours diskmon relies on, for tests. It is not Windows and checks
 * only our logic against documented ETW answers (docs/etw.md §1).
 *
 * The replay turns each record of a sample .etl (read with the project's
 * .etl reader) into the EVENT_RECORD a real-time consumer would get: the
 * MOF class GUID for the record's HookId group, opcode and version in the
 * event descriptor, the 32/64-bit header flag, the processor in
 * BufferContext, the raw timestamp rebased so the trace starts when
 * OpenTrace was called, and UserData pointing at the payload bytes.
 *
 * Behaviours modelled, with their sources:
 *  - Rundown. With DISK_FILE_IO the kernel logs FileCreate/FileDelete while
 *    a session runs; FileRundown (36), the names of files already open, and
 *    the DCEnd records come only when the session stops (docs/etw.md §7;
 *    both samples: all 36s in the last 0.1-0.3 s). So the sample's end
 *    rundown (FileIo 36, Process and Thread DCEnd) is held back and
 *    delivered after STOP, before ProcessTrace returns. If the session's
 *    group mask was set to all zeros and then to real flags with
 *    TraceSetInformation(TraceSystemTraceEnableFlagsInfo) (fibratus
 *    internal/etw/trace.go: the zero mask "activates rundown events"),
 *    copies of the FileRundown records come first, stamped at that moment.
 *  - Per-processor buffers. Without EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING
 *    each CPU fills its own buffers and a real-time consumer gets them as
 *    they are flushed, not in global time order (docs/etw.md §4, §7;
 *    [MS-props] FlushTimer). The fake delivers the sample's own buffers
 *    (one CPU each) in file order, which is flush order, with
 *    BufferContext.ProcessorIndex set and EVENT_HEADER_FLAG_PROCESSOR_INDEX
 *    ([MS-evh]); with the flag it keeps global time order.
 *  - A session stopped from outside: ProcessTrace returns 0 on its own once
 *    the session is gone [MS-proc]; ControlTrace acts on the name [MS-ctl],
 *    so a later STOP by name hits whatever session holds it then.
 *  - STOP then START: StartTrace can still return 183 for a moment after a
 *    STOP; a STOP of a stopping session returns 2402 ERROR_ACTIVE_CONNECTIONS
 *    (docs/etw.md §7, PerfView TraceEventSession.cs sleeps and retries).
 *  - Queued buffers: after STOP or CloseTrace, ProcessTrace still delivers
 *    the buffers already queued, calling the BufferCallback after each; a
 *    FALSE return makes it return ERROR_CANCELLED without the rest
 *    ([MS-close], [MS-logfile], docs/etw.md §7).
 *  - OpenTrace of a real-time session reports LogfileHeader.PointerSize 4
 *    even on x64 (PerfView ETWTraceEventSource.cs, docs/etw.md §7).
 *  - A rundown needs a consumer: System Informer (etwmon.c) enables the
 *    kernel rundown provider only after OpenTrace, "otherwise the provider
 *    will ... drop events", and krabsetw (etw.hpp) "very shortly before
 *    ProcessTrace()". So a rundown asked for (the toggle, or the provider
 *    by EnableTraceEx2) while no consumer of that session is open is lost:
 *    counted, never delivered. The fake applies the rule to the toggle too,
 *    whose timing no peer documents: diskmon does both after OpenTrace, so
 *    it holds under either reading.
 *  - The kernel rundown provider on a private system logger's own handle
 *    (System Informer EtStartEtwRundown tries that first; krabsetw kt.hpp)
 *    puts the FileRundown copies into that session's own stream;
 *    private_enable_error plays a refusal.
 *  - The NT Kernel Logger's handle is its logger id, KERNEL_LOGGER_ID
 *    0xFFFF (evntrace.h's Loggerhandle macros): every instance, diskmon's
 *    or another tool's, has it, so ControlTrace by that handle acts on
 *    whichever runs. Instances differ in LoggerThreadId, which QUERY and
 *    STOP report (EVENT_TRACE_PROPERTIES). A private session's handle is
 *    its own.
 *  - EVENT_TRACE_USE_MS_FLUSH_TIMER is not documented, so the fake plays
 *    several answers to it (enum dm_fake_flush_answer): the QUERY shows
 *    what Windows kept, and the flush period follows (seconds wherever the
 *    flag was not honoured). ControlTrace UPDATE sets FlushTimer (and
 *    EnableFlags, LogFileMode's real-time bit) as the ControlTraceW page
 *    describes; EVENT_TRACE_CONTROL_FLUSH delivers every buffer holding
 *    events (the FlushTrace page).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "decode/nt_kernel.h"
#include "etl/etl.h"
#include "etw_fake.h"
#include "platform/platform.h"

#define FAKE_MAX_CALLS 4096
#define FAKE_HANDLE_BASE 0x1000u
#define FAKE_CONSUMER 0x5000u
#define FAKE_HELPER_CONSUMER 0x5001u
#define FAKE_WAIT_CAP_MS 30000u /* a blocked ProcessTrace gives up after this */
/* EVENT_TRACE_USE_MS_FLUSH_TIMER (ntwmi.h; docs/etw.md §8). */
#define FAKE_USE_MS_FLUSH_TIMER 0x00000010u
/* EVENT_TRACE_CONTROL_UPDATE 2, _FLUSH 3 (evntrace.h, ControlTraceW). */
#define FAKE_CONTROL_UPDATE 2u
#define FAKE_CONTROL_FLUSH 3u
/* KERNEL_LOGGER_ID (evntrace.h): the NT Kernel Logger's handle. */
#define FAKE_KERNEL_LOGGER_ID 0xFFFFu
/* LoggerThreadId of the sessions the fake starts: any distinct values. */
#define FAKE_THREAD_BASE 0x2000u

/* Win32 codes the model returns (winerror.h). */
#define W_INVALID_HANDLE 6u
#define W_BAD_LENGTH 24u
#define W_INVALID_PARAMETER 87u
#define W_ALREADY_EXISTS 183u
#define W_CANCELLED 1223u
#define W_ACTIVE_CONNECTIONS 2402u
#define W_TIMEOUT 1460u
#define W_NOT_FOUND 4201u
#define W_CLOSE_PENDING 7007u

/* MOF class GUIDs by HookId group (docs/etw.md §2 and §4). */
static const GUID diskio_guid = {
    0x3d6fa8d4, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID process_guid = {
    0x3d6fa8d0, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID thread_guid = {
    0x3d6fa8d1, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID fileio_guid = {
    0x90cbdc39, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};
static const GUID eventtrace_guid = {
    0x68fdd900, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};
static const GUID rt_lost_guid = {
    0x6a399ae0, 0x4bc6, 0x4de9, {0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e}};
/* Groups the decoder does not know get a made-up GUID with the group in
 * its last byte, so they reach the callback as "other" classes. */
static const GUID other_guid_base = {
    0xfa4e0000, 0x0000, 0x0000, {0, 0, 0, 0, 0, 0, 0, 0}};
/* KernelRundownGuid and KERNEL_FILE_KEYWORD_FILENAME (docs/etw.md §8). */
static const GUID kernel_rundown_guid = {
    0x3b9c9951, 0x3480, 0x4220, {0x93, 0x77, 0x9c, 0x8e, 0x51, 0x84, 0xf5, 0xcd}};
#define FAKE_FILE_KEYWORD_FILENAME 0x10u
static const GUID system_trace_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

/* Which part of the delivery a record belongs to. */
enum fake_part {
    PART_MAIN = 0,   /* delivered while the session runs */
    PART_END,        /* end rundown: only after STOP */
    PART_COPY        /* FileRundown copy: only after the toggle */
};

struct fake_record {
    EVENT_RECORD er;
    uint64_t trace_ts;  /* timestamp in the trace */
    uint64_t buffer;    /* the sample buffer it came from (file offset) */
    unsigned cpu;
    enum fake_part part;
};

/* A delivery buffer: records order[first .. first+count) (indices). */
struct fake_buf {
    size_t first, count;
};

/* Thread/Process DCEnd and FileIo FileRundown (docs/etw.md §2, §7). */
#define OP_DCEND 4u
#define OP_FILE_RUNDOWN 36u

static struct {
    CRITICAL_SECTION lock;
    int lock_ready;
    struct dm_fake_config cfg;
    struct dm_fake_call calls[FAKE_MAX_CALLS];
    size_t n_calls;
    int kernel_running, private_running;
    unsigned next_handle;
    /* The running sessions' handles and settings (StartTrace's properties,
     * or another tool's for a session configured as already running), for
     * ControlTrace by handle and QUERY. */
    TRACEHANDLE kernel_handle, private_handle, helper_handle;
    EVENT_TRACE_PROPERTIES kernel_props, private_props, helper_props;
    ULONG kernel_mask[8], private_mask[8]; /* the sessions' group masks */
    /* "diskmon rundown", an ordinary session, and its consumer */
    int helper_running, helper_enabled, helper_open;
    uint64_t helper_qpc;
    PEVENT_TRACE_LOGFILEW helper_lf;
    HANDLE helper_wake;     /* manual reset: helper stopped or closed */
    /* the consumer */
    PEVENT_TRACE_LOGFILEW logfile;
    int consumer_open;
    int consumer_is_private;
    volatile LONG in_process;
    HANDLE wake;            /* manual reset: session stopped or consumer closed */
    HANDLE replayed;        /* manual reset: every record delivered */
    dm_atomic_u64 delivered; /* the consumer thread writes, tests read */
    uint64_t replay_ns;
    uint64_t out_of_order;
    uint64_t after_stop;
    /* per session name: 183 answers still due after a STOP */
    unsigned busy_kernel, busy_private;
    /* the rundown toggle */
    int zero_mask_seen, rundown_triggered;
    uint64_t toggle_qpc;
    int rundown_lost;       /* asked for with no consumer open: lost */
    /* instances another tool started (configured, or after an outside
     * restart), and by-handle STOP/FLUSH/UPDATE calls that reached one */
    int kernel_other, private_other;
    int touched_other;
    unsigned next_thread;   /* LoggerThreadId of the next instance */
    int flush_honoured;     /* the running session flushes in ms */
    int per_cpu;            /* the running session has per-CPU buffers */
    unsigned flush_ms;      /* the running session's FlushTimer, in ms */
    unsigned buffer_kb;     /* its BufferSize */
    volatile LONG flush_asked; /* ControlTrace FLUSH since the last flush */
    /* the live model */
    uint64_t logged, single_io_qpc, full_buffers, timer_buffers;
    uint64_t helper_delivered;
    /* the delivery plan */
    size_t *order;
    struct fake_buf *bufs;
    size_t n_bufs;
    /* the sample */
    struct fake_record *recs;
    size_t n_recs;
    uint8_t *arena;
    uint64_t header_ts, trace_freq;
    unsigned n_cpus;        /* the sample's NumberOfProcessors */
} fk;

static void lock(void)
{
    EnterCriticalSection(&fk.lock);
}

static void unlock(void)
{
    LeaveCriticalSection(&fk.lock);
}

static void narrow(const WCHAR *w, char *out, size_t len)
{
    size_t i = 0;

    for (; w != NULL && w[i] != 0 && i + 1 < len; i++)
        out[i] = w[i] < 0x80 ? (char)w[i] : '?';
    out[i] = '\0';
}

static struct dm_fake_call *log_call(enum dm_fake_call_kind kind, const WCHAR *name)
{
    struct dm_fake_call *c;

    if (fk.n_calls >= FAKE_MAX_CALLS)
        return &fk.calls[FAKE_MAX_CALLS - 1]; /* overwrite the last: keeps going */
    c = &fk.calls[fk.n_calls++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    narrow(name, c->name, sizeof c->name);
    c->when_ns = dm_monotonic_ns();
    return c;
}

static int is_kernel(const char *name)
{
    return strcmp(name, "NT Kernel Logger") == 0;
}

static unsigned *busy_counter(const char *name)
{
    if (is_kernel(name))
        return &fk.busy_kernel;
    if (strcmp(name, "diskmon") == 0)
        return &fk.busy_private;
    return NULL;
}

static int is_helper(const char *name)
{
    return strcmp(name, "diskmon rundown") == 0;
}

static int *running_flag(const char *name)
{
    if (is_kernel(name))
        return &fk.kernel_running;
    if (strcmp(name, "diskmon") == 0)
        return &fk.private_running;
    if (is_helper(name))
        return &fk.helper_running;
    return NULL;
}

static TRACEHANDLE *handle_of(const char *name)
{
    if (is_kernel(name))
        return &fk.kernel_handle;
    if (strcmp(name, "diskmon") == 0)
        return &fk.private_handle;
    if (is_helper(name))
        return &fk.helper_handle;
    return NULL;
}

static EVENT_TRACE_PROPERTIES *props_of(const char *name)
{
    if (is_kernel(name))
        return &fk.kernel_props;
    if (strcmp(name, "diskmon") == 0)
        return &fk.private_props;
    if (is_helper(name))
        return &fk.helper_props;
    return NULL;
}

/* Another tool's settings, for a session that runs before diskmon starts
 * (xperf's defaults: 64 KB buffers, FlushTimer 0, a log file). */
static void other_tool_props(EVENT_TRACE_PROPERTIES *p)
{
    memset(p, 0, sizeof *p);
    p->LoggerThreadId = (HANDLE)(ULONG_PTR)(FAKE_THREAD_BASE + 4u * fk.next_thread++);
    p->BufferSize = 64;
    p->MinimumBuffers = 64;
    p->MaximumBuffers = 320;
    p->LogFileMode = 0x00000001u; /* EVENT_TRACE_FILE_MODE_SEQUENTIAL */
    p->EnableFlags = 0x00000307u; /* PROC_THREAD+LOADER+DISK_IO+FILE */
}

/* FlushTimer: seconds, 0 meaning 1 s for a real-time session
 * (EVENT_TRACE_PROPERTIES); milliseconds where EVENT_TRACE_USE_MS_FLUSH_TIMER
 * was honoured. */
static void set_flush_period(ULONG timer)
{
    if (fk.flush_honoured)
        fk.flush_ms = timer != 0 ? timer : 1000u;
    else
        fk.flush_ms = (timer != 0 ? timer : 1u) * 1000u;
}

static ULONG WINAPI fake_start(PTRACEHANDLE h, LPCWSTR name, PEVENT_TRACE_PROPERTIES p)
{
    struct dm_fake_call *c;
    int *running;
    unsigned *busy;
    ULONG rc = 0;

    lock();
    c = log_call(DM_FAKE_START, name);
    c->log_file_mode = p->LogFileMode;
    c->enable_flags = p->EnableFlags;
    c->client_context = p->Wnode.ClientContext;
    c->guid = p->Wnode.Guid;
    c->flush_timer = p->FlushTimer;
    running = running_flag(c->name);
    busy = busy_counter(c->name);
    if (fk.cfg.start_error != 0)
        rc = fk.cfg.start_error;
    else if (fk.cfg.private_start_error != 0 && !is_kernel(c->name))
        rc = fk.cfg.private_start_error;
    else if (p->Wnode.BufferSize < sizeof *p + (wcslen(name) + 1) * sizeof(WCHAR) ||
             p->LoggerNameOffset < sizeof *p)
        rc = W_BAD_LENGTH; /* [MS-start]: name room required */
    else if (is_kernel(c->name) &&
             memcmp(&p->Wnode.Guid, &system_trace_guid, sizeof(GUID)) != 0)
        rc = W_INVALID_PARAMETER;
    else if (!is_kernel(c->name) && !is_helper(c->name) &&
             (memcmp(&p->Wnode.Guid, &system_trace_guid, sizeof(GUID)) == 0 ||
              !(p->LogFileMode & EVENT_TRACE_SYSTEM_LOGGER_MODE)))
        rc = W_INVALID_PARAMETER; /* kernel events need a system logger */
    else if (is_helper(c->name) && (p->EnableFlags != 0 ||
                                    (p->LogFileMode & EVENT_TRACE_SYSTEM_LOGGER_MODE)))
        rc = W_INVALID_PARAMETER; /* EnableFlags are for system loggers only */
    else if (running != NULL && *running)
        rc = W_ALREADY_EXISTS;
    else if (busy != NULL && *busy > 0) {
        (*busy)--; /* the old session is still winding down */
        rc = W_ALREADY_EXISTS;
    } else {
        EVENT_TRACE_PROPERTIES *kept = props_of(c->name);

        if (running != NULL)
            *running = 1;
        *h = is_kernel(c->name) ? FAKE_KERNEL_LOGGER_ID : FAKE_HANDLE_BASE + fk.next_handle++;
        if (handle_of(c->name) != NULL) {
            *handle_of(c->name) = *h;
            *kept = *p;
            kept->LoggerThreadId = (HANDLE)(ULONG_PTR)(FAKE_THREAD_BASE + 4u * fk.next_thread++);
        }
        if (is_kernel(c->name))
            fk.kernel_other = 0;
        else if (!is_helper(c->name))
            fk.private_other = 0;
        if (is_helper(c->name)) {
            fk.helper_enabled = 0;
            ResetEvent(fk.helper_wake);
        } else if (kept != NULL) {
            /* What Windows kept of the undocumented flag (etw_fake.h). */
            switch (fk.cfg.flush_answer) {
            case DM_FAKE_FLUSH_FLAG_DROPPED:
                kept->LogFileMode &= ~FAKE_USE_MS_FLUSH_TIMER;
                break;
            case DM_FAKE_FLUSH_TIMER_ZERO:
                kept->FlushTimer = 0;
                break;
            case DM_FAKE_FLUSH_CLAMPED_TO_1:
                kept->LogFileMode &= ~FAKE_USE_MS_FLUSH_TIMER;
                kept->FlushTimer = 1;
                break;
            default:
                break;
            }
            /* The clock the session really uses, as QUERY shows it
             * (WNODE_HEADER ClientContext: 1 QPC, 2 system time, 3 CPU
             * cycles; 0, the default, is QPC). */
            if (fk.cfg.clock_answered)
                kept->Wnode.ClientContext = fk.cfg.clock_answer;
        }
        if (!is_helper(c->name)) {
            /* The delivery model follows the session diskmon reads. */
            fk.per_cpu = !(p->LogFileMode & EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING);
            fk.flush_honoured = (p->LogFileMode & FAKE_USE_MS_FLUSH_TIMER) &&
                                fk.cfg.flush_answer == DM_FAKE_FLUSH_HONOURED;
            set_flush_period(kept != NULL ? kept->FlushTimer : p->FlushTimer);
            fk.buffer_kb = p->BufferSize != 0 ? p->BufferSize : 64u;
            fk.zero_mask_seen = fk.rundown_triggered = 0;
        }
        if (is_kernel(c->name) || !is_helper(c->name)) {
            /* StartTrace's EnableFlags are the group mask's first ULONG
             * (TraceSetInformation page); the rest is the kernel's. */
            ULONG *m = is_kernel(c->name) ? fk.kernel_mask : fk.private_mask;

            memcpy(m, fk.cfg.group_mask_extra, sizeof fk.kernel_mask);
            m[0] = p->EnableFlags;
        }
    }
    if (rc != 0)
        *h = 0;
    c->rc = rc;
    unlock();
    return rc;
}

/*
 * ControlTrace. With a name, the handle is ignored and the call acts on
 * whatever session runs under that name now; with InstanceName NULL it acts
 * on the session of that handle, and fails (4201) once that session is
 * gone, even when another one of the same name runs [MS-ctl], docs/etw.md
 * §7 and §8. The call is logged under the session it acted on (by_name
 * says how it was named).
 */
static ULONG WINAPI fake_control(TRACEHANDLE h, LPCWSTR name,
                                 PEVENT_TRACE_PROPERTIES p, ULONG code)
{
    struct dm_fake_call *c;
    int *running = NULL;
    ULONG rc;

    lock();
    c = log_call(DM_FAKE_CONTROL, name);
    c->code = code;
    c->guid = p->Wnode.Guid;
    c->by_name = name != NULL;
    c->flush_timer = p->FlushTimer;
    c->enable_flags = p->EnableFlags;
    c->log_file_mode = p->LogFileMode;
    if (name == NULL) {
        /* The session this handle names, if it runs: for the NT Kernel
         * Logger whichever instance runs now (its handle is its id). */
        if (h != 0 && h == fk.kernel_handle && fk.kernel_running) {
            snprintf(c->name, sizeof c->name, "NT Kernel Logger");
            running = &fk.kernel_running;
            c->other_instance = fk.kernel_other;
        } else if (h != 0 && h == fk.private_handle && fk.private_running) {
            snprintf(c->name, sizeof c->name, "diskmon");
            running = &fk.private_running;
            c->other_instance = fk.private_other;
        } else if (h != 0 && h == fk.helper_handle && fk.helper_running) {
            snprintf(c->name, sizeof c->name, "diskmon rundown");
            running = &fk.helper_running;
        }
    } else {
        running = running_flag(c->name);
    }
    if (code == EVENT_TRACE_CONTROL_STOP && fk.cfg.stop_error != 0) {
        rc = fk.cfg.stop_error;
    } else if (code == EVENT_TRACE_CONTROL_QUERY && fk.cfg.query_error != 0) {
        rc = fk.cfg.query_error;
    } else if (running == NULL || !*running) {
        rc = W_NOT_FOUND;
    } else {
        EVENT_TRACE_PROPERTIES *now = props_of(c->name);

        if (code == FAKE_CONTROL_UPDATE) {
            /* The members the ControlTraceW page lets an UPDATE change:
             * FlushTimer (0: unchanged), EnableFlags (0 disables every
             * kernel provider of a system logger), LogFileMode's real-time
             * bit (OR-ed in; 0 turns real-time delivery off). */
            if (p->FlushTimer != 0)
                now->FlushTimer = p->FlushTimer;
            if (!is_helper(c->name))
                now->EnableFlags = p->EnableFlags;
            if (!(p->LogFileMode & EVENT_TRACE_REAL_TIME_MODE))
                now->LogFileMode &= ~(ULONG)EVENT_TRACE_REAL_TIME_MODE;
            if (!is_helper(c->name))
                set_flush_period(now->FlushTimer);
        }
        /* QUERY and STOP report the session's settings [MS-ctl]. */
        p->BufferSize = now->BufferSize;
        p->MinimumBuffers = now->MinimumBuffers;
        p->MaximumBuffers = now->MaximumBuffers;
        p->FlushTimer = now->FlushTimer;
        p->LogFileMode = now->LogFileMode;
        p->EnableFlags = now->EnableFlags;
        p->LoggerThreadId = now->LoggerThreadId;
        p->Wnode.ClientContext = now->Wnode.ClientContext;
        p->EventsLost = fk.cfg.events_lost;
        p->RealTimeBuffersLost = fk.cfg.rt_buffers_lost;
        rc = 0;
        if (!c->by_name && c->other_instance && code != EVENT_TRACE_CONTROL_QUERY)
            fk.touched_other++;
        if (code == FAKE_CONTROL_FLUSH)
            InterlockedExchange(&fk.flush_asked, 1);
        if (code == EVENT_TRACE_CONTROL_STOP) {
            unsigned *busy = busy_counter(c->name);

            *running = 0;
            if (busy != NULL)
                *busy = fk.cfg.busy_after_stop;
            /* "already stopping": the stop goes on all the same */
            if (fk.cfg.stop_active_connections)
                rc = W_ACTIVE_CONNECTIONS;
            if (running == &fk.helper_running)
                SetEvent(fk.helper_wake);
            else if (fk.consumer_open &&
                     fk.consumer_is_private == (running == &fk.private_running))
                SetEvent(fk.wake);
        }
    }
    c->rc = rc;
    unlock();
    return rc;
}

/* A consumer of this session is open (OpenTrace done, CloseTrace not). */
static int consumer_of(const char *name)
{
    if (is_helper(name))
        return fk.helper_open;
    return fk.consumer_open && fk.consumer_is_private == !is_kernel(name);
}

/* The start rundown of the session diskmon reads: its FileRundown copies,
 * stamped now, delivered first by ProcessTrace. Lock held. */
static void trigger_rundown(void)
{
    LARGE_INTEGER now;

    QueryPerformanceCounter(&now);
    fk.toggle_qpc = (uint64_t)now.QuadPart;
    fk.rundown_triggered = 1;
    for (size_t i = 0; i < fk.n_recs; i++)
        if (fk.recs[i].part == PART_COPY)
            fk.recs[i].er.EventHeader.TimeStamp.QuadPart = (LONGLONG)fk.toggle_qpc;
}

/*
 * EnableTraceEx2. Only the kernel rundown provider is modelled, on the
 * private session "diskmon" or on "diskmon rundown": with
 * KERNEL_FILE_KEYWORD_FILENAME it makes the kernel log a FileRundown for
 * every open file into that session (System Informer etwmon.c): the
 * sample's FileRundown records, stamped at this call, delivered to that
 * session's consumer, if one is open (file comment), else lost.
 */
static ULONG WINAPI fake_enable_trace(TRACEHANDLE h, LPCGUID provider, ULONG control_code,
                                      UCHAR level, ULONGLONG match_any,
                                      ULONGLONG match_all, ULONG timeout,
                                      PENABLE_TRACE_PARAMETERS params)
{
    struct dm_fake_call *c;
    ULONG rc = 0;

    (void)level;
    (void)match_all;
    (void)timeout;
    (void)params;
    lock();
    c = log_call(DM_FAKE_ENABLE, NULL);
    c->code = control_code;
    c->match_any = match_any;
    if (provider != NULL)
        c->guid = *provider;
    if (h != 0 && h == fk.private_handle && fk.private_running) {
        /* The kernel rundown provider on the private logger itself. */
        snprintf(c->name, sizeof c->name, "diskmon");
        if (fk.cfg.private_enable_error != 0 || fk.cfg.enable_error != 0)
            rc = fk.cfg.private_enable_error != 0 ? fk.cfg.private_enable_error
                                                  : fk.cfg.enable_error;
        else if (provider != NULL && control_code == EVENT_CONTROL_CODE_ENABLE_PROVIDER &&
                 memcmp(provider, &kernel_rundown_guid, sizeof(GUID)) == 0 &&
                 (match_any & FAKE_FILE_KEYWORD_FILENAME)) {
            if (consumer_of("diskmon"))
                trigger_rundown();
            else
                fk.rundown_lost++;
        }
    } else if (fk.cfg.enable_error != 0) {
        rc = fk.cfg.enable_error;
    } else if (h == 0 || h != fk.helper_handle || !fk.helper_running) {
        rc = W_INVALID_HANDLE;
    } else {
        snprintf(c->name, sizeof c->name, "diskmon rundown");
        if (provider != NULL && control_code == EVENT_CONTROL_CODE_ENABLE_PROVIDER &&
            memcmp(provider, &kernel_rundown_guid, sizeof(GUID)) == 0 &&
            (match_any & FAKE_FILE_KEYWORD_FILENAME)) {
            LARGE_INTEGER now;

            QueryPerformanceCounter(&now);
            fk.helper_qpc = (uint64_t)now.QuadPart;
            if (consumer_of("diskmon rundown"))
                fk.helper_enabled = 1;
            else
                fk.rundown_lost++;
        }
    }
    c->rc = rc;
    unlock();
    return rc;
}

/* ProcessTrace of the helper's consumer: the rundown (if enabled), then
 * nothing until the helper is stopped or its consumer closed. */
static ULONG helper_process(PEVENT_TRACE_LOGFILEW lf)
{
    for (size_t i = 0; fk.helper_enabled && i < fk.n_recs; i++) {
        if (fk.recs[i].part != PART_COPY)
            continue;
        fk.recs[i].er.EventHeader.TimeStamp.QuadPart = (LONGLONG)fk.helper_qpc;
        fk.recs[i].er.UserContext = lf->Context;
        lf->EventRecordCallback(&fk.recs[i].er);
        fk.helper_delivered++;
    }
    if (lf->BufferCallback != NULL)
        lf->BufferCallback(lf);
    /* helper_trickle: one more name a millisecond (the first copy again)
     * until the helper is stopped or closed, so names still arrive while
     * the main consumer ends. */
    for (size_t i = 0; fk.cfg.helper_trickle && fk.helper_enabled && i < fk.n_recs; i++) {
        if (fk.recs[i].part != PART_COPY)
            continue;
        while (WaitForSingleObject(fk.helper_wake, 1) == WAIT_TIMEOUT) {
            lf->EventRecordCallback(&fk.recs[i].er);
            fk.helper_delivered++;
        }
        break;
    }
    WaitForSingleObject(fk.helper_wake, FAKE_WAIT_CAP_MS);
    return 0;
}

/*
 * TraceSetInformation. Only TraceSystemTraceEnableFlagsInfo is modelled: a
 * PERFINFO_GROUPMASK of all zeros followed by a nonzero one triggers the
 * start-time rundown (fibratus internal/etw/trace.go; see the file
 * comment), stamped now.
 */
static ULONG WINAPI fake_set_information(TRACEHANDLE h, TRACE_INFO_CLASS info_class,
                                         PVOID info, ULONG length)
{
    struct dm_fake_call *c;
    ULONG mask[8];
    ULONG rc = 0;
    int zero = 1;

    lock();
    c = log_call(DM_FAKE_SET_INFO, NULL);
    c->code = (ULONG)info_class;
    if (info != NULL && length >= sizeof mask) {
        memcpy(mask, info, sizeof mask);
        c->enable_flags = mask[0];
        for (size_t i = 0; i < 8; i++)
            zero &= mask[i] == 0;
    }
    if (fk.cfg.set_info_error != 0)
        rc = fk.cfg.set_info_error;
    else if (!(h == fk.kernel_handle && fk.kernel_running) &&
             !(h == fk.private_handle && fk.private_running))
        rc = W_INVALID_HANDLE;
    else if (info_class != TraceSystemTraceEnableFlagsInfo || info == NULL ||
             length < sizeof mask)
        rc = W_INVALID_PARAMETER;
    else {
        /* The session now has this group mask, all of it. */
        memcpy(h == fk.kernel_handle ? fk.kernel_mask : fk.private_mask, mask, sizeof mask);
        if (zero)
            fk.zero_mask_seen = 1;
        else if (fk.zero_mask_seen) {
            if (consumer_of(h == fk.kernel_handle ? "NT Kernel Logger" : "diskmon"))
                trigger_rundown();
            else
                fk.rundown_lost++;
        }
    }
    c->rc = rc;
    unlock();
    return rc;
}

/* TraceQueryInformation, TraceSystemTraceEnableFlagsInfo only: the
 * session's whole group mask (8 ULONGs), its length in *returned. */
static ULONG WINAPI fake_query_information(TRACEHANDLE h, TRACE_INFO_CLASS info_class,
                                           PVOID info, ULONG length, PULONG returned)
{
    ULONG rc = 0;

    lock();
    if (returned != NULL)
        *returned = 0;
    if (fk.cfg.query_info_error != 0)
        rc = fk.cfg.query_info_error;
    else if (!(h == fk.kernel_handle && fk.kernel_running) &&
             !(h == fk.private_handle && fk.private_running))
        rc = W_INVALID_HANDLE;
    else if (info_class != TraceSystemTraceEnableFlagsInfo || info == NULL ||
             length < sizeof fk.kernel_mask)
        rc = W_INVALID_PARAMETER;
    else {
        memcpy(info, h == fk.kernel_handle ? fk.kernel_mask : fk.private_mask,
               sizeof fk.kernel_mask);
        if (returned != NULL)
            *returned = (ULONG)sizeof fk.kernel_mask;
    }
    unlock();
    return rc;
}

static unsigned all_groups_cpus(void)
{
    unsigned n = 0;

    for (size_t g = 0; g < sizeof fk.cfg.group_cpus / sizeof fk.cfg.group_cpus[0]; g++)
        n += fk.cfg.group_cpus[g];
    return n;
}

/* GetSystemInfo: dwNumberOfProcessors counts the processors of the
 * calling process's group (SYSTEM_INFO page, Processor Groups page). */
static VOID WINAPI fake_get_system_info(LPSYSTEM_INFO info)
{
    GetSystemInfo(info);
    if (all_groups_cpus() != 0)
        info->dwNumberOfProcessors = fk.cfg.group_cpus[fk.cfg.process_group];
}

/* GetActiveProcessorCount: one group's, or every group's with
 * ALL_PROCESSOR_GROUPS. */
static DWORD WINAPI fake_active_processor_count(WORD group)
{
    if (all_groups_cpus() == 0)
        return GetActiveProcessorCount(group);
    if (group == ALL_PROCESSOR_GROUPS)
        return all_groups_cpus();
    return group < 4 ? fk.cfg.group_cpus[group] : 0;
}

int dm_fake_group_mask(ULONG mask[8])
{
    int running;

    lock();
    running = fk.kernel_running || fk.private_running;
    memcpy(mask, fk.kernel_running ? fk.kernel_mask : fk.private_mask, sizeof fk.kernel_mask);
    unlock();
    return running;
}

void dm_fake_set_process_group(unsigned group)
{
    lock();
    fk.cfg.process_group = group;
    unlock();
}

/* Trace ticks -> ticks of this machine's QPC, counted from base. */
static void rebase_records(uint64_t base)
{
    LARGE_INTEGER qpf;

    QueryPerformanceFrequency(&qpf);
    for (size_t i = 0; i < fk.n_recs; i++) {
        uint64_t d = fk.recs[i].trace_ts >= fk.header_ts
                         ? fk.recs[i].trace_ts - fk.header_ts
                         : 0;

        if (fk.trace_freq != 0 && (uint64_t)qpf.QuadPart != fk.trace_freq)
            d = d / fk.trace_freq * (uint64_t)qpf.QuadPart +
                d % fk.trace_freq * (uint64_t)qpf.QuadPart / fk.trace_freq;
        if (fk.recs[i].part != PART_COPY)
            fk.recs[i].er.EventHeader.TimeStamp.QuadPart = (LONGLONG)(base + d);
    }
}

static TRACEHANDLE WINAPI fake_open(PEVENT_TRACE_LOGFILEW lf)
{
    struct dm_fake_call *c;
    LARGE_INTEGER now, qpf;

    lock();
    c = log_call(DM_FAKE_OPEN, lf->LoggerName);
    c->log_file_mode = lf->ProcessTraceMode;
    if (is_helper(c->name)) {
        if (!fk.helper_running || fk.cfg.helper_open_error != 0) {
            c->rc = fk.helper_running ? fk.cfg.helper_open_error : W_NOT_FOUND;
            unlock();
            SetLastError(c->rc);
            return (TRACEHANDLE)INVALID_PROCESSTRACE_HANDLE;
        }
        fk.helper_lf = lf;
        fk.helper_open = 1;
        unlock();
        return FAKE_HELPER_CONSUMER;
    }
    if (fk.cfg.open_error != 0) {
        c->rc = fk.cfg.open_error;
        unlock();
        SetLastError(fk.cfg.open_error);
        return (TRACEHANDLE)INVALID_PROCESSTRACE_HANDLE;
    }
    fk.logfile = lf;
    fk.consumer_open = 1;
    fk.consumer_is_private = !is_kernel(c->name);
    ResetEvent(fk.wake);
    QueryPerformanceFrequency(&qpf);
    QueryPerformanceCounter(&now);
    /* A real-time session reports 4 here even on x64 (PerfView
     * ETWTraceEventSource.cs): the fake does the same, so only the event
     * header flags or the OS bitness can be trusted. */
    lf->LogfileHeader.PointerSize = 4;
    lf->LogfileHeader.NumberOfProcessors =
        fk.cfg.load.n_cpus > 0 ? fk.cfg.load.n_cpus : fk.n_cpus;
    lf->LogfileHeader.PerfFreq = qpf;
    rebase_records((uint64_t)now.QuadPart);
    for (size_t i = 0; i < fk.n_recs; i++)
        fk.recs[i].er.UserContext = lf->Context;
    unlock();
    return FAKE_CONSUMER;
}

static int trace_ts_less(size_t a, size_t b)
{
    return fk.recs[a].trace_ts < fk.recs[b].trace_ts;
}

static int add_buf(size_t *cap_bufs, size_t first, size_t count)
{
    if (count == 0)
        return 0;
    if (fk.n_bufs == *cap_bufs) {
        size_t ncap = *cap_bufs ? *cap_bufs * 2 : 256;
        struct fake_buf *n = realloc(fk.bufs, ncap * sizeof *n);

        if (n == NULL)
            return -1;
        fk.bufs = n;
        *cap_bufs = ncap;
    }
    fk.bufs[fk.n_bufs].first = first;
    fk.bufs[fk.n_bufs].count = count;
    fk.n_bufs++;
    return 0;
}

/* Stable sort of order[lo..hi) by the sample buffer the record came from
 * (file offset = flush order); records of one buffer keep time order. */
static int buffer_cmp(const void *pa, const void *pb)
{
    const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

    if (fk.recs[a].buffer != fk.recs[b].buffer)
        return fk.recs[a].buffer < fk.recs[b].buffer ? -1 : 1;
    return a < b ? -1 : a > b; /* indices are in time order: stable */
}

/*
 * The delivery plan, in three parts: the start-time rundown copies (if the
 * toggle happened), the main records (per CPU buffer in flush order, or in
 * global time order in chunks), and the end rundown. Returns the index of
 * the first main buffer and sets *end_first to the first end-rundown buffer.
 */
static int build_plan(size_t *main_first, size_t *end_first)
{
    size_t per_buffer = fk.cfg.buffer_records != 0 ? fk.cfg.buffer_records : 64;
    size_t n = 0, cap_bufs = 0, start;

    free(fk.order);
    free(fk.bufs);
    fk.bufs = NULL;
    fk.n_bufs = 0;
    fk.order = malloc((fk.n_recs + 1) * sizeof *fk.order);
    if (fk.order == NULL)
        return -1;
    /* 1. the copies, as buffers of per_buffer records */
    start = n;
    if (fk.rundown_triggered)
        for (size_t i = 0; i < fk.n_recs; i++)
            if (fk.recs[i].part == PART_COPY)
                fk.order[n++] = i;
    for (size_t i = start; i < n; i += per_buffer)
        if (add_buf(&cap_bufs, i, n - i < per_buffer ? n - i : per_buffer) < 0)
            return -1;
    *main_first = fk.n_bufs;
    /* 2. the main records */
    start = n;
    for (size_t i = 0; i < fk.n_recs; i++)
        if (fk.recs[i].part == PART_MAIN)
            fk.order[n++] = i;
    if (fk.per_cpu) {
        qsort(fk.order + start, n - start, sizeof *fk.order, buffer_cmp);
        for (size_t i = start; i < n;) {
            size_t j = i + 1;

            while (j < n && fk.recs[fk.order[j]].buffer == fk.recs[fk.order[i]].buffer)
                j++;
            if (add_buf(&cap_bufs, i, j - i) < 0)
                return -1;
            i = j;
        }
    } else {
        for (size_t i = start; i < n; i += per_buffer)
            if (add_buf(&cap_bufs, i, n - i < per_buffer ? n - i : per_buffer) < 0)
                return -1;
    }
    *end_first = fk.n_bufs;
    /* 3. the end rundown, in time order */
    start = n;
    for (size_t i = 0; i < fk.n_recs; i++)
        if (fk.recs[i].part == PART_END)
            fk.order[n++] = i;
    for (size_t i = start; i < n; i += per_buffer)
        if (add_buf(&cap_bufs, i, n - i < per_buffer ? n - i : per_buffer) < 0)
            return -1;
    return 0;
}

/* Deliver buffers [from, to): each record through the EventRecordCallback,
 * the BufferCallback after each buffer. Returns 0, or W_CANCELLED when the
 * BufferCallback said FALSE. after_stop counts the records. */
static ULONG deliver(PEVENT_TRACE_LOGFILEW lf, size_t from, size_t to, int after_stop,
                     size_t *last)
{
    for (size_t b = from; b < to; b++) {
        const struct fake_buf *fb = &fk.bufs[b];

        if (*last != SIZE_MAX && fb->count > 0 && trace_ts_less(fk.order[fb->first], *last))
            fk.out_of_order++;
        for (size_t k = 0; k < fb->count; k++) {
            size_t i = fk.order[fb->first + k];

            lf->EventRecordCallback(&fk.recs[i].er);
            dm_atomic_store_release(&fk.delivered, dm_atomic_load_relaxed(&fk.delivered) + 1);
            if (after_stop)
                fk.after_stop++;
            if (*last == SIZE_MAX || !trace_ts_less(i, *last))
                *last = i;
        }
        if (lf->BufferCallback != NULL && !lf->BufferCallback(lf))
            return W_CANCELLED;
    }
    return 0;
}


/* ---- the live model (etw_fake.h, struct dm_fake_load) ------------------- */

/* A DiskIo v3 completion on x64 is 52 bytes; in a buffer it sits behind a
 * 16-byte PERFINFO64 header, 8-aligned: 72 bytes (docs/etw.md §3, §4). */
#define LIVE_PAYLOAD 52u
#define LIVE_RECORD_BYTES 72u
#define LIVE_OP_READ 10u
#define LIVE_FILE_OBJECT 0xFFFFA00000001000u
/* FileIo_Name on x64: FileObject, then the UTF-16 name (docs/etw.md §2). */
#define LIVE_NAME_UNITS 40u
#define LIVE_NAME_PAYLOAD (8u + 2u * LIVE_NAME_UNITS)

struct live_rec {
    EVENT_RECORD er;
    uint8_t payload[LIVE_PAYLOAD];
};

struct live_cpu {
    struct live_rec *recs;  /* the CPU's buffer, cap records */
    size_t n;
    uint64_t logged;        /* records this CPU logged so far */
    uint64_t rate;          /* records per second */
};

struct live_model {
    PEVENT_TRACE_LOGFILEW lf;
    struct live_cpu *cpus;
    unsigned n_cpus;
    size_t cap;
    uint64_t freq, t0, last_ts;
    int any_delivered;
    uint32_t shuffle;       /* LCG state for the flush order */
};

static void put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof v);
}

/* Log one DiskIo Read completion on cpu, stamped ts: the offsets of the
 * DiskIo TypeGroup1 v3 x64 table (docs/etw.md §3). */
static void live_log(struct live_model *m, unsigned cpu, uint64_t ts)
{
    struct live_cpu *lc = &m->cpus[cpu];
    struct live_rec *r = &lc->recs[lc->n++];
    uint64_t k = lc->logged++;

    memset(r, 0, sizeof *r);
    r->er.EventHeader.Size = (USHORT)sizeof(EVENT_HEADER);
    r->er.EventHeader.ProviderId = diskio_guid;
    r->er.EventHeader.EventDescriptor.Opcode = LIVE_OP_READ;
    r->er.EventHeader.EventDescriptor.Version = 3;
    r->er.EventHeader.Flags = (USHORT)(EVENT_HEADER_FLAG_CLASSIC_HEADER |
                                       EVENT_HEADER_FLAG_PROCESSOR_INDEX |
                                       EVENT_HEADER_FLAG_64_BIT_HEADER);
    r->er.EventHeader.ThreadId = UINT32_MAX; /* PERFINFO: no thread */
    r->er.EventHeader.ProcessId = UINT32_MAX;
    r->er.EventHeader.TimeStamp.QuadPart = (LONGLONG)ts;
    r->er.BufferContext.ProcessorIndex = (USHORT)cpu;
    r->er.UserContext = m->lf->Context;
    put_u32(r->payload + 0, 0);                       /* DiskNumber */
    put_u32(r->payload + 4, 0);                       /* IrpFlags */
    put_u32(r->payload + 8, 4096);                    /* TransferSize */
    put_u64(r->payload + 16, k * 4096u);              /* ByteOffset */
    put_u64(r->payload + 24, LIVE_FILE_OBJECT);       /* FileObject: file 0 */
    put_u64(r->payload + 32, (uint64_t)(cpu + 1) << 40 | k); /* Irp */
    put_u64(r->payload + 40, 1000);                   /* HighResResponseTime */
    put_u32(r->payload + 48, 100u + cpu);             /* IssuingThreadId */
    r->er.UserData = r->payload;
    r->er.UserDataLength = LIVE_PAYLOAD;
    fk.logged++;
}

/* Deliver cpu's buffer (if it holds events). Returns 0 or W_CANCELLED. */
static ULONG live_deliver(struct live_model *m, unsigned cpu, int after_stop)
{
    struct live_cpu *lc = &m->cpus[cpu];

    if (lc->n == 0)
        return 0;
    if (m->any_delivered &&
        (uint64_t)lc->recs[0].er.EventHeader.TimeStamp.QuadPart < m->last_ts)
        fk.out_of_order++;
    for (size_t i = 0; i < lc->n; i++) {
        uint64_t ts = (uint64_t)lc->recs[i].er.EventHeader.TimeStamp.QuadPart;

        m->lf->EventRecordCallback(&lc->recs[i].er);
        dm_atomic_store_release(&fk.delivered, dm_atomic_load_relaxed(&fk.delivered) + 1);
        if (after_stop)
            fk.after_stop++;
        if (!m->any_delivered || ts > m->last_ts)
            m->last_ts = ts;
        m->any_delivered = 1;
    }
    lc->n = 0;
    if (m->lf->BufferCallback != NULL && !m->lf->BufferCallback(m->lf))
        return W_CANCELLED;
    return 0;
}

/* Every buffer that holds events, the CPUs in a shuffled order. */
static ULONG live_flush_all(struct live_model *m, int after_stop)
{
    unsigned start;
    ULONG rc = 0;

    m->shuffle = m->shuffle * 1103515245u + 12345u;
    start = (m->shuffle >> 16) % m->n_cpus;
    for (unsigned i = 0; i < m->n_cpus && rc == 0; i++) {
        /* a stride coprime to n_cpus when it is odd; else plain rotation */
        unsigned cpu = (start + i * (m->n_cpus % 2 == 1 ? 2u : 1u)) % m->n_cpus;

        if (m->cpus[cpu].n > 0 && !after_stop)
            fk.timer_buffers++;
        rc = live_deliver(m, cpu, after_stop);
    }
    return rc;
}

/* Log what is due by now; a buffer that fills is delivered at once. */
static ULONG live_log_due(struct live_model *m, uint64_t now)
{
    const struct dm_fake_load *ld = &fk.cfg.load;
    uint64_t elapsed = now - m->t0;

    if (ld->single_io_ms > 0) {
        uint64_t at = m->t0 + m->freq * ld->single_io_ms / 1000u;

        if (now >= at && fk.logged == 0) {
            unsigned cpu = m->n_cpus > 1 ? 1u : 0u;

            live_log(m, cpu, at);
            fk.single_io_qpc = at;
            SetEvent(fk.replayed);
        }
        return 0;
    }
    if (elapsed > m->freq * ld->duration_ms / 1000u) {
        SetEvent(fk.replayed);
        elapsed = m->freq * ld->duration_ms / 1000u;
    }
    for (unsigned cpu = 0; cpu < m->n_cpus; cpu++) {
        struct live_cpu *lc = &m->cpus[cpu];
        uint64_t due = lc->rate == 0 ? 0 : elapsed / m->freq * lc->rate +
                                               elapsed % m->freq * lc->rate / m->freq;

        while (lc->logged < due) {
            /* record k was logged at t0 + k / rate (a steady rate). */
            uint64_t k = lc->logged;
            uint64_t ts = m->t0 + k / lc->rate * m->freq + k % lc->rate * m->freq / lc->rate;

            live_log(m, cpu, ts);
            if (lc->n == m->cap) {
                fk.full_buffers++;
                if (live_deliver(m, cpu, 0) != 0)
                    return W_CANCELLED;
            }
        }
    }
    return 0;
}

/* The start rundown of the live model: rundown_files FileRundown records
 * stamped when the toggle happened, in buffers of CPU 0 as full as 64 KB
 * of such records allows. Returns 0 or W_CANCELLED. */
static ULONG live_rundown(struct live_model *m)
{
    struct name_rec {
        EVENT_RECORD er;
        uint8_t payload[LIVE_NAME_PAYLOAD];
    } *recs;
    /* A PERFINFO64 header (16) and the payload, 8-aligned (docs/etw.md §4). */
    size_t per_buf = (size_t)fk.buffer_kb * 1024u / ((16u + LIVE_NAME_PAYLOAD + 7u) & ~7u);
    ULONG rc = 0;

    recs = malloc(per_buf * sizeof *recs);
    if (recs == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    for (unsigned first = 0; first < fk.cfg.load.rundown_files && rc == 0; first += (unsigned)per_buf) {
        size_t n = 0;

        for (unsigned i = first; i < fk.cfg.load.rundown_files && n < per_buf; i++, n++) {
            struct name_rec *r = &recs[n];
            char name[LIVE_NAME_UNITS];
            size_t k;

            memset(r, 0, sizeof *r);
            r->er.EventHeader.Size = (USHORT)sizeof(EVENT_HEADER);
            r->er.EventHeader.ProviderId = fileio_guid;
            r->er.EventHeader.EventDescriptor.Opcode = OP_FILE_RUNDOWN;
            r->er.EventHeader.EventDescriptor.Version = 2;
            r->er.EventHeader.Flags = (USHORT)(EVENT_HEADER_FLAG_CLASSIC_HEADER |
                                               EVENT_HEADER_FLAG_PROCESSOR_INDEX |
                                               EVENT_HEADER_FLAG_64_BIT_HEADER);
            r->er.EventHeader.ThreadId = UINT32_MAX;
            r->er.EventHeader.ProcessId = UINT32_MAX;
            r->er.EventHeader.TimeStamp.QuadPart = (LONGLONG)fk.toggle_qpc;
            r->er.UserContext = m->lf->Context;
            put_u64(r->payload, LIVE_FILE_OBJECT + 0x150u * (uint64_t)i);
            snprintf(name, sizeof name, "\\Device\\DmTest\\f%u.txt", i);
            for (k = 0; name[k] != '\0'; k++) {
                r->payload[8 + 2 * k] = (uint8_t)name[k];
                r->payload[9 + 2 * k] = 0;
            }
            r->er.UserData = r->payload;
            r->er.UserDataLength = (USHORT)(8u + 2u * (k + 1u));
        }
        for (size_t i = 0; i < n; i++) {
            m->lf->EventRecordCallback(&recs[i].er);
            dm_atomic_store_release(&fk.delivered, dm_atomic_load_relaxed(&fk.delivered) + 1);
        }
        if (m->lf->BufferCallback != NULL && !m->lf->BufferCallback(m->lf))
            rc = W_CANCELLED;
    }
    free(recs);
    return rc;
}

static ULONG live_run(PEVENT_TRACE_LOGFILEW lf, int *running)
{
    const struct dm_fake_load *ld = &fk.cfg.load;
    struct live_model m;
    LARGE_INTEGER qpf, now;
    uint64_t flush_ticks, next_flush;
    ULONG rc = 0;
    int stopped = 0;

    memset(&m, 0, sizeof m);
    m.lf = lf;
    m.n_cpus = ld->n_cpus;
    m.cap = (size_t)fk.buffer_kb * 1024u / LIVE_RECORD_BYTES;
    m.shuffle = 12345u;
    m.cpus = calloc(m.n_cpus, sizeof *m.cpus);
    for (unsigned c = 0; m.cpus != NULL && c < m.n_cpus; c++) {
        m.cpus[c].recs = malloc(m.cap * sizeof *m.cpus[c].recs);
        m.cpus[c].rate = c < ld->busy_cpus ? ld->busy_rate / ld->busy_cpus : ld->quiet_rate;
        if (m.cpus[c].recs == NULL)
            rc = ERROR_NOT_ENOUGH_MEMORY;
    }
    if (m.cpus == NULL)
        rc = ERROR_NOT_ENOUGH_MEMORY;
    QueryPerformanceFrequency(&qpf);
    QueryPerformanceCounter(&now);
    m.freq = (uint64_t)qpf.QuadPart;
    m.t0 = (uint64_t)now.QuadPart;
    flush_ticks = m.freq * fk.flush_ms / 1000u;
    next_flush = m.t0 + flush_ticks;
    if (rc == 0 && ld->rundown_files > 0 && fk.rundown_triggered)
        rc = live_rundown(&m);
    while (rc == 0) {
        uint64_t t;

        QueryPerformanceCounter(&now);
        t = (uint64_t)now.QuadPart;
        rc = live_log_due(&m, t);
        if (rc == 0 && (t >= next_flush || InterlockedExchange(&fk.flush_asked, 0))) {
            rc = live_flush_all(&m, 0);
            while (next_flush <= t)
                next_flush += flush_ticks;
        }
        if (rc == 0 && WaitForSingleObject(fk.wake, 1) == WAIT_OBJECT_0)
            break;
    }
    if (rc == 0) {
        lock();
        stopped = running == NULL || !*running;
        unlock();
        /* At stop every buffer that holds events is delivered [MS-ctl]. */
        if (stopped)
            rc = live_flush_all(&m, 1);
    }
    for (unsigned c = 0; m.cpus != NULL && c < m.n_cpus; c++)
        free(m.cpus[c].recs);
    free(m.cpus);
    return rc;
}

static ULONG WINAPI fake_process(PTRACEHANDLE handles, ULONG count,
                                 LPFILETIME start, LPFILETIME end)
{
    struct dm_fake_call *c;
    PEVENT_TRACE_LOGFILEW lf;
    size_t main_first = 0, end_first = 0, queued_first, last = SIZE_MAX;
    uint64_t t0;
    ULONG rc = 0;
    int *running;

    (void)start;
    (void)end;
    if (count == 1 && handles != NULL && handles[0] == FAKE_HELPER_CONSUMER) {
        lock();
        c = log_call(DM_FAKE_PROCESS, L"diskmon rundown");
        lf = fk.helper_open ? fk.helper_lf : NULL;
        c->rc = lf != NULL ? 0 : W_INVALID_HANDLE;
        unlock();
        return lf != NULL ? helper_process(lf) : W_INVALID_HANDLE;
    }
    lock();
    c = log_call(DM_FAKE_PROCESS, fk.logfile != NULL ? fk.logfile->LoggerName : NULL);
    lf = fk.logfile;
    running = running_flag(c->name);
    if (count != 1 || handles == NULL || handles[0] != FAKE_CONSUMER ||
        !fk.consumer_open || lf == NULL)
        rc = W_INVALID_HANDLE;
    else if (fk.cfg.process_error != 0)
        rc = fk.cfg.process_error;
    else if (running == NULL || !*running)
        rc = W_NOT_FOUND;
    else if (fk.cfg.load.n_cpus == 0 && build_plan(&main_first, &end_first) < 0)
        rc = ERROR_NOT_ENOUGH_MEMORY;
    c->rc = rc;
    if (rc != 0) {
        unlock();
        return rc;
    }
    InterlockedExchange(&fk.in_process, 1);
    unlock();
    if (fk.cfg.load.n_cpus > 0) {
        rc = live_run(lf, running);
        InterlockedExchange(&fk.in_process, 0);
        return rc;
    }

    /* Deliver outside the lock, as ETW does: the callback may call
     * ControlTrace or CloseTrace from another thread meanwhile. Buffers
     * already flushed are delivered whatever happens meanwhile; the last
     * queued_buffers ones only once the session stopped. */
    queued_first = end_first - main_first > fk.cfg.queued_buffers
                       ? end_first - fk.cfg.queued_buffers
                       : main_first;
    t0 = dm_monotonic_ns();
    rc = deliver(lf, 0, queued_first, 0, &last);
    fk.replay_ns = dm_monotonic_ns() - t0;
    SetEvent(fk.replayed);
    if (rc == 0 && fk.cfg.end_after_replay) {
        /* Another tool stops the session: what was queued and the end
         * rundown still come, then ProcessTrace returns on its own. */
        lock();
        if (running != NULL)
            *running = 0;
        unlock();
        rc = deliver(lf, queued_first, fk.n_bufs, 1, &last);
        if (fk.cfg.outside_restart) {
            lock();
            if (running != NULL) {
                TRACEHANDLE *their = running == &fk.kernel_running ? &fk.kernel_handle
                                                                   : &fk.private_handle;

                *running = 1; /* their new session, under the same name */
                if (running == &fk.kernel_running) {
                    *their = FAKE_KERNEL_LOGGER_ID; /* the same id: the handle names it */
                    fk.kernel_other = 1;
                } else {
                    *their = FAKE_HANDLE_BASE + fk.next_handle++;
                    fk.private_other = 1;
                }
                other_tool_props(running == &fk.kernel_running ? &fk.kernel_props
                                                               : &fk.private_props);
            }
            unlock();
        }
        /* ProcessTrace may return seconds after an outside stop [MS-proc]:
         * a Ctrl+C can come meanwhile. CloseTrace ends the wait. */
        if (fk.cfg.outside_lag_ms > 0)
            WaitForSingleObject(fk.wake, fk.cfg.outside_lag_ms);
    } else if (rc == 0) {
        int stopped;

        if (WaitForSingleObject(fk.wake, FAKE_WAIT_CAP_MS) != WAIT_OBJECT_0) {
            InterlockedExchange(&fk.in_process, 0);
            return W_TIMEOUT; /* nobody stopped the session: a bug to report */
        }
        lock();
        stopped = running == NULL || !*running;
        unlock();
        /* Queued buffers first; the end rundown only if the session was
         * stopped (CloseTrace alone ends the consumer, not the session). */
        rc = deliver(lf, queued_first, end_first, 1, &last);
        if (rc == 0 && stopped)
            rc = deliver(lf, end_first, fk.n_bufs, 1, &last);
    }
    InterlockedExchange(&fk.in_process, 0);
    return rc;
}

static ULONG WINAPI fake_close(TRACEHANDLE h)
{
    struct dm_fake_call *c;
    ULONG rc;

    lock();
    if (h == FAKE_HELPER_CONSUMER) {
        c = log_call(DM_FAKE_CLOSE, L"diskmon rundown");
        rc = fk.helper_open ? 0 : W_INVALID_HANDLE;
        fk.helper_open = 0;
        SetEvent(fk.helper_wake);
        c->rc = rc;
        unlock();
        return rc;
    }
    c = log_call(DM_FAKE_CLOSE, fk.logfile != NULL ? fk.logfile->LoggerName : NULL);
    if (h != FAKE_CONSUMER || !fk.consumer_open) {
        rc = W_INVALID_HANDLE;
    } else {
        fk.consumer_open = 0;
        SetEvent(fk.wake);
        rc = InterlockedCompareExchange(&fk.in_process, 0, 0) ? W_CLOSE_PENDING : 0;
    }
    c->rc = rc;
    unlock();
    return rc;
}

static const struct dm_etw_api fake_api = {
    fake_start, fake_control, fake_open, fake_process, fake_close, fake_set_information,
    fake_enable_trace, fake_query_information, fake_get_system_info,
    fake_active_processor_count,
};

static const GUID *group_guid(unsigned group, GUID *other)
{
    switch (group) {
    case 0:
        return &eventtrace_guid;
    case 1:
        return &diskio_guid;
    case 3:
        return &process_guid;
    case 4:
        return &fileio_guid;
    case 5:
        return &thread_guid;
    default:
        *other = other_guid_base;
        other->Data4[7] = (unsigned char)group;
        return other;
    }
}

/* Append one record; payload bytes go to the arena as an offset for now. */
static int add_record(size_t *cap, size_t *arena_len, size_t *arena_cap,
                      const GUID *guid, unsigned opcode, unsigned version,
                      unsigned pointer_size, uint32_t tid, uint32_t pid,
                      uint64_t ts, const uint8_t *payload, size_t len,
                      unsigned cpu, uint64_t buffer, enum fake_part part)
{
    struct fake_record *r;

    if (fk.n_recs == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4096;
        struct fake_record *n = realloc(fk.recs, ncap * sizeof *n);

        if (n == NULL)
            return DM_ENOMEM;
        fk.recs = n;
        *cap = ncap;
    }
    if (*arena_len + len > *arena_cap) {
        size_t ncap = *arena_cap ? *arena_cap * 2 : 1u << 20;
        uint8_t *n;

        while (ncap < *arena_len + len)
            ncap *= 2;
        n = realloc(fk.arena, ncap);
        if (n == NULL)
            return DM_ENOMEM;
        fk.arena = n;
        *arena_cap = ncap;
    }
    if (len > 0)
        memcpy(fk.arena + *arena_len, payload, len);
    r = &fk.recs[fk.n_recs++];
    memset(r, 0, sizeof *r);
    r->er.EventHeader.Size = (USHORT)sizeof(EVENT_HEADER);
    r->er.EventHeader.ProviderId = *guid;
    r->er.EventHeader.EventDescriptor.Opcode = (UCHAR)opcode;
    r->er.EventHeader.EventDescriptor.Version = (UCHAR)version;
    r->er.EventHeader.Flags = (USHORT)(EVENT_HEADER_FLAG_CLASSIC_HEADER |
                                       EVENT_HEADER_FLAG_PROCESSOR_INDEX);
    if (!fk.cfg.strip_pointer_flags)
        r->er.EventHeader.Flags =
            (USHORT)(r->er.EventHeader.Flags | (pointer_size == 4 ? EVENT_HEADER_FLAG_32_BIT_HEADER
                                                                  : EVENT_HEADER_FLAG_64_BIT_HEADER));
    r->er.BufferContext.ProcessorIndex = (USHORT)cpu;
    r->er.EventHeader.ThreadId = tid;
    r->er.EventHeader.ProcessId = pid;
    r->er.UserDataLength = (USHORT)len;
    r->er.UserData = (PVOID)(uintptr_t)*arena_len; /* fixed up after loading */
    r->trace_ts = ts;
    r->cpu = cpu;
    r->buffer = buffer;
    r->part = part;
    *arena_len += len;
    return 0;
}

static int load_sample(const char *path, char *err, size_t errlen)
{
    struct dm_etl *etl;
    struct dm_etl_record rec;
    size_t cap = 0, arena_len = 0, arena_cap = 0;
    int rc;

    for (int op = 0; op < 3; op++)
        for (unsigned i = 0; i < fk.cfg.rt_lost[op]; i++) {
            rc = add_record(&cap, &arena_len, &arena_cap, &rt_lost_guid,
                            32u + (unsigned)op, 2, 8, UINT32_MAX, UINT32_MAX, 0,
                            NULL, 0, 0, 0, PART_MAIN);
            if (rc < 0)
                return rc;
        }
    if (path != NULL) {
        rc = dm_etl_open(&etl, path, err, errlen);
        if (rc < 0)
            return rc;
        fk.header_ts = dm_etl_info(etl)->header_timestamp;
        fk.trace_freq = dm_etl_info(etl)->perf_freq;
        fk.n_cpus = dm_etl_info(etl)->number_of_processors;
        while ((rc = dm_etl_next(etl, &rec, err, errlen)) == 1) {
            GUID g, other;
            enum dm_kclass kclass;
            enum fake_part part;

            /* The trace header record exists in files only, never in a
             * real-time session (docs/etw.md §2). */
            if (!rec.has_guid && rec.group == 0 && rec.opcode == 0)
                continue;
            if (rec.payload_len > USHRT_MAX)
                continue;
            if (rec.has_guid)
                memcpy(&g, rec.guid, sizeof g);
            else
                g = *group_guid(rec.group, &other);
            kclass = dm_kclass_from_guid((const uint8_t *)&g);
            part = (kclass == DM_K_FILEIO && rec.opcode == OP_FILE_RUNDOWN) ||
                           ((kclass == DM_K_PROCESS || kclass == DM_K_THREAD) &&
                            rec.opcode == OP_DCEND)
                       ? PART_END
                       : PART_MAIN;
            rc = add_record(&cap, &arena_len, &arena_cap, &g, rec.opcode,
                            rec.version, rec.pointer_size, rec.tid, rec.pid,
                            rec.timestamp, rec.payload, rec.payload_len, rec.cpu,
                            rec.buffer_file_offset, part);
            /* The same FileRundown again, for a start-time rundown. */
            if (rc == 0 && part == PART_END && kclass == DM_K_FILEIO)
                rc = add_record(&cap, &arena_len, &arena_cap, &g, rec.opcode,
                                rec.version, rec.pointer_size, rec.tid, rec.pid,
                                rec.timestamp, rec.payload, rec.payload_len, 0, 0,
                                PART_COPY);
            if (rc < 0)
                break;
        }
        dm_etl_close(etl);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < fk.n_recs; i++)
            if (fk.recs[i].trace_ts == 0)
                fk.recs[i].trace_ts = fk.header_ts; /* injected: at the start */
    }
    for (size_t i = 0; i < fk.n_recs; i++) {
        struct fake_record *r = &fk.recs[i];

        r->er.UserData = r->er.UserDataLength > 0
                             ? fk.arena + (uintptr_t)r->er.UserData
                             : NULL;
    }
    return 0;
}

int dm_fake_install(const struct dm_fake_config *cfg, char *err, size_t errlen)
{
    int rc;

    dm_fake_uninstall();
    if (!fk.lock_ready) {
        InitializeCriticalSection(&fk.lock);
        fk.lock_ready = 1;
    }
    fk.cfg = *cfg;
    fk.kernel_running = cfg->kernel_running;
    fk.private_running = cfg->private_running;
    other_tool_props(&fk.kernel_props);
    other_tool_props(&fk.private_props);
    fk.kernel_handle = cfg->kernel_running ? FAKE_KERNEL_LOGGER_ID : 0;
    fk.private_handle = cfg->private_running ? 0x78u : 0;
    fk.kernel_other = cfg->kernel_running;
    fk.private_other = cfg->private_running;
    fk.wake = CreateEventW(NULL, TRUE, FALSE, NULL);
    fk.replayed = CreateEventW(NULL, TRUE, FALSE, NULL);
    fk.helper_wake = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (fk.wake == NULL || fk.replayed == NULL || fk.helper_wake == NULL)
        return DM_EOS;
    rc = load_sample(cfg->etl_path, err, errlen);
    if (rc < 0) {
        dm_fake_uninstall();
        return rc;
    }
    dm_etw = &fake_api;
    return 0;
}

void dm_fake_uninstall(void)
{
    dm_etw = &dm_etw_real;
    if (fk.wake != NULL)
        CloseHandle(fk.wake);
    if (fk.replayed != NULL)
        CloseHandle(fk.replayed);
    if (fk.helper_wake != NULL)
        CloseHandle(fk.helper_wake);
    fk.helper_wake = NULL;
    fk.helper_running = fk.helper_enabled = fk.helper_open = 0;
    fk.helper_handle = 0;
    fk.helper_qpc = fk.helper_delivered = 0;
    fk.helper_lf = NULL;
    free(fk.recs);
    free(fk.arena);
    free(fk.order);
    free(fk.bufs);
    fk.order = NULL;
    fk.bufs = NULL;
    fk.n_bufs = 0;
    fk.out_of_order = fk.after_stop = 0;
    fk.busy_kernel = fk.busy_private = 0;
    fk.zero_mask_seen = fk.rundown_triggered = 0;
    fk.toggle_qpc = 0;
    fk.rundown_lost = 0;
    fk.kernel_other = fk.private_other = fk.touched_other = 0;
    fk.next_thread = 0;
    fk.flush_honoured = 0;
    fk.per_cpu = 0;
    fk.flush_ms = fk.buffer_kb = 0;
    fk.flush_asked = 0;
    fk.logged = fk.single_io_qpc = fk.full_buffers = fk.timer_buffers = 0;
    fk.wake = fk.replayed = NULL;
    fk.recs = NULL;
    fk.arena = NULL;
    fk.n_recs = 0;
    fk.n_calls = 0;
    fk.next_handle = 0;
    fk.logfile = NULL;
    fk.consumer_open = 0;
    dm_atomic_store_release(&fk.delivered, 0);
    fk.replay_ns = 0;
    fk.header_ts = fk.trace_freq = 0;
    fk.n_cpus = 0;
    memset(&fk.cfg, 0, sizeof fk.cfg);
}

size_t dm_fake_calls(struct dm_fake_call *out, size_t max)
{
    size_t n;

    lock();
    n = fk.n_calls;
    if (out != NULL)
        memcpy(out, fk.calls, (n < max ? n : max) * sizeof *out);
    unlock();
    return n;
}

static int matches(const struct dm_fake_call *c, enum dm_fake_call_kind kind,
                   const char *name, ULONG code)
{
    return c->kind == kind && (name == NULL || strcmp(c->name, name) == 0) &&
           (kind != DM_FAKE_CONTROL || code == ULONG_MAX || c->code == code);
}

int dm_fake_count_by_name(const char *name, ULONG code)
{
    int n = 0;

    lock();
    for (size_t i = 0; i < fk.n_calls; i++)
        n += matches(&fk.calls[i], DM_FAKE_CONTROL, name, code) && fk.calls[i].by_name;
    unlock();
    return n;
}

int dm_fake_count(enum dm_fake_call_kind kind, const char *name, ULONG code)
{
    int n = 0;

    lock();
    for (size_t i = 0; i < fk.n_calls; i++)
        n += matches(&fk.calls[i], kind, name, code);
    unlock();
    return n;
}

uint64_t dm_fake_first_ns(enum dm_fake_call_kind kind, const char *name, ULONG code)
{
    uint64_t t = 0;

    lock();
    for (size_t i = 0; i < fk.n_calls && t == 0; i++)
        if (matches(&fk.calls[i], kind, name, code))
            t = fk.calls[i].when_ns;
    unlock();
    return t;
}

int dm_fake_wait_replayed(unsigned ms)
{
    return fk.replayed != NULL && WaitForSingleObject(fk.replayed, ms) == WAIT_OBJECT_0
               ? 0
               : -1;
}

uint64_t dm_fake_delivered(void)
{
    return dm_atomic_load_acquire(&fk.delivered);
}

uint64_t dm_fake_replay_ns(void)
{
    return fk.replay_ns;
}

size_t dm_fake_records(void)
{
    return fk.n_recs;
}

int dm_fake_kernel_running(void)
{
    int r;

    lock();
    r = fk.kernel_running;
    unlock();
    return r;
}

int dm_fake_private_running(void)
{
    int r;

    lock();
    r = fk.private_running;
    unlock();
    return r;
}

int dm_fake_in_process(void)
{
    return InterlockedCompareExchange(&fk.in_process, 0, 0) != 0;
}

int dm_fake_rundown_triggered(void)
{
    int r;

    lock();
    r = fk.rundown_triggered;
    unlock();
    return r;
}

uint64_t dm_fake_out_of_order_buffers(void)
{
    return fk.out_of_order;
}

uint64_t dm_fake_delivered_after_stop(void)
{
    return fk.after_stop;
}

uint64_t dm_fake_logged(void)
{
    return fk.logged;
}

uint64_t dm_fake_single_io_qpc(void)
{
    return fk.single_io_qpc;
}

uint64_t dm_fake_full_buffers(void)
{
    return fk.full_buffers;
}

uint64_t dm_fake_timer_buffers(void)
{
    return fk.timer_buffers;
}

unsigned dm_fake_flush_ms(void)
{
    return fk.flush_ms;
}

int dm_fake_helper_running(void)
{
    int r;

    lock();
    r = fk.helper_running;
    unlock();
    return r;
}

uint64_t dm_fake_helper_delivered(void)
{
    return fk.helper_delivered;
}

int dm_fake_rundown_lost(void)
{
    int n;

    lock();
    n = fk.rundown_lost;
    unlock();
    return n;
}

size_t dm_fake_copy_records(void)
{
    size_t n = 0;

    for (size_t i = 0; i < fk.n_recs; i++)
        n += fk.recs[i].part == PART_COPY;
    return n;
}

int dm_fake_touched_other(void)
{
    int n;

    lock();
    n = fk.touched_other;
    unlock();
    return n;
}

unsigned dm_fake_flush_period_ms(void)
{
    unsigned ms;

    lock();
    ms = fk.flush_ms;
    unlock();
    return ms;
}
