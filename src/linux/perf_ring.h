/*
 * perf_ring.h - the perf transport's bytes: walking a per-CPU perf ring and
 * decoding its records.
 *
 * The perf ring hands out records of bytes the kernel wrote; this file
 * finds them in the ring (a record may wrap around its end) and turns a
 * PERF_RECORD_SAMPLE of a block tracepoint into a struct dm_blk_sample,
 * checking every length. No system calls: the unit tests drive it with
 * hand-made records. perf_transport.c does the opening and mapping.
 */
#ifndef DM_PERF_RING_H
#define DM_PERF_RING_H

#include <stddef.h>
#include <stdint.h>

#include "linux/block_decode.h"

/* PERF_SAMPLE_CGROUP (Linux 5.7+, uapi value 1 << 21), for older
 * headers. */
#define DM_PERF_SAMPLE_CGROUP (1ull << 21)

/* What the perf_event_attr.sample_type of every diskmon event is:
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW,
 * and PERF_SAMPLE_CGROUP when with_cgroup. The decoder depends on exactly
 * this set (it fixes the record layout). */
uint64_t dm_perf_sample_type(int with_cgroup);

/* What one record was. Negative values are dm_err codes (malformed). */
enum dm_perf_rec {
    DM_PERF_REC_SAMPLE = 1, /* *out holds a block sample */
    DM_PERF_REC_LOST = 2,   /* *lost was increased by the kernel's count */
    DM_PERF_REC_SKIP = 3    /* another record type: nothing to do */
};

/*
 * Decode one whole record (perf_event_header included) of len bytes.
 * Returns enum dm_perf_rec, or DM_ECORRUPT for a short, odd or unknown
 * sample (the caller counts it; nothing past len is ever read).
 */
int dm_perf_decode(const struct dm_blk_decoder *d, const uint8_t *rec, size_t len,
                   struct dm_blk_sample *out, uint64_t *lost);

/* The same for events opened with PERF_SAMPLE_CGROUP when with_cgroup:
 * *cgroup_id is the sample's id (0 without). */
int dm_perf_decode_cg(const struct dm_blk_decoder *d, const uint8_t *rec, size_t len,
                      int with_cgroup, struct dm_blk_sample *out, uint64_t *lost,
                      uint64_t *cgroup_id);

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

#endif /* DM_PERF_RING_H */
