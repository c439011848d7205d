/*
 * block_decode.h - one block tracepoint's raw bytes, decoded.
 *
 * Both transports (perf rings, tracefs instance pages) hand out the same raw
 * tracepoint bytes: the common header (common_type, common_flags,
 * common_preempt_count, common_pid), then the event's fields at the offsets
 * of its format file (tracefs.h). This file turns those bytes into a struct
 * dm_blk_sample after checking every length. It has no system calls, so the
 * unit tests drive it with hand-made records.
 */
#ifndef DM_BLOCK_DECODE_H
#define DM_BLOCK_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "linux/tracefs.h"

/* The tracepoints diskmon may open. */
enum dm_blk_kind {
    DM_BLK_UNKNOWN = 0,
    DM_BLK_IO_START,       /* block_io_start: accounting starts (6.5+) */
    DM_BLK_IO_DONE,        /* block_io_done: accounting ends (6.5+) */
    DM_BLK_RQ_INSERT,      /* block_rq_insert: into the scheduler queue */
    DM_BLK_RQ_ISSUE,       /* block_rq_issue: dispatched to the driver */
    DM_BLK_RQ_COMPLETE,    /* block_rq_complete: the driver completed it */
    DM_BLK_RQ_MERGE,       /* block_rq_merge: a request merged into another */
    DM_BLK_BIO_FRONTMERGE, /* block_bio_frontmerge: a request grew downwards */
    /* Not block events: a process's cgroup as it changes (task_cgroups.h),
     * merged with the block events by time (tracefs transport only). */
    DM_BLK_TASK_FORK,      /* sched_process_fork */
    DM_BLK_TASK_MOVE,      /* cgroup_attach_task */
    DM_BLK_KIND_COUNT
};

/* Tracepoint names, indexed by enum dm_blk_kind ("" for UNKNOWN). */
extern const char *const dm_blk_event_names[DM_BLK_KIND_COUNT];

/* dm_blk_sample.request for ops diskmon does not show (rwbs 'N': zone
 * commands, write-zeroes and the like). */
#define DM_BLK_REQ_OTHER 0xFFu

/* Where one tracepoint's fields sit in its raw bytes. */
struct dm_blk_layout {
    uint32_t id;           /* common_type value = the tracepoint id */
    uint32_t min_raw;      /* raw bytes needed to hold every field below */
    uint32_t dev_off, dev_size;
    uint32_t sector_off, sector_size;
    uint32_t nr_sector_off;
    uint32_t bytes_off;    /* valid when has_bytes */
    uint32_t rwbs_off, rwbs_len;
    uint32_t comm_off, comm_len; /* comm_len 0: no comm field */
    uint8_t present;
    uint8_t has_bytes;
};

/* Zero it, then dm_blk_decoder_add each opened tracepoint. */
struct dm_blk_decoder {
    uint32_t type_off;     /* common_type offset, the same in every event */
    uint32_t pid_off;      /* common_pid offset, likewise */
    struct dm_blk_layout layouts[DM_BLK_KIND_COUNT];
};

/*
 * Add one tracepoint to the decoder: look up its fields by name in fmt and
 * check their sizes. Returns 0, or DM_EUNSUPPORTED with a message naming the
 * missing or odd field.
 */
int dm_blk_decoder_add(struct dm_blk_decoder *d, enum dm_blk_kind kind,
                       uint32_t id, const struct dm_tp_format *fmt, char *err,
                       size_t errlen);

#define DM_BLK_COMM_MAX 16 /* TASK_COMM_LEN */

struct dm_blk_sample {
    uint64_t time_ns;      /* CLOCK_MONOTONIC (perf use_clockid; ftrace mono) */
    uint64_t sector;       /* 512-byte units */
    uint32_t pid, tid, cpu; /* pid: the thread group (process) id */
    uint32_t dev;          /* kernel dev_t: major = dev >> 20 */
    uint32_t nr_sector;
    uint32_t bytes;        /* valid when has_bytes */
    uint8_t kind;          /* enum dm_blk_kind */
    uint8_t request;       /* enum dm_request, or DM_BLK_REQ_OTHER */
    uint8_t has_bytes;
    uint8_t has_comm;
    char op;               /* the rwbs op letter: R W F D N, '?' if none */
    uint8_t preflush;      /* rwbs had a leading F before the op letter */
    uint16_t rq_flags;     /* DM_RQ_* from rwbs (dm_blk_rwbs_flags) */
    /* The issuer's cgroup v2 path, interned (cgroups.h): the perf
     * transport's sample cgroup id, mapped (cgroup_ids.h), or a
     * DM_BLK_TASK_MOVE's destination; 0: not carried (or unknown). */
    uint16_t cgroup;
    uint32_t child_pid;    /* DM_BLK_TASK_FORK: the new task */
    char rwbs[12];         /* NUL-terminated copy */
    char comm[DM_BLK_COMM_MAX + 1]; /* NUL-terminated and NUL-padded */
};

/*
 * Decode one tracepoint's raw bytes (raw[0..len)). Sets kind, dev, sector,
 * nr_sector, bytes, rwbs, comm, op, preflush, rq_flags, request and tid (common_pid,
 * the thread); the caller sets time_ns, cpu and pid. Returns 0, or
 * DM_ECORRUPT for a short sample or an event id the decoder does not know
 * (the caller counts it; nothing past len is ever read).
 */
int dm_blk_decode_raw(const struct dm_blk_decoder *d, const uint8_t *raw,
                      size_t len, struct dm_blk_sample *out);

/*
 * Split an rwbs string (blk_fill_rwbs: optional F for a preflush, the op
 * letter, then flag letters) into its op letter and preflush bit, and map it
 * to the request diskmon shows. nr_sector tells an empty preflush write (a
 * flush, "FWS" + 0) from a write with data.
 */
void dm_blk_classify(const char *rwbs, uint32_t nr_sector, char *op,
                     uint8_t *preflush, uint8_t *request);

/*
 * The request flags an rwbs string carries, as DM_RQ_* bits: a leading F
 * (before the op letter) PREFLUSH; after the op letter F FUA, S sync, M
 * meta, A readahead; "DE" a secure erase (blk_fill_rwbs). Anything else is
 * ignored.
 */
uint16_t dm_blk_rwbs_flags(const char *rwbs);

#endif /* DM_BLOCK_DECODE_H */
