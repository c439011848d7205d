/*
 * etw_fake.h - a FAKE ETW API for tests. Not Windows: a stand-in that
 * replaces dm_etw (src/etw/etw_api.h) so the tests can check diskmon's own
 * session logic and callback path under Wine or on a machine without admin
 * rights. It models just enough of ETW: which sessions exist (StartTrace of
 * a running one fails with 183, STOP of a stopped one with 4201), the
 * real-time consumer (ProcessTrace replays the records of a sample .etl
 * through the real EventRecordCallback, then blocks until the session is
 * stopped or the consumer closed), and configured failures. Every call is
 * recorded so tests can assert, for example, that a session was stopped.
 * Documented behaviours it models, each cited where etw_fake.c implements
 * it: the end-of-session rundown (FileRundown, DCEnd) comes only at STOP,
 * unless a start-time rundown was forced with the TraceSetInformation
 * toggle; per-processor buffers arrive whole but out of global time order
 * unless the session has EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING; a session
 * stopped (and perhaps restarted) by another program; 183 from StartTrace
 * for a moment after a STOP, 2402 from a STOP of a stopping session;
 * buffers still queued at STOP are delivered unless the BufferCallback says
 * FALSE; the kernel rundown provider enabled on the private session or on
 * an ordinary one ("diskmon rundown") delivering FileRundown to that
 * session's consumer; a rundown asked for before a consumer of the session
 * was opened is lost (System Informer etwmon.c, krabsetw etw.hpp); the NT
 * Kernel Logger's handle is its fixed logger id 0xFFFF, so after an outside
 * stop and restart it names the other tool's instance, told apart only by
 * LoggerThreadId; and several answers to EVENT_TRACE_USE_MS_FLUSH_TIMER
 * (enum dm_fake_flush_answer), each with the flush period it implies;
 * the clock type a QUERY shows; a session's whole group mask, read by
 * TraceQueryInformation and written by TraceSetInformation, with bits
 * beyond EnableFlags that diskmon did not set; and processor groups, where
 * GetSystemInfo counts only the caller's group.
 * What it proves is that our logic does the right thing with the answers
 * ETW documents or may give; it proves nothing about Windows itself.
 */
#ifndef DM_ETW_FAKE_H
#define DM_ETW_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include "etw/etw_api.h"

enum dm_fake_call_kind {
    DM_FAKE_START = 1,
    DM_FAKE_CONTROL,
    DM_FAKE_OPEN,
    DM_FAKE_PROCESS,
    DM_FAKE_CLOSE,
    DM_FAKE_SET_INFO,
    DM_FAKE_ENABLE
};

/* How the fake answers the undocumented EVENT_TRACE_USE_MS_FLUSH_TIMER,
 * as the QUERY after StartTrace shows it, and what period it then flushes
 * with (FlushTimer in seconds wherever the flag was not honoured,
 * EVENT_TRACE_PROPERTIES; 0 meaning 1 s for real time). */
enum dm_fake_flush_answer {
    DM_FAKE_FLUSH_HONOURED = 0,  /* flag and FlushTimer 100 read back: 100 ms */
    DM_FAKE_FLUSH_FLAG_DROPPED,  /* flag gone, FlushTimer 100: 100 s */
    DM_FAKE_FLUSH_TIMER_ZERO,    /* flag kept, FlushTimer reads 0: 1 s */
    DM_FAKE_FLUSH_CLAMPED_TO_1,  /* flag gone, FlushTimer reads 1: 1 s */
    DM_FAKE_FLUSH_ANSWERS
};

struct dm_fake_call {
    enum dm_fake_call_kind kind;
    char name[64];          /* session name (ASCII) */
    ULONG code;             /* ControlTrace code; TraceSetInformation: class */
    int by_name;            /* ControlTrace: named the session (else by
                             * handle; name is then the session it hit) */
    ULONG rc;               /* what the fake returned (OpenTrace: last error) */
    ULONG log_file_mode;    /* StartTrace: props.LogFileMode; OpenTrace: ProcessTraceMode */
    ULONG enable_flags;     /* StartTrace; TraceSetInformation: mask[0] */
    ULONG client_context;   /* StartTrace: Wnode.ClientContext */
    GUID guid;              /* StartTrace / ControlTrace: Wnode.Guid;
                             * EnableTraceEx2: the provider */
    ULONGLONG match_any;    /* EnableTraceEx2: MatchAnyKeyword */
    ULONG flush_timer;      /* StartTrace, ControlTrace UPDATE: FlushTimer */
    int other_instance;     /* ControlTrace by handle: it hit an instance
                             * diskmon did not start (another tool's) */
    uint64_t when_ns;       /* dm_monotonic_ns() at the call */
};

