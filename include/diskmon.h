/*
 * diskmon.h - the types every part of diskmon shares.
 *
 * Data flows one way: a source (live ETW, live Linux through tracefs or
 * perf, or .etl replay) decodes kernel records into struct dm_event, hands
 * each one to a sink (filter, then the ring buffer), and the printer thread
 * formats what comes out of the ring. Nothing here depends on the operating system.
 */
#ifndef DISKMON_H
#define DISKMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DM_VERSION "1.0.0"

/*
 * Error codes. Functions return 0 or a negative dm_err; dm_strerror() gives
 * the message. The X-macro keeps the enum, the names and the messages in one
 * table (as libuv's UV_ERRNO_MAP does).
 */
#define DM_ERR_MAP(X)                                                     \
    X(USAGE, "invalid usage")                                             \
    X(NOMEM, "out of memory")                                             \
    X(IO, "input/output error")                                           \
    X(OPEN, "cannot open file")                                           \
    X(CORRUPT, "corrupt trace file")                                      \
    X(TRUNCATED, "truncated trace file")                                  \
    X(UNSUPPORTED, "not supported on this platform")                      \
    X(ACCESS, "permission denied")                                        \
    X(EXISTS, "already exists")                                           \
    X(NOTFOUND, "not found")                                              \
    X(OS, "system call failed")                                           \
    X(STOPPED, "stopped")

enum dm_err {
    DM_OK = 0,
#define DM_ERR_ENUM(name, msg) DM_E##name,
    DM__ERR_FIRST = -100,
    DM_ERR_MAP(DM_ERR_ENUM)
#undef DM_ERR_ENUM
};

const char *dm_strerror(int err);
const char *dm_err_name(int err);

/* The request a disk I/O carried. Values index dm_request_names. */
enum dm_request {
    DM_REQ_READ = 0,
    DM_REQ_WRITE,
    DM_REQ_FLUSH,
    DM_REQ_DISCARD,
    DM_REQ_COUNT
};

/* Bit per request, for --op. */
#define DM_OP_BIT(req) (1u << (req))

extern const char *const dm_request_names[DM_REQ_COUNT]; /* "Read", ... */

/* dm_event.flags */
#define DM_EV_HAS_PID 0x01u      /* pid is known (the tid has its own bit) */
#define DM_EV_HAS_TID 0x02u      /* tid is known */
#define DM_EV_HAS_PROCESS 0x04u  /* process names the process */
#define DM_EV_HAS_FILE 0x08u     /* file names the file */
#define DM_EV_HAS_IRP_FLAGS 0x10u /* irp_flags is meaningful (Windows) */
#define DM_EV_HAS_QUEUE 0x20u    /* queue_ns is meaningful (Linux --queue) */
#define DM_EV_FILE_CUT 0x40u     /* the path was too long: file is its end */
#define DM_EV_HAS_PRIORITY 0x80u /* priority is meaningful (Windows) */
/* The source did not measure the request's duration (an imported trace
 * without it): duration_ns is 0 and means nothing. Lines show none (text
 * "-", csv an empty cell, json no duration_ms); the heat map leaves such
 * requests out and says how many. */
#define DM_EV_NO_DURATION 0x100u
/* The *_len fields hold each name's length (below). */
#define DM_EV_NAME_LENS 0x200u

/*
 * dm_event.req_flags: what the request itself said about how to carry it
 * out, one bit per word of a fixed vocabulary (dm_req_flag_names, in bit
 * order; csv/json join the words with '|'). Linux from the tracepoints'
 * rwbs (kernel/trace/blktrace.c, blk_fill_rwbs), Windows from the
 * DiskIo_TypeGroup1 IrpFlags bits Microsoft documents (Microsoft Learn,
 * "DiskIo_TypeGroup1 class"; the values are Ntddk.h's IRP_* flags).
 */
