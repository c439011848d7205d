/*
 * block_decode.c - a block tracepoint's raw bytes into a struct
 * dm_blk_sample, every length checked.
 *
 * The bytes come from the kernel in the host's byte order; they are copied
 * with memcpy into fixed-width integers, never read through a cast pointer.
 */
#include <stdio.h>
#include <string.h>

#include "diskmon.h"
#include "base/bytes.h"
#include "linux/block_decode.h"

const char *const dm_blk_event_names[DM_BLK_KIND_COUNT] = {
    "",
    "block_io_start",
    "block_io_done",
    "block_rq_insert",
    "block_rq_issue",
    "block_rq_complete",
    "block_rq_merge",
    "block_bio_frontmerge",
    "sched_process_fork",
    "cgroup_attach_task",
};

/* Look up a field and check that its size is one of the two allowed (pass
 * the same size twice for one). Arrays pass want_array. */
static const struct dm_tp_field *need_field(const struct dm_tp_format *fmt,
                                            const char *event, const char *name,
                                            uint32_t size_a, uint32_t size_b,
                                            int want_array, int optional,
                                            int *bad, char *err, size_t errlen)
{
    const struct dm_tp_field *f = dm_tp_format_field(fmt, name);

    if (f == NULL) {
        if (!optional) {
            snprintf(err, errlen, "tracepoint block/%s has no field \"%s\"", event, name);
            *bad = 1;
        }
        return NULL;
    }
    if (want_array ? (!f->is_array || f->size == 0)
                   : (f->is_array || f->is_data_loc ||
                      (f->size != size_a && f->size != size_b))) {
        snprintf(err, errlen, "tracepoint block/%s: field \"%s\" has an unexpected "
                 "type (size %u)", event, name, (unsigned)f->size);
        *bad = 1;
        return NULL;
    }
    return f;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

int dm_blk_decoder_add(struct dm_blk_decoder *d, enum dm_blk_kind kind,
                       uint32_t id, const struct dm_tp_format *fmt, char *err,
                       size_t errlen)
{
    const char *event = dm_blk_event_names[kind];
    const struct dm_tp_field *type, *pid, *dev, *sector, *nr, *bytes, *rwbs, *comm;
    struct dm_blk_layout *l = &d->layouts[kind];
    int bad = 0;

    /* Sizes: common_type is an unsigned short, dev a dev_t (u32), sector a
     * sector_t (u64 since Linux 5.2; u32 on older 32-bit kernels), nr_sector
     * and bytes unsigned int (include/trace/events/block.h). */
    type = need_field(fmt, event, "common_type", 2, 2, 0, 0, &bad, err, errlen);
    pid = need_field(fmt, event, "common_pid", 4, 4, 0, 0, &bad, err, errlen);
    dev = need_field(fmt, event, "dev", 4, 4, 0, 0, &bad, err, errlen);
    sector = need_field(fmt, event, "sector", 8, 4, 0, 0, &bad, err, errlen);
    nr = need_field(fmt, event, "nr_sector", 4, 4, 0, 0, &bad, err, errlen);
    rwbs = need_field(fmt, event, "rwbs", 0, 0, 1, 0, &bad, err, errlen);
    bytes = need_field(fmt, event, "bytes", 4, 4, 0, 1, &bad, err, errlen);
    comm = need_field(fmt, event, "comm", 0, 0, 1, 1, &bad, err, errlen);
    if (bad)
        return DM_EUNSUPPORTED;
    /* Every event shares the common header; a common_type at another offset
     * would mean the formats cannot be trusted. */
    for (int k = 1; k < DM_BLK_KIND_COUNT; k++) {
        if (d->layouts[k].present && k != (int)kind &&
            (d->type_off != type->offset || d->pid_off != pid->offset)) {
            snprintf(err, errlen, "tracepoint block/%s: the common header moved", event);
            return DM_EUNSUPPORTED;
        }
    }
    memset(l, 0, sizeof *l);
    d->type_off = type->offset;
    d->pid_off = pid->offset;
    l->id = id;
    l->dev_off = dev->offset;
    l->dev_size = dev->size;
    l->sector_off = sector->offset;
    l->sector_size = sector->size;
    l->nr_sector_off = nr->offset;
    l->rwbs_off = rwbs->offset;
    l->rwbs_len = rwbs->size;
    l->min_raw = max_u32(type->offset + type->size, dev->offset + dev->size);
    l->min_raw = max_u32(l->min_raw, pid->offset + pid->size);
    l->min_raw = max_u32(l->min_raw, sector->offset + sector->size);
    l->min_raw = max_u32(l->min_raw, nr->offset + nr->size);
    l->min_raw = max_u32(l->min_raw, rwbs->offset + rwbs->size);
    if (bytes != NULL) {
        l->has_bytes = 1;
        l->bytes_off = bytes->offset;
        l->min_raw = max_u32(l->min_raw, bytes->offset + bytes->size);
    }
    if (comm != NULL) {
        l->comm_off = comm->offset;
        l->comm_len = comm->size < DM_BLK_COMM_MAX ? comm->size : DM_BLK_COMM_MAX;
        l->min_raw = max_u32(l->min_raw, comm->offset + comm->size);
    }
    l->present = 1;
    return 0;
}

/* Copy a fixed char array field and end it with a NUL; stops at the first
 * NUL so a short string carries no garbage. */
static void copy_str(char *dst, const uint8_t *src, uint32_t n)
{
    uint32_t i;

    for (i = 0; i < n && src[i] != 0; i++)
        dst[i] = (char)src[i];
    dst[i] = '\0';
}

void dm_blk_classify(const char *rwbs, uint32_t nr_sector, char *op,
                     uint8_t *preflush, uint8_t *request)
{
    /* blk_fill_rwbs (kernel/trace/blktrace.c): 'F' first for REQ_PREFLUSH,
     * then one op letter (W write, D discard, F flush, R read, N other;
     * "DE" is a secure erase), then flags (F fua, A readahead, S sync,
     * M meta). So a leading F is a preflush only when an op letter follows. */
    const char *p = rwbs;

    *preflush = 0;
    if (p[0] == 'F' && p[1] != '\0' && strchr("WDFRN", p[1]) != NULL) {
        *preflush = 1;
        p++;
    }
    *op = p[0] != '\0' ? p[0] : '?';
    switch (*op) {
    case 'R':
        *request = DM_REQ_READ;
        break;
    case 'W':
        /* An empty write with a preflush is how a flush is submitted
         * (blkdev_issue_flush: REQ_OP_WRITE | REQ_PREFLUSH, no data). */
        *request = *preflush && nr_sector == 0 ? DM_REQ_FLUSH : DM_REQ_WRITE;
        break;
    case 'F':
        *request = DM_REQ_FLUSH;
        break;
    case 'D':
        *request = DM_REQ_DISCARD;
        break;
    default:
        *request = DM_BLK_REQ_OTHER;
        break;
    }
}

uint16_t dm_blk_rwbs_flags(const char *rwbs)
{
    /* blk_fill_rwbs (kernel/trace/blktrace.c) writes, in this order: F for
     * REQ_PREFLUSH; the op letter (W, D, then E when it is a secure erase,
     * F, R, N); then F for REQ_FUA, A for REQ_RAHEAD, S for REQ_SYNC, M for
     * REQ_META. */
    uint16_t f = 0;
    const char *p = rwbs;

    if (p[0] == 'F' && p[1] != '\0' && strchr("WDFRN", p[1]) != NULL) {
        f |= DM_RQ_PREFLUSH;
        p++;
    }
    if (*p == '\0')
        return f;
    if (p[0] == 'D' && p[1] == 'E') {
        f |= DM_RQ_SECURE;
        p++;
    }
    for (p++; *p != '\0'; p++) {
        switch (*p) {
        case 'F':
            f |= DM_RQ_FUA;
            break;
        case 'S':
            f |= DM_RQ_SYNC;
            break;
        case 'M':
            f |= DM_RQ_META;
            break;
        case 'A':
            f |= DM_RQ_READAHEAD;
            break;
        default:
            break;
        }
    }
    return f;
}

int dm_blk_decode_raw(const struct dm_blk_decoder *d, const uint8_t *raw,
                      size_t len, struct dm_blk_sample *out)
{
    const struct dm_blk_layout *l = NULL;
    uint16_t type;
    int kind;

    if (len < (uint64_t)d->type_off + 2)
        return DM_ECORRUPT;
    type = dm_ne16(raw + d->type_off);
    for (kind = 1; kind < DM_BLK_KIND_COUNT; kind++) {
        if (d->layouts[kind].present && d->layouts[kind].id == type) {
            l = &d->layouts[kind];
            break;
        }
    }
    if (l == NULL || len < l->min_raw)
        return DM_ECORRUPT;

    out->tid = dm_ne32(raw + d->pid_off);
    out->kind = (uint8_t)kind;
    out->dev = dm_ne32(raw + l->dev_off);
    out->sector = l->sector_size == 8 ? dm_ne64(raw + l->sector_off)
                                      : dm_ne32(raw + l->sector_off);
    out->nr_sector = dm_ne32(raw + l->nr_sector_off);
    out->has_bytes = l->has_bytes;
    out->bytes = l->has_bytes ? dm_ne32(raw + l->bytes_off) : 0;
    copy_str(out->rwbs, raw + l->rwbs_off,
             l->rwbs_len < sizeof out->rwbs - 1 ? l->rwbs_len
                                                : (uint32_t)sizeof out->rwbs - 1);
    out->has_comm = l->comm_len > 0;
    out->cgroup = 0;
    out->child_pid = 0;
    /* NUL-padded to the end, so readers may compare all of it at once. */
    memset(out->comm, 0, sizeof out->comm);
    if (out->has_comm)
        copy_str(out->comm, raw + l->comm_off, l->comm_len);
    dm_blk_classify(out->rwbs, out->nr_sector, &out->op, &out->preflush,
                    &out->request);
    out->rq_flags = dm_blk_rwbs_flags(out->rwbs);
    return 0;
}
