/*
 * etl_file.c - the buffers of an .etl trace (a file or bytes in memory):
 * buffer 0's header and the trace header record's payload (with its time
 * zone), the index of every other buffer (chained per CPU, within the
 * memory budget), and one buffer at a time into a stream through a window:
 * a plain one read in windows, a compressed one inflated as a stream. The
 * reader's front (etl_reader.c) calls it; it calls no other file of the
 * reader (etl_internal.h lists the three).
 *
 * Every length read from the file is checked against the bytes that hold
 * it before anything is read through it (etl_reader.c says how the reader
 * as a whole treats damage).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "diskmon.h"
#include "etl/etl.h"
#include "etl/etl_internal.h"
#include "etl/lz77.h"
#include "platform/platform.h"

/* Bounds on a compressed buffer's inflated size, which only its header
 * states. ETW caps a session's buffers at 1 MB [MS-props], and no buffer
 * exceeds the session's BufferSize from the trace header; a compressed
 * buffer may claim the larger of the two, never more than 16 MB, so a forged
 * header cannot ask for gigabytes. */
#define ETW_MAX_BUFFER_BYTES (1u << 20)
#define MAX_BUFFER_BYTES (16u << 20)

/* TRACE_LOGFILE_HEADER, the payload of the first record, 32-bit layout; the
 * 64-bit layout is 8 bytes longer from 0x40 on because the two pointers at
 * 0x38 widen. docs/etw.md §4 [GC-tlh][mingw offsetof]. */
#define TLH_BUFFER_SIZE 0x00
#define TLH_VERSION 0x04
#define TLH_PROVIDER_VERSION 0x08
#define TLH_NUM_PROCESSORS 0x0C
#define TLH_LOG_FILE_MODE 0x20
#define TLH_POINTER_SIZE 0x2C
#define TLH_EVENTS_LOST 0x30
#define TLH_CPU_MHZ 0x34
#define TLH_TIME_ZONE 0x40    /* TIME_ZONE_INFORMATION, 0xAC bytes */
#define TLH_PERF_FREQ 0xF8    /* after TimeZone (0xAC bytes) and a 4-byte pad */
#define TLH_START_TIME 0x100
#define TLH_RESERVED_FLAGS 0x108 /* clock type */
#define TLH_BUFFERS_LOST 0x10C
#define TLH_SIZE32 0x110
#define TLH_WIDE_SHIFT 8      /* 64-bit layout: everything from 0x40 moves by 8 */
#define FILETIME_PER_SECOND 10000000u

/* Read len bytes at file offset off into dst. The index pass has checked the
 * range against the file size, so a short read means the file changed or
 * the disk failed. */
static int read_at(struct dm_etl *etl, uint64_t off, void *dst, size_t len,
                   char *err, size_t errlen)
{
    if (etl->mem != NULL) {
        if (off > etl->info.file_size || len > etl->info.file_size - off) {
            snprintf(err, errlen, "%s: read past the end of the trace at offset %" PRIu64,
                     etl->name, off);
            return DM_ETRUNCATED;
        }
        memcpy(dst, etl->mem + off, len);
        return 0;
    }
    if (dm_file_read_at(etl->fp, off, dst, len) != 0) {
        snprintf(err, errlen,
                 "%s: cannot read %zu bytes at offset %" PRIu64
                 " (was the file changed or truncated while being read?)",
                 etl->name, len, off);
        return DM_EIO;
    }
    return 0;
}

/* Grow a buffer the reader holds to need bytes, counting what it holds
 * (dm_etl_held_peak). */
static int grow(struct dm_etl *etl, uint8_t **buf, size_t *cap, size_t need)
{
    uint8_t *p;

    if (*cap >= need)
        return 0;
    p = realloc(*buf, need);
    if (p == NULL)
        return DM_ENOMEM;
    etl->held_now += need - *cap;
    if (etl->held_now > etl->held_peak)
        etl->held_peak = etl->held_now;
    *buf = p;
    *cap = need;
    return 0;
}

void dm_etl__release(struct dm_etl *etl, struct stream *s)
{
    etl->held_now -= s->cap + s->zcap;
    free(s->data);
    s->data = NULL;
    s->cap = 0;
    free(s->zin);
    s->zin = NULL;
    s->zcap = 0;
}