#define DM_RQ_PREFLUSH 0x0001u    /* Linux: REQ_PREFLUSH, rwbs leading F */
#define DM_RQ_FUA 0x0002u         /* Linux: REQ_FUA, F after the op letter */
#define DM_RQ_SYNC 0x0004u        /* Linux: REQ_SYNC, S */
#define DM_RQ_META 0x0008u        /* Linux: REQ_META, M */
#define DM_RQ_READAHEAD 0x0010u   /* Linux: REQ_RAHEAD, A */
#define DM_RQ_SECURE 0x0020u      /* Linux: a secure erase, "DE" */
#define DM_RQ_NOCACHE 0x0040u     /* Windows: IRP_NOCACHE 0x1 */
#define DM_RQ_PAGING 0x0080u      /* Windows: IRP_PAGING_IO 0x2 */
#define DM_RQ_SYNC_API 0x0100u    /* Windows: IRP_SYNCHRONOUS_API 0x4 */
#define DM_RQ_ASSOCIATED 0x0200u  /* Windows: IRP_ASSOCIATED_IRP 0x8 */
#define DM_RQ_BUFFERED 0x0400u    /* Windows: IRP_BUFFERED_IO 0x10 */
#define DM_RQ_SYNC_PAGING 0x0800u /* Windows: IRP_SYNCHRONOUS_PAGING_IO 0x40 */
#define DM_RQ_COUNT 12            /* words in dm_req_flag_names */

extern const char *const dm_req_flag_names[DM_RQ_COUNT]; /* "preflush", ... */

/* The longest names an event carries, in bytes with the NUL. Longer names
 * are cut by the source (a path keeps its end and sets DM_EV_FILE_CUT). */
#define DM_PROCESS_MAX 32  /* ImageFileName / comm, NUL-terminated UTF-8 */
#define DM_DISK_NAME_MAX 32 /* "loop0", "nvme0n1p2"; empty = use disk */
#define DM_FILE_MAX 264    /* MAX_PATH plus NUL, rounded; UTF-8 */
/* "sda2", "nvme0n1p3", "C:", or a volume GUID path (49 bytes) */
#define DM_PARTITION_MAX 64
/* A cgroup v2 path ("/system.slice/docker-<64 hex>.scope" is 90 bytes); a
 * longer one keeps its start, so that a --cgroup prefix still matches. */
#define DM_CGROUP_MAX 256

/* The fields of an event that may be unknown and that a filter may ask
 * about (-p, -c, --cgroup): a request whose field is unknown is not shown
 * by a filter on it, and is counted (core/filter.h). */
enum dm_field { DM_FIELD_PID = 0, DM_FIELD_PROCESS, DM_FIELD_CGROUP, DM_FIELD_COUNT };

/* "pid", "process name", "cgroup": as in "3 requests of unknown cgroup". */
extern const char *const dm_field_names[DM_FIELD_COUNT];

/*
 * One completed disk request. Times are nanoseconds: time_ns is the
 * completion time since the start of the capture (replay: since the trace
 * header event, as PerfView counts), duration_ns the time from issue to
 * completion.
 *
 * The numbers come first and the names last, so that the ring (ring.h)
 * stores the numbers as one fixed block (DM_EVENT_FIXED_BYTES) and each name
 * only as long as it is. The names are NUL-terminated UTF-8, never NULL
 * ("" when absent), each shorter than its DM_*_MAX. Who owns them:
 *   - a source's event points at the source's own storage (its name
 *     tables), valid only until the source's next decode call; the sink
 *     copies the names into the ring, so a source keeps nothing alive;
 *   - an event the printer receives (dm_ring_peek) points into the ring,
 *     valid until dm_ring_release.
 * Whoever keeps an event longer copies the names (as top.c does).
 */
struct dm_event {
    uint64_t time_ns;
    uint64_t duration_ns;
    uint64_t queue_ns;       /* Linux: insert to issue, with --queue */
    uint64_t byte_offset;
    uint64_t irp;            /* Windows IRP address, 0 when none */
    uint32_t transfer_size;  /* bytes */
    uint32_t disk;           /* Windows disk number; Linux dev_t (maj<<20|min) */
    uint32_t irp_flags;
    uint32_t pid;
    uint32_t tid;
    uint16_t flags;          /* DM_EV_* */
    uint8_t request;         /* enum dm_request */
    uint8_t priority;        /* I/O priority 0-7, with DM_EV_HAS_PRIORITY */
    uint16_t req_flags;      /* DM_RQ_* */
    /* Each name's length in bytes without its NUL, with DM_EV_NAME_LENS
     * only: the ring's reader has them at hand and sets them, so that the
     * printer measures no name again. Zero without the flag; whoever
     * changes a name of an event that has the flag clears it. The six
     * bytes also put the names at 72 on 32-bit. */
    uint16_t file_len;
    uint8_t disk_name_len;
    uint8_t process_len;
    uint8_t partition_len;
    uint8_t cgroup_len;
    /* names: see above */
    const char *disk_name;   /* Linux: "sda"; "" = print the disk number */
    const char *process;
    const char *file;
    const char *partition;   /* the partition or volume the request falls
                                in; "" = the whole disk (spans two, lies
                                outside all, or the source cannot tell) */
    const char *cgroup;      /* Linux: the issuer's cgroup v2 path; "" unknown */
};

