/*
 * perf_ring.c - perf ring records of block tracepoints, found and decoded.
 *
 * Record layout for diskmon's sample_type (PERF_SAMPLE_TID | TIME | CPU |
 * RAW; perf_event_open(2), "PERF_RECORD_SAMPLE", fields in that order):
 *
 *     0  perf_event_header { u32 type; u16 misc; u16 size; }
 *     8  u32 pid, u32 tid          PERF_SAMPLE_TID
 *    16  u64 time                  PERF_SAMPLE_TIME
 *    24  u32 cpu, u32 reserved     PERF_SAMPLE_CPU
 *    32  u32 raw_size              PERF_SAMPLE_RAW
 *    36  raw_size bytes: the tracepoint's fields (format file offsets)
 *
 * With PERF_SAMPLE_CGROUP (cgroup_ids.h) a u64 cgroup id follows the raw
 * bytes: the kernel pads raw_size so that the u32 and the bytes end on an
 * 8-byte boundary (perf_prepare_sample, "raw->size"), and CGROUP comes
 * after RAW in the bit order the record follows.
 */
#include <linux/perf_event.h>
#include <string.h>

#include "diskmon.h"
#include "base/bytes.h"
#include "linux/perf_ring.h"

#define HDR_SIZE 8u        /* sizeof(struct perf_event_header) */
#define OFF_HDR_SIZE 6u    /* perf_event_header.size, a u16 */
#define OFF_PID 8u
#define OFF_TID 12u
#define OFF_TIME 16u
#define OFF_CPU 24u
#define OFF_RAW_SIZE 32u
#define OFF_RAW 36u
/* PERF_RECORD_LOST: header, u64 id, u64 lost (perf_event_open(2)). */
#define LOST_SIZE 24u
#define OFF_LOST_COUNT 16u
/* PERF_RECORD_LOST_SAMPLES: header, u64 lost. */
#define LOST_SAMPLES_SIZE 16u
#define OFF_LOST_SAMPLES_COUNT 8u

uint64_t dm_perf_sample_type(int with_cgroup)
{
    return PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW |
           (with_cgroup ? DM_PERF_SAMPLE_CGROUP : 0);
}

static int decode_sample(const struct dm_blk_decoder *d, const uint8_t *rec,
                         size_t len, int with_cgroup, struct dm_blk_sample *out,
                         uint64_t *cgroup_id)
{
    uint32_t raw_size, tail = with_cgroup ? 8u : 0u;

    if (len < OFF_RAW + tail)
        return DM_ECORRUPT;
    raw_size = dm_ne32(rec + OFF_RAW_SIZE);
    if (raw_size > len - OFF_RAW - tail ||
        dm_blk_decode_raw(d, rec + OFF_RAW, raw_size, out) != 0)
        return DM_ECORRUPT;
    *cgroup_id = with_cgroup ? dm_ne64(rec + OFF_RAW + raw_size) : 0;
    /* perf's own pid/tid: the process (thread group) and the thread. */
    out->pid = dm_ne32(rec + OFF_PID);
    out->tid = dm_ne32(rec + OFF_TID);
    out->time_ns = dm_ne64(rec + OFF_TIME);
    out->cpu = dm_ne32(rec + OFF_CPU);
    return DM_PERF_REC_SAMPLE;
}

int dm_perf_decode(const struct dm_blk_decoder *d, const uint8_t *rec, size_t len,
                   struct dm_blk_sample *out, uint64_t *lost)
{
    uint64_t cgroup_id;

    return dm_perf_decode_cg(d, rec, len, 0, out, lost, &cgroup_id);
}

int dm_perf_decode_cg(const struct dm_blk_decoder *d, const uint8_t *rec, size_t len,
                      int with_cgroup, struct dm_blk_sample *out, uint64_t *lost,
                      uint64_t *cgroup_id)
{
    uint32_t type;

    if (len < HDR_SIZE || dm_ne16(rec + OFF_HDR_SIZE) != len)
        return DM_ECORRUPT;
    type = dm_ne32(rec);
    switch (type) {
    case PERF_RECORD_SAMPLE:
        return decode_sample(d, rec, len, with_cgroup, out, cgroup_id);
    case PERF_RECORD_LOST:
        if (len < LOST_SIZE)
            return DM_ECORRUPT;
        *lost += dm_ne64(rec + OFF_LOST_COUNT);
        return DM_PERF_REC_LOST;
    case PERF_RECORD_LOST_SAMPLES:
        if (len < LOST_SAMPLES_SIZE)
            return DM_ECORRUPT;
        *lost += dm_ne64(rec + OFF_LOST_SAMPLES_COUNT);
        return DM_PERF_REC_LOST;
    default:
        return DM_PERF_REC_SKIP;
    }
}

int dm_perf_ring_next(const uint8_t *data, uint64_t data_size, uint64_t tail,
                      uint64_t head, uint8_t *scratch, const uint8_t **rec,
                      size_t *len)
{
    uint64_t avail = head - tail, off;
    uint8_t hdr[HDR_SIZE];
    uint16_t size;

    if (avail == 0)
        return 0;
    if (avail < HDR_SIZE || avail > data_size)
        return DM_ECORRUPT;
    off = tail & (data_size - 1);
    /* The header itself may be split by the end of the area. */
    if (off + HDR_SIZE <= data_size) {
        memcpy(hdr, data + off, HDR_SIZE);
    } else {
        size_t first = (size_t)(data_size - off);

        memcpy(hdr, data + off, first);
        memcpy(hdr + first, data, HDR_SIZE - first);
    }
    size = dm_ne16(hdr + OFF_HDR_SIZE);
    if (size < HDR_SIZE || size > avail)
        return DM_ECORRUPT;
    if (off + size <= data_size) {
        *rec = data + off;
    } else {
        size_t first = (size_t)(data_size - off);

        memcpy(scratch, data + off, first);
        memcpy(scratch + first, data, size - first);
        *rec = scratch;
    }
    *len = size;
    return 1;
}