uint64_t dm_etl_held_peak(const struct dm_etl *etl)
{
    return etl->held_peak;
}

/* What a plain buffer of len record bytes read from a file holds. */
static size_t window_of(size_t len)
{
    return len < WINDOW_BYTES ? len : WINDOW_BYTES;
}

/* Read s's window of its plain buffer: the window starts at base in the
 * records, and its first keep bytes are there already. */
static int read_window(struct dm_etl *etl, struct stream *s, size_t keep,
                       char *err, size_t errlen)
{
    const struct buf_entry *e = &etl->bufs[s->cur];
    size_t len = window_of(s->total - s->base);
    int rc = read_at(etl, e->offset + BUF_HDR_SIZE + s->base + keep, s->data + keep,
                     len - keep, err, errlen);

    if (rc < 0)
        return rc;
    s->recs = s->data;
    s->len = len;
    s->pos = 0;
    return 0;
}

/*
 * Inflate more of s's compressed buffer into data[*out_pos..lim), where
 * data[0..*out_pos) is output already made (the last DM_LZ77_HISTORY bytes
 * of it, or all) and the window's records start at r0: until lim, or
 * until the buffer's records are all out, which must be where the LZ77
 * stream ends. Reads the compressed bytes in chunks (a file's) as the
 * decoder asks for them.
 */
static int inflate_more(struct dm_etl *etl, struct stream *s, size_t r0, size_t *out_pos,
                        size_t lim, char *err, size_t errlen)
{
    const struct buf_entry *e = &etl->bufs[s->cur];
    const uint64_t zend = e->offset + e->disk_size;
    const size_t end = r0 + (s->total - s->base); /* the records' end in data */
    int rc;

    if (lim > end)
        lim = end;
    for (;;) {
        size_t n;

        if (etl->mem != NULL) { /* the index checked disk_size <= the bytes left */
            rc = dm_lz77_inflate(&s->lz, etl->mem + e->offset + BUF_HDR_SIZE,
                                 e->disk_size - BUF_HDR_SIZE, &s->zpos, 1, s->data, lim,
                                 out_pos);
            break;
        }
        rc = dm_lz77_inflate(&s->lz, s->zin, s->zlen, &s->zpos, s->znext == zend, s->data,
                             lim, out_pos);
        if (rc != DM_LZ77_NEED_IN)
            break;
        /* The few bytes left unused first, then the next chunk. */
        memmove(s->zin, s->zin + s->zpos, s->zlen - s->zpos);
        s->zlen -= s->zpos;
        s->zpos = 0;
        n = s->zcap - s->zlen;
        if (n > zend - s->znext)
            n = (size_t)(zend - s->znext);
        rc = read_at(etl, s->znext, s->zin + s->zlen, n, err, errlen);
        if (rc < 0)
            return rc;
        s->zlen += n;
        s->znext += n;
    }
    if (rc < 0 || (rc == DM_LZ77_OUT_FULL && *out_pos == end)) {
        snprintf(err, errlen,
                 "%s: corrupt compressed buffer at offset %" PRIu64
                 ": its LZ77 data is malformed",
                 etl->name, e->offset);
        return DM_ECORRUPT;
    }
    if (rc == DM_LZ77_END && *out_pos != end) {
        snprintf(err, errlen,
                 "%s: corrupt compressed buffer at offset %" PRIu64
                 ": inflates to %zu bytes, its header says %zu",
                 etl->name, e->offset, s->base + (*out_pos - r0), s->total);
        return DM_ECORRUPT;
    }
    return 0;
}

/* dm_etl__refill for a compressed buffer: inflate more into the window's
 * room, or, when it has none, keep the cut record and the history before
 * it at the window's start and inflate after them. */
static int refill_inflated(struct dm_etl *etl, struct stream *s, char *err, size_t errlen)
{
    size_t r0 = (size_t)(s->recs - s->data), out_pos = r0 + s->len;
    int rc;

    if (out_pos == s->cap) {
        size_t keep = s->len - s->pos;
        size_t k = keep > DM_LZ77_HISTORY ? keep : DM_LZ77_HISTORY;

        if (k > out_pos)
            k = out_pos;
        memmove(s->data, s->data + out_pos - k, k);
        s->base += s->pos;
        s->pos = 0;
        r0 = k - keep;
        out_pos = k;
    }
    rc = inflate_more(etl, s, r0, &out_pos, s->cap, err, errlen);
    s->recs = s->data + r0;
    s->len = out_pos - r0;
    return rc;
}