/* Bytes of dm_event before the names: the same 72 on 32- and 64-bit. */
#define DM_EVENT_FIXED_BYTES 72u

/* An event whose names' lengths are not given (the flag cleared, the
 * lengths zero). */
static inline void dm_event_no_lens(struct dm_event *ev)
{
    ev->flags &= (uint16_t)~DM_EV_NAME_LENS;
    ev->file_len = 0;
    ev->disk_name_len = ev->process_len = ev->partition_len = ev->cgroup_len = 0;
}

/*
 * A Windows time-zone rule (TIME_ZONE_INFORMATION, as a trace header records
 * it), so that replay's --clock shows the local time of the machine the
 * trace was taken on. Biases in minutes: UTC = local time + bias, plus
 * standard_bias or daylight_bias depending on the date. The dates follow the
 * SYSTEMTIME transition rules (output/tz.h).
 */
struct dm_tz_date {
    uint16_t year, month, day_of_week, day, hour, minute, second, milliseconds;
};

struct dm_time_zone {
    int valid;                   /* 0: none; --clock uses the OS's local time */
    int32_t bias;
    int32_t standard_bias;
    int32_t daylight_bias;
    struct dm_tz_date standard_date; /* daylight time ends (local daylight time) */
    struct dm_tz_date daylight_date; /* daylight time starts (local standard time) */
};

struct dm_options;
struct dm_sink;

/*
 * Notes a source has for the user (a fallback it took, a leftover it
 * removed, why requests were lost): whole lines, each "diskmon: ...\n".
 * The source writes them (open and close on the main thread, run on the
 * source thread); dm_run prints them on its error stream after open(),
 * after run() returned and after close(), so a source never writes to
 * stderr itself. A note that does not fit is cut, never overflows.
 */
#define DM_NOTES_MAX 2048

struct dm_notes {
    char text[DM_NOTES_MAX];
    size_t len;              /* bytes of text used */
    size_t shown;            /* bytes dm_notes_flush has printed */
};

#if defined(__GNUC__) || defined(__clang__)
#define DM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define DM_PRINTF(fmt, args)
#endif

/* Append a note (printf-style; the caller writes the "diskmon: " and the
 * newline, as it would have written them to stderr). */
void dm_note(struct dm_notes *n, const char *fmt, ...) DM_PRINTF(2, 3);

/* dm_notes_flush (output/text.h) prints them. */

/*
 * A source of events: live ETW, live Linux (tracefs by default, or perf),
 * or .etl replay. One const table of operations per source, picked at run
 * time by main.c.
 *
 * open  - main thread. Validates and acquires everything (sessions, files,
 *         fds). On failure returns a negative dm_err and writes a message
 *         that says what to do into src->errmsg. DM_ESTOPPED means open()
 *         already did the whole job (--cleanup): errmsg says what was done,
 *         run() is not called and diskmon exits 0.
 * run   - source thread. Produces events into the sink until the input ends
 *         or dm_sink_stopping() says the run must end (dm_sink_emit() then
 *         returns DM_ESTOPPED). That is the one stop rule: a source keeps no
 *         stop flag of its own. Returns 0 or a negative dm_err (message in
 *         src->errmsg); events decoded before a failure have already been
 *         emitted.
 * stop  - any thread, including a console control handler, always after
 *         the sink's stop flag was set: only wakes a run() blocked outside
 *         the sink (the eventfd of the Linux reader, ControlTrace and
 *         CloseTrace under ProcessTrace). Must be safe to call more than
 *         once and before run().
 * close - main thread, after run() returned (or open() failed): releases
 *         everything, and for live sessions makes sure no session is left.
 * refuse - main thread, before open(); may be NULL. Options this source has
 *         no meaning for (--force on Linux, --queue on Windows): NULL when
 *         every option given is fine, else a one-line reason naming the
 *         option, for a usage error (exit 2). Each source answers for
 *         itself, so neither the core nor the platform layer keeps a list
 *         of which source takes which option.
 */
