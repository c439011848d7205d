/*
 * ftrace_page.c - parse the kernel ring buffer's sub-buffers. The layout
 * and the rules for untrusted bytes are in ftrace_page.h.
 *
 * Time stamps: a data entry adds its time_delta, a time extend adds its
 * long delta, an absolute time stamp replaces the time (taking its top 5
 * bits, which the entry cannot hold, from the current time). A discarded
 * event (padding with a non-zero time_delta; the kernel makes a zero delta
 * 1 so it is not taken for the end of the page) adds its delta too: the
 * next event's delta counts from it. libtraceevent reads it the same way,
 * and without it, on a loop device under fio with a -d filter (filtered
 * events are discarded in the ring when they nest), completions came out
 * up to 20 ms before their own starts. The `trace` file renders the same
 * times, which is how the tests check this on real pages.
 */
#include <stdio.h>
#include <string.h>

#include "diskmon.h"
#include "base/bytes.h"
#include "linux/ftrace_page.h"
#include "linux/tracefs.h"

/* Entry header: type_len in the low 5 bits of a native u32 on a
 * little-endian kernel (the bit-field comes first), the high 5 on a
 * big-endian one; time_delta in the other 27 bits. */
#define TYPE_LEN_BITS 5u
#define TIME_DELTA_BITS 27u
#define TYPE_PADDING 29u
#define TYPE_TIME_EXTEND 30u
#define TYPE_TIME_STAMP 31u
#define TYPE_DATA_MAX 28u
#define ENTRY_HDR 4u            /* the u32 before array[] */
/* Commit word (ring_buffer.c, RB_MISSED_EVENTS / RB_MISSED_STORED): the
 * flags are added to the long as a sign-extended int, so only the low 32
 * bits mean anything; the size is the low 30. */
#define COMMIT_MISSED_EVENTS 0x80000000u
#define COMMIT_MISSED_STORED 0x40000000u
#define COMMIT_SIZE_MASK 0x3FFFFFFFu
/* An absolute time stamp holds 59 bits; the top 5 come from the reader's
 * time (ring_buffer.c, TS_MSB and rb_fix_abs_ts). */
#define TS_MSB (0xF8ull << 56)
#define TS_ABS_CARRY (1ull << 59)

static void split_header(uint32_t h, uint32_t *type_len, uint32_t *delta)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    *type_len = h >> TIME_DELTA_BITS;
    *delta = h & ((1u << TIME_DELTA_BITS) - 1);
#else
    *type_len = h & ((1u << TYPE_LEN_BITS) - 1);
    *delta = h >> TYPE_LEN_BITS;
#endif
}

/* The number on the line of header_event that starts with key (after
 * blanks): the first run of digits after the key. Nonzero when found. */
static int header_number(const char *text, size_t len, const char *key, uint32_t *v)
{
    size_t klen = strlen(key), pos = 0;

    while (pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - pos, i = 0;

        pos += n + (nl != NULL);
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (n - i < klen || memcmp(line + i, key, klen) != 0)
            continue;
        i += klen;
        while (i < n && (line[i] < '0' || line[i] > '9'))
            i++;
        if (i == n)
            return 0;
        *v = 0;
        while (i < n && line[i] >= '0' && line[i] <= '9' && *v < 100000)
            *v = *v * 10 + (uint32_t)(line[i++] - '0');
        return 1;
    }
    return 0;
}

/*
 * Whether the header fields lie before the entries and the entries leave
 * room for one entry header in the sub-buffer. Every sum is taken in 64
 * bits: the offsets come from a text file, and a data offset near 2^32
 * would wrap a 32-bit sum and pass, sending the reader gigabytes past the
 * page. dm_ftrace_page_open asks again, as a layout may be filled in by hand.
 */
static int layout_fits(const struct dm_ftrace_layout *l)
{
    return (uint64_t)l->ts_off + 8 <= l->data_off &&
           (uint64_t)l->commit_off + l->commit_size <= l->data_off &&
           (l->commit_size == 4 || l->commit_size == 8) &&
           (uint64_t)l->data_off + ENTRY_HDR < l->subbuf_size;
}

int dm_ftrace_layout_parse(const char *header_page, size_t page_len,
                           const char *header_event, size_t event_len,
                           uint32_t subbuf_size, struct dm_ftrace_layout *l,
                           char *err, size_t errlen)
{
    static const struct {
        const char *key;
        uint32_t want;
    } expect[] = {
        {"type_len", TYPE_LEN_BITS},  {"time_delta", TIME_DELTA_BITS},
        {"padding", TYPE_PADDING},    {"time_extend", TYPE_TIME_EXTEND},
        {"time_stamp", TYPE_TIME_STAMP}, {"data max type_len", TYPE_DATA_MAX},
    };
    struct dm_tp_format fmt;
    const struct dm_tp_field *ts, *commit, *data;
    char why[160];

    memset(l, 0, sizeof *l);
    if (dm_tp_format_parse(header_page, page_len, &fmt, why, sizeof why) != 0) {
        snprintf(err, errlen, "events/header_page: %s", why);
        return DM_EUNSUPPORTED;
    }
    ts = dm_tp_format_field(&fmt, "timestamp");
    commit = dm_tp_format_field(&fmt, "commit");
    data = dm_tp_format_field(&fmt, "data");
    if (ts == NULL || commit == NULL || data == NULL || ts->size != 8 ||
        (commit->size != 4 && commit->size != 8)) {
        snprintf(err, errlen, "events/header_page: no u64 timestamp, 4- or 8-byte "
                 "commit and data field before the entries");
        return DM_EUNSUPPORTED;
    }
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        uint32_t v;

        if (!header_number(header_event, event_len, expect[i].key, &v) ||
            v != expect[i].want) {
            snprintf(err, errlen, "events/header_event: \"%s\" is not %u as diskmon "
                     "expects", expect[i].key, (unsigned)expect[i].want);
            return DM_EUNSUPPORTED;
        }
    }
    l->ts_off = ts->offset;
    l->commit_off = commit->offset;
    l->commit_size = commit->size;
    l->data_off = data->offset;
    /* The field parser keeps offset + size within 32 bits. */
    l->subbuf_size = subbuf_size != 0 ? subbuf_size : data->offset + data->size;
    if (!layout_fits(l)) {
        snprintf(err, errlen, "events/header_page: the timestamp (offset %u), commit "
                 "(offset %u) and entries (offset %u) do not fit, in that order, a "
                 "%u-byte sub-buffer", (unsigned)l->ts_off, (unsigned)l->commit_off,
                 (unsigned)l->data_off, (unsigned)l->subbuf_size);
        return DM_EUNSUPPORTED;
    }
    return 0;
}