/* The record at s->pos may be cut by the window's end: move the window to
 * start there, keeping the bytes of it already read (fewer than
 * RECORD_SPAN, which the caller checked, and the window holds more), or
 * grow a compressed buffer's window. */
int dm_etl__refill(struct dm_etl *etl, struct stream *s, char *err, size_t errlen)
{
    size_t keep = s->len - s->pos;
    int rc;

    if (etl->bufs[s->cur].flags & BUF_FLAG_COMPRESSED)
        return refill_inflated(etl, s, err, errlen);

    memmove(s->data, s->data + s->pos, keep);
    s->base += s->pos;
    rc = read_window(etl, s, keep, err, errlen);
    if (rc < 0) { /* the window is gone: hold nothing more of the buffer */
        s->len = keep;
        s->total = s->base + keep;
        s->pos = 0;
    }
    return rc;
}

/*
 * Check one buffer header (hdr, 72 bytes, at file offset off) and fill *e.
 * max_filled bounds the inflated size of a compressed buffer. On failure
 * returns DM_ECORRUPT or DM_ETRUNCATED with a message naming the offset.
 */
static int check_buffer_header(const struct dm_etl *etl, const uint8_t *hdr,
                               uint64_t off, uint32_t max_filled,
                               struct buf_entry *e, char *err, size_t errlen)
{
    uint64_t left = etl->info.file_size - off;

    e->offset = off;
    e->disk_size = dm_le32(hdr + BUF_OFF_SIZE);
    e->filled = dm_le32(hdr + BUF_OFF_FILLED);
    e->flags = dm_le16(hdr + BUF_OFF_FLAGS);
    e->next = NO_BUF;
    if (e->flags & BUF_FLAG_PROC_INDEX)
        e->cpu = (uint16_t)(dm_le16(hdr + BUF_OFF_CONTEXT) & PROC_INDEX_MASK);
    else
        e->cpu = hdr[BUF_OFF_CONTEXT];

    if (e->disk_size < BUF_HDR_SIZE) {
        snprintf(err, errlen,
                 "%s: corrupt buffer header at offset %" PRIu64
                 ": size %" PRIu32 " is smaller than the 72-byte header",
                 etl->name, off, e->disk_size);
        return DM_ECORRUPT;
    }
    if (e->disk_size > left) {
        snprintf(err, errlen,
                 "%s: truncated trace: the buffer at offset %" PRIu64
                 " needs %" PRIu32 " bytes but the file ends %" PRIu64
                 " bytes later (was the copy cut short?)",
                 etl->name, off, e->disk_size, left);
        return DM_ETRUNCATED;
    }
    if (e->filled < BUF_HDR_SIZE) {
        snprintf(err, errlen,
                 "%s: corrupt buffer header at offset %" PRIu64
                 ": filled size %" PRIu32 " is smaller than the 72-byte header",
                 etl->name, off, e->filled);
        return DM_ECORRUPT;
    }
    if (!(e->flags & BUF_FLAG_COMPRESSED) && e->filled > e->disk_size) {
        snprintf(err, errlen,
                 "%s: corrupt buffer header at offset %" PRIu64
                 ": filled size %" PRIu32 " exceeds the buffer size %" PRIu32,
                 etl->name, off, e->filled, e->disk_size);
        return DM_ECORRUPT;
    }
    if ((e->flags & BUF_FLAG_COMPRESSED) && e->filled > max_filled) {
        snprintf(err, errlen,
                 "%s: corrupt buffer header at offset %" PRIu64
                 ": compressed buffer claims %" PRIu32
                 " bytes, more than the %" PRIu32 " a buffer can hold",
                 etl->name, off, e->filled, max_filled);
        return DM_ECORRUPT;
    }
    return 0;
}

/* Read buffer index bi into s, or start inflating it, ready to walk from
 * its first record. A plain buffer of a trace in memory is walked where it
 * lies. */