struct dm_source;

struct dm_source_ops {
    const char *name;
    int (*open)(struct dm_source *src, const struct dm_options *opt);
    int (*run)(struct dm_source *src, struct dm_sink *sink);
    void (*stop)(struct dm_source *src);
    void (*close)(struct dm_source *src);
    const char *(*refuse)(const struct dm_options *opt);
};

/*
 * Per-process counts of bytes written into the page cache, for --top --by
 * process: a write the kernel's flusher threads send to the disk later
 * shows up there under the process that wrote it, not under the flusher.
 * A live source that can read them gives its dm_source this; the views
 * read it on the printer thread. Linux: task I/O accounting, /proc/PID/io
 * write_bytes (linux/task_io.c). NULL: none (replay, whose trace is another
 * machine's; Windows live for now).
 */
struct dm_task_io {
    /* 0 when the counters can be read here, else a negative dm_err with
     * why (at most cap bytes, no final period): the kernel has no task I/O
     * accounting, or /proc is not readable. */
    int (*probe)(char *why, size_t cap);
    /* each(arg, pid, bytes) for every process now, bytes its cumulative
     * count (all its threads, the ended ones too). Returns the number of
     * processes or a negative dm_err. */
    long (*scan)(void (*each)(void *arg, uint32_t pid, uint64_t bytes), void *arg);
    /* The parent of pid, when it started (*start: any value, the same
     * for the same process, another for a process that reused the pid)
     * and its name (comm) into name, NUL-terminated; 0, or -1 when the
     * process is gone. */
    int (*about)(uint32_t pid, uint32_t *ppid, uint64_t *start, char *name, size_t cap);
};

struct dm_source {
    const struct dm_source_ops *ops;
    void *impl;              /* the source's own state */
    /* Set by the source; read by main after run() returned. */
    uint64_t lost_events;    /* lost by the kernel or the trace itself */
    /* Whole buffers of events lost, their events uncounted (ETW's
     * RealTimeBuffersLost); loss_detail says how large. Exit 3 as for
     * lost events. */
    uint64_t lost_buffers;
    uint64_t malformed;      /* records that failed size or sanity checks */
    uint64_t start_wall_ns;  /* wall clock at time_ns == 0, ns since 1970 */
    int is_live;             /* 1: drop when the ring is full; 0: wait */
    int has_files;           /* can name files: text output gets a File column */
    int no_latency;          /* the input has no response times (a Tencent CBS
                                trace): every duration is 0 and means nothing;
                                the lines and views show none */
    char errmsg[512];
    struct dm_notes notes;   /* for the user; printed by dm_run */
    /* What open() set up and what the OS answered, one "key: value\n"
     * line each (dm_note), in the order they were learned: the session
     * or instance, the settings asked for and the ones read back, each
     * fallback taken. Never printed by a normal run; --self-test shows
     * it, so that a bug report carries the machine's answers. */
    struct dm_notes info;
    /* The source's own account of lost_events, folded into the pipeline's
     * one loss line ("block tracepoints via tracefs: ..."); "" for none. */
    char loss_detail[384];
    /* Replay: the time zone the trace recorded, for --clock. */
    struct dm_time_zone time_zone;
    /* How the events are read, when the source's name does not say it
     * (Linux live: "tracefs" or "perf"); NULL: ops->name. For --metrics. */
    const char *backend;
    /* Live: the per-process cache write counts; NULL: none. */
    const struct dm_task_io *task_io;
    /* The size in bytes of disk (dm_event.disk) where the source can tell
     * (--offset-map's rows run from 0 to it), else 0; *from then says how
     * it knows, for the map's title ("sysfs", "the trace's PhyDisk
     * record"). Called with disk_size_ctx on the printer thread at a
     * disk's first request, so after the source emitted one: what the
     * source learned before emitting it is seen. NULL: never known (csv,
     * json and the other inputs without one). */
    uint64_t (*disk_size)(const void *ctx, uint32_t disk, const char **from);
    const void *disk_size_ctx;
};

/* The sources this build has. Live ones exist only on their own OS. */
extern const struct dm_source_ops dm_replay_source;
extern const struct dm_source_ops *const dm_live_source; /* NULL: none */

#endif /* DISKMON_H */