/*
 * The live model, instead of a sample: DiskIo completions logged at steady
 * rates into one buffer per CPU, each stamped with QueryPerformanceCounter
 * at the moment the model logs it. A CPU's buffer is delivered only as
 * Windows documents (the FlushTrace page, docs/etw.md §8): when it is
 * full, when the session's FlushTimer expires and it holds events, on
 * ControlTrace(EVENT_TRACE_CONTROL_FLUSH), or when the session stops;
 * buffers of different CPUs due at the same moment come in a shuffled
 * order. FlushTimer is taken from the StartTrace properties: milliseconds
 * with EVENT_TRACE_USE_MS_FLUSH_TIMER, else seconds (0 = 1 s).
 */
struct dm_fake_load {
    unsigned n_cpus;          /* processors; 0: the live model is off */
    unsigned busy_cpus;       /* the first busy_cpus of them share ... */
    unsigned busy_rate;       /* ... this many records per second */
    unsigned quiet_rate;      /* each other CPU: records per second */
    unsigned duration_ms;     /* logging stops after this (session runs on) */
    unsigned single_io_ms;    /* >0: only one record, on CPU 1, this long
                               * after ProcessTrace started */
    unsigned rundown_files;   /* files open before the session: when the
                               * start rundown was triggered (the toggle),
                               * their FileRundown records come first, in
                               * full buffers of CPU 0, named
                               * \Device\DmTest\f<i>.txt, FILE_OBJECTs
                               * 0x150 apart from the one the DiskIo
                               * records use (file 0) */
};

struct dm_fake_config {
    const char *etl_path;       /* records to replay; NULL: none */
    int kernel_running;         /* the NT Kernel Logger already exists */
    int private_running;        /* a "diskmon" session already exists */
    ULONG start_error;          /* every StartTrace fails with this */
    ULONG private_start_error;  /* StartTrace of "diskmon" fails with this */
    ULONG stop_error;           /* ControlTrace STOP fails with this */
    ULONG open_error;           /* OpenTrace fails, GetLastError() = this */
    ULONG process_error;        /* ProcessTrace returns this at once */
    int end_after_replay;       /* another tool stops the session after the
                                 * replay: ProcessTrace delivers the end
                                 * rundown and returns 0 on its own */
    int outside_restart;        /* ...and then starts its own session under
                                 * the same name (a STOP by name would hit it) */
    unsigned outside_lag_ms;    /* ...and ProcessTrace returns only this much
                                 * later (or at CloseTrace) */
    unsigned busy_after_stop;   /* after a STOP, the next K StartTrace calls
                                 * of that name still return 183 */
    int stop_active_connections; /* STOP returns 2402 (stopping anyway) */
    size_t queued_buffers;      /* the last N buffers are still queued when the
                                 * session is stopped: delivered only then */
    ULONG set_info_error;       /* TraceSetInformation fails with this */
    int strip_pointer_flags;    /* records carry neither 32- nor 64-bit flag */
    unsigned rt_lost[3];        /* RT_LostEvent records (opcodes 32, 33, 34)
                                 * delivered before the first sample record */
    ULONG events_lost;          /* reported by QUERY and STOP */
    ULONG rt_buffers_lost;      /* reported by QUERY and STOP */
    size_t buffer_records;      /* records per "buffer" in global-order mode
                                 * (NO_PER_PROCESSOR_BUFFERING); 0: 64 */
    struct dm_fake_load load;   /* the live model (see above) */
    ULONG enable_error;         /* EnableTraceEx2 fails with this */
    ULONG helper_open_error;    /* OpenTrace of "diskmon rundown" fails */
    ULONG private_enable_error; /* EnableTraceEx2 on "diskmon" itself fails */
    enum dm_fake_flush_answer flush_answer;
    ULONG query_error;          /* every ControlTrace QUERY fails with this */
    int helper_trickle;         /* the helper's consumer goes on delivering a
                                 * name a millisecond until it is stopped */
    int clock_answered;         /* QUERY reads back clock_answer as the
                                 * ClientContext (the clock type), not the
                                 * one asked */
    ULONG clock_answer;
    /* The session's group mask (PERFINFO_GROUPMASK, 8 ULONGs) beyond the
     * EnableFlags in its first: bits the kernel keeps that diskmon did not
     * set. What a session holds there is not documented; a test plays some. */
    ULONG group_mask_extra[8];
    ULONG query_info_error;     /* TraceQueryInformation fails with this */
    /* Processor groups (the Processor Groups page: a process runs in one
     * group; GetSystemInfo counts that group's processors only,
     * GetActiveProcessorCount(ALL_PROCESSOR_GROUPS) all of them). All zero:
     * the machine's own answers. */
    unsigned group_cpus[4];
    unsigned process_group;     /* the group this process was put in */
};