int dm_etl__load_buffer(struct dm_etl *etl, struct stream *s, uint32_t bi,
                        char *err, size_t errlen)
{
    const struct buf_entry *e = &etl->bufs[bi];
    size_t len = e->filled - BUF_HDR_SIZE;
    int compressed = (e->flags & BUF_FLAG_COMPRESSED) != 0;
    size_t hold = compressed ? (len < LZ_WINDOW ? len : LZ_WINDOW) : window_of(len);
    size_t zhold = compressed && etl->mem == NULL ? e->disk_size - BUF_HDR_SIZE : 0;
    int rc;

    if (zhold > LZ_CHUNK)
        zhold = LZ_CHUNK;
    if (compressed && etl->mem == NULL && zhold == 0)
        zhold = 1; /* somewhere to point at, though nothing is read */
    s->cur = bi;
    s->base = 0;
    s->total = len;
    if (!compressed && etl->mem != NULL) {
        /* The index checked filled <= disk_size <= the bytes left. */
        s->recs = etl->mem + e->offset + BUF_HDR_SIZE;
    } else if (grow(etl, &s->data, &s->cap, hold > 0 ? hold : 1) != 0 ||
               (zhold > 0 && grow(etl, &s->zin, &s->zcap, zhold) != 0)) {
        snprintf(err, errlen, "%s: out of memory for the buffer at offset %" PRIu64,
                 etl->name, e->offset);
        return DM_ENOMEM;
    } else if (compressed) {
        size_t out_pos = 0;

        dm_lz77_init(&s->lz);
        s->zlen = s->zpos = 0;
        s->znext = e->offset + BUF_HDR_SIZE;
        rc = inflate_more(etl, s, 0, &out_pos, len <= hold ? len : LZ_FIRST_FILL, err,
                          errlen);
        if (rc < 0)
            return rc;
        s->recs = s->data;
        len = out_pos;
    } else {
        rc = read_window(etl, s, 0, err, errlen);
        if (rc < 0)
            return rc;
        len = s->len;
    }
    s->next = e->next;
    s->len = len;
    s->pos = 0;
    etl->bytes_done += e->disk_size;
    if (etl->on_buffer != NULL && etl->on_buffer(etl->on_buffer_ctx, etl->bytes_done)) {
        snprintf(err, errlen, "%s: stopped", etl->name);
        return DM_ESTOPPED;
    }
    return 0;
}

/* TIME_ZONE_INFORMATION (minwinbase.h / timezoneapi.h in the mingw-w64
 * headers): LONG Bias @0; WCHAR StandardName[32] @4; SYSTEMTIME StandardDate
 * @0x44; LONG StandardBias @0x54; WCHAR DaylightName[32] @0x58; SYSTEMTIME
 * DaylightDate @0x98; LONG DaylightBias @0xA8; 0xAC bytes in all. SYSTEMTIME
 * is eight WORDs: year, month, day of week, day, hour, minute, second, ms.
 * The names are not kept: they are resource references ("@tzres.dll,-212"). */
#define TZI_BIAS 0x00
#define TZI_STANDARD_DATE 0x44
#define TZI_STANDARD_BIAS 0x54
#define TZI_DAYLIGHT_DATE 0x98
#define TZI_DAYLIGHT_BIAS 0xA8

static void read_systemtime(const uint8_t *p, struct dm_tz_date *d)
{
    d->year = dm_le16(p);
    d->month = dm_le16(p + 2);
    d->day_of_week = dm_le16(p + 4);
    d->day = dm_le16(p + 6);
    d->hour = dm_le16(p + 8);
    d->minute = dm_le16(p + 10);
    d->second = dm_le16(p + 12);
    d->milliseconds = dm_le16(p + 14);
}

/* p points at 0xAC bytes inside the header payload (checked by the caller's
 * length check: TLH_SIZE32 covers it). */
static void read_time_zone(const uint8_t *p, struct dm_time_zone *tz)
{
    tz->bias = (int32_t)dm_le32(p + TZI_BIAS);
    tz->standard_bias = (int32_t)dm_le32(p + TZI_STANDARD_BIAS);
    tz->daylight_bias = (int32_t)dm_le32(p + TZI_DAYLIGHT_BIAS);
    read_systemtime(p + TZI_STANDARD_DATE, &tz->standard_date);
    read_systemtime(p + TZI_DAYLIGHT_DATE, &tz->daylight_date);
    tz->valid = 1;
}