int dm_ftrace_page_open(const struct dm_ftrace_layout *l, const uint8_t *buf,
                        size_t len, struct dm_ftrace_page *pg,
                        struct dm_ftrace_counts *c)
{
    uint32_t commit, size;

    memset(pg, 0, sizeof *pg);
    c->pages++;
    if (len != l->subbuf_size || !layout_fits(l)) {
        c->bad_pages++;
        return DM_ECORRUPT;
    }
    /* The low 32 bits of the commit word, whatever its width: on a
     * little-endian host they come first. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    commit = dm_ne32(buf + l->commit_off + l->commit_size - 4);
#else
    commit = dm_ne32(buf + l->commit_off);
#endif
    size = commit & COMMIT_SIZE_MASK;
    if (size > l->subbuf_size - l->data_off) {
        c->bad_pages++;
        return DM_ECORRUPT;
    }
    if (commit & COMMIT_MISSED_EVENTS) {
        c->missed_pages++;
        /* The count sits right after the entries, a long wide. */
        if ((commit & COMMIT_MISSED_STORED) &&
            l->subbuf_size - l->data_off - size >= l->commit_size)
            c->missed_events += l->commit_size == 8
                                    ? dm_ne64(buf + l->data_off + size)
                                    : dm_ne32(buf + l->data_off + size);
    }
    pg->entries = buf + l->data_off;
    pg->size = size;
    pg->ts = dm_ne64(buf + l->ts_off);
    return 0;
}

static int bad_record(struct dm_ftrace_page *pg, struct dm_ftrace_counts *c)
{
    c->bad_records++;
    pg->pos = pg->size;
    return DM_ECORRUPT;
}

int dm_ftrace_page_next(struct dm_ftrace_page *pg, struct dm_ftrace_record *rec,
                        struct dm_ftrace_counts *c)
{
    while (pg->pos < pg->size) {
        uint32_t left = pg->size - pg->pos, type_len, delta, array0 = 0;
        const uint8_t *e = pg->entries + pg->pos;

        if (left < ENTRY_HDR)
            return bad_record(pg, c);
        split_header(dm_ne32(e), &type_len, &delta);
        /* Every type but the short data records has array[0]. */
        if (type_len == 0 || type_len > TYPE_DATA_MAX) {
            if (type_len == TYPE_PADDING && delta == 0) {
                /* The rest of the page is empty. */
                pg->pos = pg->size;
                return 0;
            }
            if (left < ENTRY_HDR + 4)
                return bad_record(pg, c);
            array0 = dm_ne32(e + ENTRY_HDR);
        }
        if (type_len >= 1 && type_len <= TYPE_DATA_MAX) {
            uint32_t n = type_len * 4;

            if (left < ENTRY_HDR + n)
                return bad_record(pg, c);
            pg->ts += delta;
            pg->pos += ENTRY_HDR + n;
            rec->ts = pg->ts;
            rec->data = e + ENTRY_HDR;
            rec->len = n;
            c->records++;
            return 1;
        }
        switch (type_len) {
        case 0: {
            /* array[0] = data length + 4 (itself), rounded up to 4. */
            uint32_t n;

            if (array0 < 4 || array0 > left - ENTRY_HDR)
                return bad_record(pg, c);
            n = (array0 + 3u) & ~3u;
            if (n > left - ENTRY_HDR)
                return bad_record(pg, c);
            pg->ts += delta;
            pg->pos += ENTRY_HDR + n;
            rec->ts = pg->ts;
            rec->data = e + ENTRY_HDR + 4;
            rec->len = array0 - 4;
            c->records++;
            return 1;
        }
        case TYPE_PADDING:
            /* A discarded event: skip its bytes, keep its time. */
            if (array0 > left - ENTRY_HDR || array0 % 4 != 0)
                return bad_record(pg, c);
            pg->ts += delta;
            pg->pos += ENTRY_HDR + array0;
            break;
        case TYPE_TIME_EXTEND:
            pg->ts += ((uint64_t)array0 << TIME_DELTA_BITS) + delta;
            pg->pos += ENTRY_HDR + 4;
            break;
        default: { /* TYPE_TIME_STAMP */
            uint64_t abs = ((uint64_t)array0 << TIME_DELTA_BITS) | delta;

            if (pg->ts & TS_MSB) {
                abs |= pg->ts & TS_MSB;
                if (abs < pg->ts)
                    abs += TS_ABS_CARRY;
            }
            pg->ts = abs;
            pg->pos += ENTRY_HDR + 4;
            break;
        }
        }
    }
    return 0;
}