/*
 * Load cfg->etl_path's records into memory (pre-built EVENT_RECORDs), reset
 * the state and the call log, and point dm_etw at the fake. Returns 0 or a
 * negative dm_err (message in err).
 */
int dm_fake_install(const struct dm_fake_config *cfg, char *err, size_t errlen);
/* Restore the real API and free everything. */
void dm_fake_uninstall(void);

/* Calls so far (copied into out, at most max); returns the total count. */
size_t dm_fake_calls(struct dm_fake_call *out, size_t max);
/* How many calls match kind, name (NULL: any) and, for CONTROL, code
 * (ULONG_MAX: any). */
int dm_fake_count(enum dm_fake_call_kind kind, const char *name, ULONG code);
/* ControlTrace calls that named their session (InstanceName not NULL). */
int dm_fake_count_by_name(const char *name, ULONG code);
/* Time of the first matching call, 0 if none. */
uint64_t dm_fake_first_ns(enum dm_fake_call_kind kind, const char *name, ULONG code);

/* Wait until ProcessTrace delivered every record; 0 ok, -1 on timeout. */
int dm_fake_wait_replayed(unsigned ms);
/* Records delivered through the callback so far, and the nanoseconds the
 * last replay loop took (for the benchmark). */
uint64_t dm_fake_delivered(void);
uint64_t dm_fake_replay_ns(void);
/* Records loaded from the sample (after install). */
size_t dm_fake_records(void);
/* Whether a session is running in the fake's model. */
int dm_fake_kernel_running(void);
int dm_fake_private_running(void);
/* Nonzero while a ProcessTrace call is in progress. */
int dm_fake_in_process(void);
/* Whether the start-time file rundown was triggered (zero mask, then the
 * real one), and how many BufferCallback calls returned FALSE. */
int dm_fake_rundown_triggered(void);
/* Buffers ProcessTrace delivered out of global time order (a buffer whose
 * first record is older than the last record delivered before it). */
uint64_t dm_fake_out_of_order_buffers(void);
/* The live model: records logged so far, the QPC stamp of the single I/O
 * (single_io_ms), buffers delivered because they were full, because the
 * FlushTimer expired, and buffers delivered out of global time order. */
uint64_t dm_fake_logged(void);
uint64_t dm_fake_single_io_qpc(void);
uint64_t dm_fake_full_buffers(void);
uint64_t dm_fake_timer_buffers(void);
/* The flush period the session asked for, in ms (0: none started). */
unsigned dm_fake_flush_ms(void);

/* The private session's naming helper "diskmon rundown": running, and
 * the FileRundown records its consumer was given. */
int dm_fake_helper_running(void);
uint64_t dm_fake_helper_delivered(void);

/* Records delivered after the session was stopped (queued buffers, end
 * rundown). */
uint64_t dm_fake_delivered_after_stop(void);

/* Rundowns asked for while no consumer of the session was open: lost. */
int dm_fake_rundown_lost(void);
/* The sample's FileRundown copies (delivered only after a start rundown). */
size_t dm_fake_copy_records(void);
/* ControlTrace calls by handle that acted on an instance diskmon did not
 * start (STOP, FLUSH, UPDATE; a QUERY changes nothing and is not counted). */
int dm_fake_touched_other(void);
/* The flush period the running session has now, in ms (after an UPDATE). */
unsigned dm_fake_flush_period_ms(void);

/* The group mask the running NT Kernel Logger (else "diskmon") holds now,
 * as TraceQueryInformation would read it; 0 if none runs. */
int dm_fake_group_mask(ULONG mask[8]);
/* Move this process to another processor group (a second diskmon). */
void dm_fake_set_process_group(unsigned group);

#endif /* DM_ETW_FAKE_H */