/*
 * The trace header record (rec, buffer 0's first record as the reader
 * framed it, NULL when the buffer held none; marker: its marker) into
 * etl->info: the TRACE_LOGFILE_HEADER fields, the time zone, the
 * timestamps' clock, and the bound on compressed buffers that follows from
 * BufferSize.
 */
int dm_etl__read_trace_header(struct dm_etl *etl, const struct dm_etl_record *rec,
                              uint32_t marker, char *err, size_t errlen)
{
    const unsigned wide = marker == MARKER_HEADER64 ? TLH_WIDE_SHIFT : 0;
    const uint8_t *p;
    uint32_t cpu_mhz;

    if (rec == NULL || rec->group != 0 || rec->opcode != 0 ||
        rec->payload_len < TLH_SIZE32 + wide) {
        snprintf(err, errlen,
                 "%s: not an .etl trace (the record at offset %u is not a "
                 "complete trace header)",
                 etl->name, BUF_HDR_SIZE);
        return DM_ECORRUPT;
    }
    p = rec->payload;
    etl->info.buffer_size = dm_le32(p + TLH_BUFFER_SIZE);
    etl->info.os_version = dm_le32(p + TLH_VERSION);
    etl->info.provider_version = dm_le32(p + TLH_PROVIDER_VERSION);
    etl->info.number_of_processors = dm_le32(p + TLH_NUM_PROCESSORS);
    etl->info.log_file_mode = dm_le32(p + TLH_LOG_FILE_MODE);
    etl->info.pointer_size = dm_le32(p + TLH_POINTER_SIZE);
    etl->info.events_lost = dm_le32(p + TLH_EVENTS_LOST);
    cpu_mhz = dm_le32(p + TLH_CPU_MHZ);
    etl->info.perf_freq = dm_le64(p + TLH_PERF_FREQ + wide);
    etl->info.qpc_freq = etl->info.perf_freq;
    etl->info.start_time = dm_le64(p + TLH_START_TIME + wide);
    etl->info.reserved_flags = dm_le32(p + TLH_RESERVED_FLAGS + wide);
    etl->info.buffers_lost = dm_le32(p + TLH_BUFFERS_LOST + wide);
    etl->info.header_timestamp = rec->timestamp;
    read_time_zone(p + TLH_TIME_ZONE + wide, &etl->info.time_zone);

    /* perf_freq is the rate of the record timestamps, which depends on the
     * session's clock [MS-wnode]: QPC ticks (PerfFreq), FILETIME units, or
     * CPU cycles at CpuSpeedInMHz. */
    if (etl->info.reserved_flags == DM_ETL_CLOCK_SYSTEM_TIME)
        etl->info.perf_freq = FILETIME_PER_SECOND;
    else if (etl->info.reserved_flags == DM_ETL_CLOCK_CPU_CYCLES && cpu_mhz != 0)
        etl->info.perf_freq = (uint64_t)cpu_mhz * 1000000u;
    if (etl->info.perf_freq == 0) {
        snprintf(err, errlen,
                 "%s: corrupt trace header at offset %u: the timer frequency "
                 "(PerfFreq) is 0",
                 etl->name, BUF_HDR_SIZE);
        return DM_ECORRUPT;
    }
    if (etl->info.pointer_size != 4 && etl->info.pointer_size != 8) {
        snprintf(err, errlen,
                 "%s: corrupt trace header at offset %u: PointerSize %" PRIu32
                 " is neither 4 nor 8",
                 etl->name, BUF_HDR_SIZE, etl->info.pointer_size);
        return DM_ECORRUPT;
    }
    etl->max_filled = ETW_MAX_BUFFER_BYTES;
    if (etl->info.buffer_size > etl->max_filled)
        etl->max_filled = etl->info.buffer_size < MAX_BUFFER_BYTES
                              ? etl->info.buffer_size
                              : MAX_BUFFER_BYTES;
    return 0;
}

