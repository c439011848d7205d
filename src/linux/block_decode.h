/*
 * block_decode.h - perf ring records from block tracepoints, decoded.
 *
 * The perf ring hands out records of bytes the kernel wrote; this file turns
 * one record into a struct dm_blk_sample after checking every length, using
 * the field offsets read from the tracepoints' format files (tracefs.h). It
 * has no system calls, so the unit tests drive it with hand-made records.
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
    DM_BLK_KIND_COUNT
};

/* Tracepoint names, indexed by enum dm_blk_kind ("" for UNKNOWN). */
extern const char *const dm_blk_event_names[DM_BLK_KIND_COUNT];

/* dm_blk_sample.request for ops diskmon does not show (rwbs 'N': zone
 * commands, write-zeroes and the like). */
#define DM_BLK_REQ_OTHER 0xFFu

/* What the perf_event_attr.sample_type of every diskmon event is:
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW.
 * The decoder depends on exactly this set (it fixes the record layout). */
uint64_t dm_blk_sample_type(void);

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
    uint64_t time_ns;      /* PERF_SAMPLE_TIME: CLOCK_MONOTONIC (use_clockid) */
    uint64_t sector;       /* 512-byte units */
    uint32_t pid, tid, cpu;
    uint32_t dev;          /* kernel dev_t: major = dev >> 20 */
    uint32_t nr_sector;
    uint32_t bytes;        /* valid when has_bytes */
    uint8_t kind;          /* enum dm_blk_kind */
    uint8_t request;       /* enum dm_request, or DM_BLK_REQ_OTHER */
    uint8_t has_bytes;
    uint8_t has_comm;
    char op;               /* the rwbs op letter: R W F D N, '?' if none */
    uint8_t preflush;      /* rwbs had a leading F before the op letter */
    char rwbs[12];         /* NUL-terminated copy */
    char comm[DM_BLK_COMM_MAX + 1];
};

/* What one record was. Negative values are dm_err codes (malformed). */
enum dm_blk_rec {
    DM_BLK_REC_SAMPLE = 1, /* *out holds a block sample */
    DM_BLK_REC_LOST = 2,   /* *lost was increased by the kernel's count */
    DM_BLK_REC_SKIP = 3    /* another record type: nothing to do */
};

/*
 * Decode one whole record (perf_event_header included) of len bytes.
 * Returns enum dm_blk_rec, or DM_ECORRUPT for a short, odd or unknown
 * sample (the caller counts it; nothing past len is ever read).
 */
int dm_blk_decode(const struct dm_blk_decoder *d, const uint8_t *rec, size_t len,
                  struct dm_blk_sample *out, uint64_t *lost);

/*
 * Split an rwbs string (blk_fill_rwbs: optional F for a preflush, the op
 * letter, then flag letters) into its op letter and preflush bit, and map it
 * to the request diskmon shows. nr_sector tells an empty preflush write (a
 * flush, "FWS" + 0) from a write with data.
 */
void dm_blk_classify(const char *rwbs, uint32_t nr_sector, char *op,
                     uint8_t *preflush, uint8_t *request);

/* The scratch buffer dm_perf_ring_next needs: a record is at most 64 KiB
 * (perf_event_header.size is a u16). */
#define DM_PERF_RECORD_MAX 65536u

/*
 * The next record of a perf ring's data area (data_size bytes, a power of
 * two) between the reader's position tail and the kernel's head. A record
 * that wraps around the end of the area is copied into scratch (at least
 * DM_PERF_RECORD_MAX bytes); otherwise *rec points into data. Returns 1 with
 * *rec and *len set, 0 when tail == head, or DM_ECORRUPT when the positions
 * or the record header are impossible (the reader should then skip to head).
 */
int dm_perf_ring_next(const uint8_t *data, uint64_t data_size, uint64_t tail,
                      uint64_t head, uint8_t *scratch, const uint8_t **rec,
                      size_t *len);

#endif /* DM_BLOCK_DECODE_H */