static int add_buffer(struct dm_etl *etl, const struct buf_entry *e)
{
    if (etl->nbufs == etl->bufs_cap) {
        uint32_t cap = etl->bufs_cap ? etl->bufs_cap * 2 : 64;
        struct buf_entry *p;

        if (etl->bufs_cap >= NO_BUF / 4)
            return DM_ENOMEM;
        p = realloc(etl->bufs, (size_t)cap * sizeof *p);
        if (p == NULL)
            return DM_ENOMEM;
        etl->bufs = p;
        etl->bufs_cap = cap;
    }
    etl->bufs[etl->nbufs++] = *e;
    return 0;
}

/*
 * The memory budget (etl.h). A CPU's stream holds one buffer at a time, in
 * memory that only grows until the stream ends, so what replay holds at
 * once is at most, over the CPUs, what each one's largest buffer holds,
 * and the largest chunk of compressed bytes it reads. A plain buffer read
 * from a file holds its window (WINDOW_BYTES at most), a compressed one
 * LZ_WINDOW at most and a chunk (etl_internal.h); a plain buffer of a
 * trace in memory is walked where it lies. These are what the buffer
 * headers claim, bounded by the windows; the sum is checked before
 * anything is allocated for a buffer.
 */
static uint32_t held_bytes(const struct dm_etl *etl, const struct buf_entry *e)
{
    uint32_t len = e->filled - BUF_HDR_SIZE;

    if (e->flags & BUF_FLAG_COMPRESSED)
        return len < LZ_WINDOW ? len : LZ_WINDOW;
    if (etl->mem != NULL)
        return 0;
    return (uint32_t)window_of(len);
}

/* Compressed bytes read from a file at once: a chunk. */
static uint32_t chunk_bytes(const struct dm_etl *etl, const struct buf_entry *e)
{
    uint32_t zlen = e->disk_size - BUF_HDR_SIZE;

    if (!(e->flags & BUF_FLAG_COMPRESSED) || etl->mem != NULL)
        return 0;
    return zlen < LZ_CHUNK ? zlen : LZ_CHUNK;
}

/* Every CPU a trace can name, each holding its largest window and chunk,
 * and buffer 0 beside them, fit the budget: so no trace is refused. */
_Static_assert((uint64_t)(MAX_CPUS + 1) * (LZ_WINDOW + LZ_CHUNK) <= DM_ETL_BUDGET_BYTES,
               "the windows of MAX_CPUS streams fit DM_ETL_BUDGET_BYTES");

static int over_budget(const struct dm_etl *etl, const struct buf_entry *e,
                       char *err, size_t errlen)
{
    snprintf(err, errlen,
             "%s: refused: the %sbuffer at offset %" PRIu64 " of CPU %u claims %" PRIu32
             " bytes, which takes the buffers replay holds at once to %" PRIu64
             " bytes, over the memory budget of %u MiB",
             etl->name, (e->flags & BUF_FLAG_COMPRESSED) ? "compressed " : "",
             e->offset, e->cpu, e->filled - BUF_HDR_SIZE, etl->held_max,
             DM_ETL_BUDGET_BYTES >> 20);
    return DM_ENOMEM;
}

/*
 * Walk the buffer headers after buffer 0 and chain them per CPU, one stream
 * per CPU (the merge over them is etl_reader.c's). A bad header stops the
 * walk; its error is kept for next() to report after the records of the
 * buffers before it. Only running out of memory, or the budget, fails here.
 */
int dm_etl__index_buffers(struct dm_etl *etl, char *err, size_t errlen)
{
    uint32_t last[MAX_CPUS];
    unsigned stream_of[MAX_CPUS];
    uint32_t held[MAX_CPUS];  /* per CPU, its largest buffer as held */
    uint32_t chunk[MAX_CPUS]; /* per CPU, its largest chunk of compressed bytes */
    uint64_t off = etl->bufs[0].disk_size;
    uint8_t hdr[BUF_HDR_SIZE];
    int rc;

    for (unsigned c = 0; c < MAX_CPUS; c++) {
        last[c] = NO_BUF;
        stream_of[c] = UINT32_MAX;
        held[c] = 0;
        chunk[c] = 0;
    }
    etl->held_max = held_bytes(etl, &etl->bufs[0]) + chunk_bytes(etl, &etl->bufs[0]);
    while (off < etl->info.file_size) {
        struct buf_entry e;

        if (etl->info.file_size - off < BUF_HDR_SIZE) {
            snprintf(etl->index_msg, sizeof etl->index_msg,
                     "%s: truncated trace: %" PRIu64 " bytes at offset %" PRIu64
                     " are too few for a buffer header (was the copy cut short?)",
                     etl->name, etl->info.file_size - off, off);
            etl->index_err = DM_ETRUNCATED;
            break;
        }
        rc = read_at(etl, off, hdr, sizeof hdr, etl->index_msg, sizeof etl->index_msg);
        if (rc == 0)
            rc = check_buffer_header(etl, hdr, off, etl->max_filled, &e,
                                     etl->index_msg, sizeof etl->index_msg);
        if (rc < 0) {
            etl->index_err = rc;
            break;
        }
        if (held_bytes(etl, &e) > held[e.cpu]) {
            etl->held_max += held_bytes(etl, &e) - held[e.cpu];
            held[e.cpu] = held_bytes(etl, &e);
        }
        if (chunk_bytes(etl, &e) > chunk[e.cpu]) {
            etl->held_max += chunk_bytes(etl, &e) - chunk[e.cpu];
            chunk[e.cpu] = chunk_bytes(etl, &e);
        }
        if (etl->held_max > DM_ETL_BUDGET_BYTES)
            return over_budget(etl, &e, err, errlen);
        if (add_buffer(etl, &e) != 0) {
            snprintf(err, errlen, "%s: out of memory indexing %" PRIu32 " buffers",
                     etl->name, etl->nbufs);
            return DM_ENOMEM;
        }
        if (e.flags & (BUF_FLAG_EVENTS_LOST | BUF_FLAG_BUFFER_LOST))
            etl->info.buffers_flagged_lost++;
        if (last[e.cpu] == NO_BUF) {
            stream_of[e.cpu] = etl->nstreams++;
        } else {
            etl->bufs[last[e.cpu]].next = etl->nbufs - 1;
        }
        last[e.cpu] = etl->nbufs - 1;
        off += e.disk_size;
    }

    etl->streams = calloc(etl->nstreams ? etl->nstreams : 1, sizeof *etl->streams);
    if (etl->streams == NULL) {
        snprintf(err, errlen, "%s: out of memory", etl->name);
        return DM_ENOMEM;
    }
    for (uint32_t i = etl->nbufs; i-- > 1;) {
        struct stream *s = &etl->streams[stream_of[etl->bufs[i].cpu]];

        s->cpu = etl->bufs[i].cpu;
        s->cur = NO_BUF;
        s->next = i; /* ends at the CPU's first buffer */
        s->first = i;
    }
    return 0;
}

/* Check buffer 0's header and make it the index's first entry, the
 * prologue stream's buffer (not loaded yet). */
int dm_etl__index_first(struct dm_etl *etl, char *err, size_t errlen)
{
    uint8_t hdr[BUF_HDR_SIZE];
    struct buf_entry e0;

    if (etl->info.file_size < BUF_HDR_SIZE ||
        read_at(etl, 0, hdr, sizeof hdr, err, errlen) != 0 ||
        check_buffer_header(etl, hdr, 0, MAX_BUFFER_BYTES, &e0, err, errlen) != 0) {
        snprintf(err, errlen, "%s: not an .etl trace (bad buffer header at offset 0)",
                 etl->name);
        return DM_ECORRUPT;
    }
    if (add_buffer(etl, &e0) != 0) {
        snprintf(err, errlen, "%s: out of memory", etl->name);
        return DM_ENOMEM;
    }
    if (e0.flags & (BUF_FLAG_EVENTS_LOST | BUF_FLAG_BUFFER_LOST))
        etl->info.buffers_flagged_lost++;
    etl->prologue.cpu = e0.cpu;
    return 0;
}

int dm_etl_sniff(const void *head, size_t len)
{
    uint32_t marker;

    if (len < BUF_HDR_SIZE + 4)
        return 0;
    marker = dm_le32((const uint8_t *)head + BUF_HDR_SIZE);
    return marker == MARKER_HEADER32 || marker == MARKER_HEADER64;
}
