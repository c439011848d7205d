/*
 * test_etl.c - the .etl container reader.
 *
 * Hand-built traces, written byte by byte from the layouts in docs/etw.md
 * §4 (buffer header, record headers, TRACE_LOGFILE_HEADER), are written to
 * a temporary file and read back: both pointer sizes, plain and compressed
 * buffers, every record kind, 8-byte strides, extended data items, skipped
 * kinds, the end marker, two CPUs whose buffers interleave in time, and
 * damaged files that must fail with the byte offset after returning what
 * came before. Then the real sample traces, checked against PerfView's
 * baseline and the README's DiskIo table. Last, the LZ77 inflater against
 * a plain reference decoder on random streams of every item form, whole
 * and damaged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/options.h"
#include "core/ring.h"
#include "core/sink.h"
#include "diskmon.h"
#include "dmtest.h"
#include "decode/nt_kernel.h"
#include "etl/etl.h"
#include "etl/lz77.h"

/* ---- a growable byte string ------------------------------------------- */

struct tb {
    uint8_t *p;
    size_t len, cap;
};

static void tb_free(struct tb *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Append n bytes (src, or zeros when src is NULL); returns their offset. An
 * allocation failure aborts: the tests cannot go on without memory. */
static size_t tb_put(struct tb *b, const void *src, size_t n)
{
    size_t at = b->len;

    if (n == 0) /* an empty buffer may have no storage yet */
        return at;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) {
            fprintf(stderr, "test_etl: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    if (src != NULL)
        memcpy(b->p + at, src, n);
    else
        memset(b->p + at, 0, n);
    b->len += n;
    return at;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static size_t tb_le(struct tb *b, uint64_t v, int n)
{
    size_t at = tb_put(b, NULL, (size_t)n);

    put_le(b->p + at, v, n);
    return at;
}

static void tb_fill(struct tb *b, uint8_t c, size_t n)
{
    size_t at = tb_put(b, NULL, n);

    memset(b->p + at, c, n);
}

/* Pad a record area to the 8-byte stride. */
static void tb_align8(struct tb *b)
{
    while (b->len % 8 != 0)
        tb_put(b, NULL, 1);
}

/* ---- records (docs/etw.md §4 table) ---------------------------------- */

/* SYSTEM (0x20 bytes), COMPACT (0x18) or PERFINFO (0x10) header: marker with
 * the MOF version in its low word, then Packet {Size, HookId}. */
static size_t rec_system(struct tb *r, unsigned type, unsigned hook, unsigned version,
                         uint32_t tid, uint32_t pid, uint64_t ts,
                         const void *payload, size_t plen)
{
    size_t at = r->len;
    size_t hdr = (type == 0x10 || type == 0x11) ? 0x10 : (type <= 0x02 ? 0x20 : 0x18);

    tb_le(r, 0xC0000000u | (uint32_t)type << 16 | version, 4);
    tb_le(r, hdr + plen, 2);
    tb_le(r, hook, 2);
    if (hdr == 0x10) {
        tb_le(r, ts, 8);
    } else {
        tb_le(r, tid, 4);
        tb_le(r, pid, 4);
        tb_le(r, ts, 8);
        if (hdr == 0x20)
            tb_le(r, 0x1111111122222222u, 8); /* KernelTime, UserTime */
    }
    tb_put(r, payload, plen);
    tb_align8(r);
    return at;
}

/* EVENT_TRACE_HEADER (0x30, types 0x0A/0x14) or EVENT_INSTANCE_GUID_HEADER
 * (0x48, types 0x0B/0x15): size in the marker's low word. */
static size_t rec_full(struct tb *r, unsigned type, const uint8_t guid[16],
                       unsigned ev_type, unsigned version, uint32_t tid,
                       uint32_t pid, uint64_t ts, const void *payload, size_t plen)
{
    size_t at = r->len;
    size_t hdr = (type == 0x0B || type == 0x15) ? 0x48 : 0x30;

    tb_le(r, 0xC0000000u | (uint32_t)type << 16 | (uint32_t)(hdr + plen), 4);
    tb_le(r, ev_type, 1);
    tb_le(r, 4, 1); /* Level */
    tb_le(r, version, 2);
    tb_le(r, tid, 4);
    tb_le(r, pid, 4);
    tb_le(r, ts, 8);
    tb_put(r, guid, 16);
    tb_fill(r, 0x5A, hdr - 0x28); /* times, instance ids, parent GUID */
    tb_put(r, payload, plen);
    tb_align8(r);
    return at;
}

/* EVENT_HEADER (0x50, types 0x12/0x13), optionally followed by extended
 * data items (ext, ext_len bytes, already laid out). */
static size_t rec_event(struct tb *r, unsigned type, const uint8_t guid[16],
                        unsigned opcode, unsigned version, uint32_t tid, uint32_t pid,
                        uint64_t ts, const void *ext, size_t ext_len,
                        const void *payload, size_t plen)
{
    size_t at = r->len;

    tb_le(r, 0xC0000000u | (uint32_t)type << 16 | (uint32_t)(0x50 + ext_len + plen), 4);
    tb_le(r, (ext_len ? 0x0001u : 0) | (type == 0x13 ? 0x0040u : 0x0020u), 2); /* Flags */
    tb_le(r, 0, 2);             /* EventProperty */
    tb_le(r, tid, 4);
    tb_le(r, pid, 4);
    tb_le(r, ts, 8);
    tb_put(r, guid, 16);
    tb_le(r, 0x1234, 2);        /* Id */
    tb_le(r, version, 1);
    tb_le(r, 0x10, 1);          /* Channel */
    tb_le(r, 4, 1);             /* Level */
    tb_le(r, opcode, 1);
    tb_le(r, 0x0042, 2);        /* Task */
    tb_le(r, 0x8000000000000001u, 8); /* Keyword */
    tb_le(r, 0, 8);             /* ProcessorTime */
    tb_fill(r, 0xAA, 16);       /* ActivityId */
    tb_put(r, ext, ext_len);
    tb_put(r, payload, plen);
    tb_align8(r);
    return at;
}

/* One extended data item as stored: size (with the 8-byte header), type,
 * Linkage bit, data size, data padded to 8. */
static void ext_item(struct tb *x, unsigned ext_type, int linkage, const void *data,
                     size_t dlen)
{
    size_t item = 8 + ((dlen + 7) & ~(size_t)7);

    tb_le(x, item, 2);
    tb_le(x, ext_type, 2);
    tb_le(x, linkage ? 1 : 0, 2);
    tb_le(x, dlen, 2);
    tb_put(x, data, dlen);
    tb_fill(x, 0, item - 8 - dlen);
}

/* ---- buffers and files -------------------------------------------------- */

#define F_EVENTS_LOST 0x02u
#define F_BUFFER_LOST 0x04u
#define F_PROC_INDEX 0x20u
#define F_COMPRESSED 0x40u

/* MS-XCA Plain LZ77 with literals only: per 32 bytes a flag word whose top
 * bits (one per literal) are 0 and whose unused low bits are 1; a stream
 * whose length is a multiple of 32 ends with an all-ones word. */
static void lz77_literals(struct tb *z, const uint8_t *src, size_t n)
{
    size_t i = 0;

    for (;;) {
        size_t k = n - i < 32 ? n - i : 32;

        tb_le(z, k == 32 ? 0 : 0xFFFFFFFFu >> k, 4);
        tb_put(z, src + i, k);
        i += k;
        if (k < 32)
            break;
    }
}

/*
 * Append one buffer holding recs (plus the 0xFFFFFFFF end marker if asked)
 * to file; returns its offset. Plain buffers carry 64 unused 0xFF bytes
 * after Offset, as real files do; compressed ones are exactly header plus
 * LZ77 bytes (an odd BufferSize is fine).
 */
static size_t add_buffer(struct tb *file, const struct tb *recs, unsigned cpu,
                         unsigned flags, int end_marker, unsigned buffer_type)
{
    struct tb raw = {0}, z = {0};
    size_t at = file->len, filled, disk;
    uint8_t *h;

    tb_put(&raw, recs->p, recs->len);
    if (end_marker)
        tb_le(&raw, 0xFFFFFFFFu, 4);
    filled = 0x48 + raw.len;
    if (flags & F_COMPRESSED) {
        lz77_literals(&z, raw.p, raw.len);
        disk = 0x48 + z.len;
    } else {
        disk = filled + 64;
    }
    tb_put(file, NULL, 0x48);
    h = file->p + at;
    put_le(h + 0x00, disk, 4);          /* BufferSize */
    put_le(h + 0x04, filled, 4);        /* SavedOffset */
    put_le(h + 0x10, 0x01D0000000000000u, 8); /* TimeStamp: FILETIME-like, unused */
    put_le(h + 0x18, (uint64_t)(at + 1), 8);  /* SequenceNumber */
    if (flags & F_PROC_INDEX)
        put_le(h + 0x28, cpu, 2);       /* ProcessorIndex */
    else
        h[0x28] = (uint8_t)cpu;         /* ProcessorNumber */
    put_le(h + 0x2A, 7, 2);             /* LoggerId */
    put_le(h + 0x30, filled, 4);        /* Offset */
    put_le(h + 0x34, flags, 2);         /* BufferFlag */
    put_le(h + 0x36, buffer_type, 2);   /* BufferType */
    if (flags & F_COMPRESSED) {
        tb_put(file, z.p, z.len);
    } else {
        tb_put(file, raw.p, raw.len);
        tb_fill(file, 0xFF, disk - filled);
    }
    tb_free(&raw);
    tb_free(&z);
    return at;
}

/* TRACE_LOGFILE_HEADER values a test writes and expects back. */
struct hdr_vals {
    int wide;                /* 64-bit layout and SYSTEM64 header */
    uint32_t buffer_size, version, build, nproc, mode, pointer_size;
    uint32_t events_lost, cpu_mhz, reserved_flags, buffers_lost;
    uint64_t perf_freq, start_time, ts;
};

static const struct hdr_vals hv64 = {
    1, 4096, 0x0002000Au, 19041, 4, 0x04010001u, 8, 3, 2900, 1, 2,
    10000000u, 0x01D9000000001234u, 5,
};

static const struct hdr_vals hv32 = {
    0, 8192, 0x00020106u, 7601, 2, 0x00010001u, 4, 0, 2000, 1, 0,
    3579545u, 0x01C0000000005678u, 7,
};

/*
 * Buffer 0: the trace header record (SYSTEM header, HookId 0, version 2)
 * whose payload is a TRACE_LOGFILE_HEADER, offsets from docs/etw.md §4
 * (second value 64-bit): pointers at 0x38 widen the layout by 8 from 0x40,
 * and a 4-byte pad follows TimeZone. The payload starts as 0xAB filler so a
 * field read at a wrong offset shows. extra: records to put after it.
 */
static size_t add_header_buffer(struct tb *file, const struct hdr_vals *v,
                                const struct tb *extra)
{
    uint8_t tlh[0x118 + 8];
    size_t w = v->wide ? 8 : 0, tlh_len = 0x110 + w + 8;
    struct tb recs = {0};
    size_t at;

    memset(tlh, 0xAB, sizeof tlh);
    put_le(tlh + 0x00, v->buffer_size, 4);
    put_le(tlh + 0x04, v->version, 4);
    put_le(tlh + 0x08, v->build, 4);
    put_le(tlh + 0x0C, v->nproc, 4);
    put_le(tlh + 0x20, v->mode, 4);
    put_le(tlh + 0x2C, v->pointer_size, 4);
    put_le(tlh + 0x30, v->events_lost, 4);
    put_le(tlh + 0x34, v->cpu_mhz, 4);
    put_le(tlh + 0xF8 + w, v->perf_freq, 8);
    put_le(tlh + 0x100 + w, v->start_time, 8);
    put_le(tlh + 0x108 + w, v->reserved_flags, 4);
    put_le(tlh + 0x10C + w, v->buffers_lost, 4);
    memcpy(tlh + 0x110 + w, "L\0g\0\0\0\0\0", 8); /* logger name, file name */
    rec_system(&recs, v->wide ? 0x02 : 0x01, 0x0000, 2, 1234, 5678, v->ts, tlh, tlh_len);
    if (extra != NULL)
        tb_put(&recs, extra->p, extra->len);
    at = add_buffer(file, &recs, 0, 0x01 /* FLUSH_MARKER */, 0, 4 /* HEADER */);
    tb_free(&recs);
    return at;
}

/* ---- reading back ------------------------------------------------------- */

#define MAX_RECS 64

struct got_rec {
    unsigned header_type, pointer_size, group, opcode, version, cpu;
    int has_guid;
    uint8_t guid[16];
    uint32_t tid, pid;
    uint64_t ts, buf_off;
    size_t payload_len;
    uint8_t payload[64];
};

struct got {
    int rc_open, rc_end, rc_again;
    char err_open[512], err_end[512], err_again[512];
    size_t n;
    struct got_rec r[MAX_RECS];
    struct dm_etl_info info;
    uint64_t skipped, bytes_done;
};

/* Read every record of an opened trace into g, then close it. */
static void drain(struct dm_etl *etl, struct got *g)
{
    struct dm_etl_record rec;
    int rc;

    g->info = *dm_etl_info(etl);
    while ((rc = dm_etl_next(etl, &rec, g->err_end, sizeof g->err_end)) == 1) {
        if (g->n < MAX_RECS) {
            struct got_rec *o = &g->r[g->n];
            o->header_type = rec.header_type;
            o->pointer_size = rec.pointer_size;
            o->group = rec.group;
            o->opcode = rec.opcode;
            o->version = rec.version;
            o->cpu = rec.cpu;
            o->has_guid = rec.has_guid;
            memcpy(o->guid, rec.guid, 16);
            o->tid = rec.tid;
            o->pid = rec.pid;
            o->ts = rec.timestamp;
            o->buf_off = rec.buffer_file_offset;
            o->payload_len = rec.payload_len;
            memcpy(o->payload, rec.payload,
                   rec.payload_len < sizeof o->payload ? rec.payload_len
                                                       : sizeof o->payload);
        }
        g->n++;
    }
    g->rc_end = rc;
    g->rc_again = dm_etl_next(etl, &rec, g->err_again, sizeof g->err_again);
    g->skipped = dm_etl_skipped(etl);
    g->bytes_done = dm_etl_bytes_done(etl);
    dm_etl_close(etl);
}

static unsigned temp_counter;

/* A file name in the temp folder (TMPDIR, TEMP or TMP; else the current
 * folder). */
static void temp_path(char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");

    if (dir == NULL || dir[0] == '\0')
        dir = getenv("TEMP");
    if (dir == NULL || dir[0] == '\0')
        dir = getenv("TMP");
    if (dir == NULL || dir[0] == '\0')
        dir = ".";
    snprintf(path, len, "%s/dm_test_etl_%lu_%u.etl", dir,
             (unsigned long)time(NULL), temp_counter++);
}

/* Write b to a temporary file, read it with dm_etl_open into g, remove it.
 * g->rc_open < 0 when the file could not be written or opened. */
static void run_file(const struct tb *b, struct got *g, char *path, size_t pathlen)
{
    struct dm_etl *etl = NULL;
    FILE *f;

    memset(g, 0, sizeof *g);
    temp_path(path, pathlen);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
        g->rc_open = DM_EIO;
        snprintf(g->err_open, sizeof g->err_open, "cannot write %s", path);
        return;
    }
    g->rc_open = dm_etl_open(&etl, path, g->err_open, sizeof g->err_open);
    if (g->rc_open == 0)
        drain(etl, g);
    remove(path);
}

/* The same through dm_etl_open_mem. */
static void run_mem(const struct tb *b, struct got *g)
{
    struct dm_etl *etl = NULL;

    memset(g, 0, sizeof *g);
    g->rc_open = dm_etl_open_mem(&etl, b->p, b->len, "mem.etl", g->err_open,
                                 sizeof g->err_open);
    if (g->rc_open == 0)
        drain(etl, g);
}

static int contains(const char *s, const char *sub)
{
    return s != NULL && strstr(s, sub) != NULL;
}

/* "offset N" for messages. */
static const char *offset_text(uint64_t off)
{
    static char buf[64];

    snprintf(buf, sizeof buf, "offset %" PRIu64, off);
    return buf;
}

static const uint8_t guid_a[16] = {0xd4, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
                                   0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c};
static const uint8_t guid_b[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t guid_c[16] = {0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87,
                                   0x78, 0x69, 0x5A, 0x4B, 0x3C, 0x2D, 0x1E, 0x0F};

static struct got g1, g2; /* big: kept out of the stack */

/* ---- synthetic traces --------------------------------------------------- */

DM_TEST(records_64bit)
{
    struct tb file = {0}, recs = {0}, ext = {0};
    char path[1024];
    size_t buf;
    static const uint8_t pay12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    uint8_t pay52[52];

    for (int i = 0; i < 52; i++)
        pay52[i] = (uint8_t)(0x80 + i);
    add_header_buffer(&file, &hv64, NULL);
    /* 1: SYSTEM64 DiskIo ReadInit (0x010C) v3, 0x20 + 12 = 44 bytes: stride 48. */
    rec_system(&recs, 0x02, 0x010C, 3, 44, 4, 200, pay12, 12);
    /* 2: PERFINFO64 DiskIo Read (0x010A) v3, 0x10 + 52 = 68: stride 72. */
    rec_system(&recs, 0x11, 0x010A, 3, 0, 0, 210, pay52, 52);
    /* A TIMED (0x0C) record of 20 bytes: skipped by its size. */
    tb_le(&recs, 0xC00C0000u | 20, 4);
    tb_fill(&recs, 0x33, 16);
    tb_align8(&recs);
    /* 3: COMPACT64 Thread (0x0501) v2, 0x18 + 5. */
    rec_system(&recs, 0x04, 0x0501, 2, 7, 8, 215, "abcde", 5);
    /* 4: FULL_HEADER64, class type 0x24, version 2, 3 bytes. */
    rec_full(&recs, 0x14, guid_a, 0x24, 2, 9, 10, 220, "xyz", 3);
    /* A MESSAGE (0x90 flags) record of 24 bytes: skipped. */
    tb_le(&recs, 0x90000000u | 24, 4);
    tb_fill(&recs, 0x44, 20);
    /* 5: EVENT_HEADER64 with two extended items (5 data bytes, linked; then
     * an empty one), opcode 0x11, version 5, payload "hello". */
    ext_item(&ext, 1, 1, "\x01\x02\x03\x04\x05", 5);
    ext_item(&ext, 3, 0, NULL, 0);
    rec_event(&recs, 0x13, guid_b, 0x11, 5, 11, 12, 230, ext.p, ext.len, "hello", 5);
    /* 6: INSTANCE64, type 2, version 1, 4 bytes. */
    rec_full(&recs, 0x15, guid_c, 2, 1, 13, 14, 240, "inst", 4);
    buf = add_buffer(&file, &recs, 1, 0, 1, 0);

    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_INT(g1.rc_again, 0);
    DM_ASSERT_EQ_U64(g1.n, 7);
    DM_ASSERT_EQ_U64(g1.skipped, 2);
    DM_ASSERT_EQ_U64(g1.bytes_done, file.len);

    /* The header record first. */
    DM_ASSERT_EQ_INT(g1.r[0].header_type, 0x02);
    DM_ASSERT_EQ_INT(g1.r[0].group, 0);
    DM_ASSERT_EQ_INT(g1.r[0].opcode, 0);
    DM_ASSERT_EQ_INT(g1.r[0].version, 2);
    DM_ASSERT_EQ_U64(g1.r[0].ts, 5);
    DM_ASSERT_EQ_U64(g1.r[0].payload_len, 0x118 + 8);
    DM_ASSERT_EQ_U64(g1.r[0].buf_off, 0);

    DM_ASSERT_EQ_INT(g1.r[1].header_type, 0x02);
    DM_ASSERT_EQ_INT(g1.r[1].pointer_size, 8);
    DM_ASSERT_EQ_INT(g1.r[1].group, 1);
    DM_ASSERT_EQ_INT(g1.r[1].opcode, 12);
    DM_ASSERT_EQ_INT(g1.r[1].version, 3);
    DM_ASSERT_EQ_INT(g1.r[1].tid, 44);
    DM_ASSERT_EQ_INT(g1.r[1].pid, 4);
    DM_ASSERT_EQ_U64(g1.r[1].ts, 200);
    DM_ASSERT_EQ_INT(g1.r[1].cpu, 1);
    DM_ASSERT_EQ_INT(g1.r[1].has_guid, 0);
    DM_ASSERT_EQ_U64(g1.r[1].buf_off, buf);
    DM_ASSERT_EQ_U64(g1.r[1].payload_len, 12);
    DM_ASSERT_MEM_EQ(g1.r[1].payload, pay12, 12);

    DM_ASSERT_EQ_INT(g1.r[2].header_type, 0x11);
    DM_ASSERT_EQ_INT(g1.r[2].group, 1);
    DM_ASSERT_EQ_INT(g1.r[2].opcode, 10);
    DM_ASSERT_EQ_U64(g1.r[2].tid, UINT32_MAX);
    DM_ASSERT_EQ_U64(g1.r[2].pid, UINT32_MAX);
    DM_ASSERT_EQ_U64(g1.r[2].ts, 210);
    DM_ASSERT_EQ_U64(g1.r[2].payload_len, 52);
    DM_ASSERT_MEM_EQ(g1.r[2].payload, pay52, 52);

    DM_ASSERT_EQ_INT(g1.r[3].header_type, 0x04);
    DM_ASSERT_EQ_INT(g1.r[3].group, 5);
    DM_ASSERT_EQ_INT(g1.r[3].opcode, 1);
    DM_ASSERT_EQ_INT(g1.r[3].version, 2);
    DM_ASSERT_EQ_INT(g1.r[3].tid, 7);
    DM_ASSERT_EQ_INT(g1.r[3].pid, 8);
    DM_ASSERT_EQ_U64(g1.r[3].payload_len, 5);
    DM_ASSERT_MEM_EQ(g1.r[3].payload, "abcde", 5);

    DM_ASSERT_EQ_INT(g1.r[4].header_type, 0x14);
    DM_ASSERT_EQ_INT(g1.r[4].has_guid, 1);
    DM_ASSERT_MEM_EQ(g1.r[4].guid, guid_a, 16);
    DM_ASSERT_EQ_INT(g1.r[4].group, 0);
    DM_ASSERT_EQ_INT(g1.r[4].opcode, 0x24);
    DM_ASSERT_EQ_INT(g1.r[4].version, 2);
    DM_ASSERT_EQ_INT(g1.r[4].tid, 9);
    DM_ASSERT_EQ_INT(g1.r[4].pid, 10);
    DM_ASSERT_EQ_U64(g1.r[4].ts, 220);
    DM_ASSERT_EQ_U64(g1.r[4].payload_len, 3);
    DM_ASSERT_MEM_EQ(g1.r[4].payload, "xyz", 3);

    DM_ASSERT_EQ_INT(g1.r[5].header_type, 0x13);
    DM_ASSERT_EQ_INT(g1.r[5].pointer_size, 8);
    DM_ASSERT_MEM_EQ(g1.r[5].guid, guid_b, 16);
    DM_ASSERT_EQ_INT(g1.r[5].opcode, 0x11);
    DM_ASSERT_EQ_INT(g1.r[5].version, 5);
    DM_ASSERT_EQ_INT(g1.r[5].tid, 11);
    DM_ASSERT_EQ_INT(g1.r[5].pid, 12);
    DM_ASSERT_EQ_U64(g1.r[5].ts, 230);
    DM_ASSERT_EQ_U64(g1.r[5].payload_len, 5);
    DM_ASSERT_MEM_EQ(g1.r[5].payload, "hello", 5);

    DM_ASSERT_EQ_INT(g1.r[6].header_type, 0x15);
    DM_ASSERT_MEM_EQ(g1.r[6].guid, guid_c, 16);
    DM_ASSERT_EQ_INT(g1.r[6].opcode, 2);
    DM_ASSERT_EQ_INT(g1.r[6].version, 1);
    DM_ASSERT_EQ_U64(g1.r[6].ts, 240);
    DM_ASSERT_EQ_U64(g1.r[6].payload_len, 4);
    DM_ASSERT_MEM_EQ(g1.r[6].payload, "inst", 4);

    /* Header values, each read from its own offset. */
    DM_ASSERT_EQ_U64(g1.info.file_size, file.len);
    DM_ASSERT_EQ_U64(g1.info.buffer_size, hv64.buffer_size);
    DM_ASSERT_EQ_U64(g1.info.os_version, hv64.version);
    DM_ASSERT_EQ_U64(g1.info.provider_version, hv64.build);
    DM_ASSERT_EQ_U64(g1.info.number_of_processors, hv64.nproc);
    DM_ASSERT_EQ_U64(g1.info.log_file_mode, hv64.mode);
    DM_ASSERT_EQ_U64(g1.info.pointer_size, 8);
    DM_ASSERT_EQ_U64(g1.info.events_lost, hv64.events_lost);
    DM_ASSERT_EQ_U64(g1.info.buffers_lost, hv64.buffers_lost);
    DM_ASSERT_EQ_U64(g1.info.perf_freq, hv64.perf_freq);
    DM_ASSERT_EQ_U64(g1.info.start_time, hv64.start_time);
    DM_ASSERT_EQ_U64(g1.info.reserved_flags, hv64.reserved_flags);
    DM_ASSERT_EQ_U64(g1.info.header_timestamp, hv64.ts);
    DM_ASSERT_EQ_U64(g1.info.buffers_flagged_lost, 0);

    /* The in-memory reader gives the same. */
    run_mem(&file, &g2);
    DM_ASSERT_EQ_INT(g2.rc_open, 0);
    DM_ASSERT_EQ_INT(g2.rc_end, 0);
    DM_ASSERT_EQ_U64(g2.n, g1.n);
    for (size_t i = 0; i < g1.n; i++) {
        DM_ASSERT_EQ_U64(g2.r[i].ts, g1.r[i].ts);
        DM_ASSERT_EQ_U64(g2.r[i].payload_len, g1.r[i].payload_len);
    }
    tb_free(&file);
    tb_free(&recs);
    tb_free(&ext);
}

DM_TEST(records_32bit)
{
    struct tb file = {0}, recs = {0};
    char path[1024];

    add_header_buffer(&file, &hv32, NULL);
    rec_system(&recs, 0x01, 0x010D, 2, 21, 22, 300, "\x09\x08\x07\x06", 4);
    rec_system(&recs, 0x10, 0x010B, 2, 0, 0, 310, "1234567890", 10);
    rec_system(&recs, 0x03, 0x0302, 3, 23, 24, 320, NULL, 0);
    rec_full(&recs, 0x0A, guid_a, 0x0F, 1, 25, 26, 330, "a", 1);
    rec_event(&recs, 0x12, guid_b, 0x22, 0, 27, 28, 340, NULL, 0, "ev32", 4);
    rec_full(&recs, 0x0B, guid_c, 3, 0, 29, 30, 350, NULL, 0);
    add_buffer(&file, &recs, 0, 0, 1, 0);

    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_U64(g1.n, 7);
    DM_ASSERT_EQ_U64(g1.skipped, 0);
    DM_ASSERT_EQ_INT(g1.r[0].header_type, 0x01);
    DM_ASSERT_EQ_INT(g1.r[0].pointer_size, 4);
    DM_ASSERT_EQ_U64(g1.r[0].payload_len, 0x110 + 8);
    static const unsigned types[] = {0x01, 0x01, 0x10, 0x03, 0x0A, 0x12, 0x0B};
    static const unsigned opcodes[] = {0, 13, 11, 2, 0x0F, 0x22, 3};
    static const unsigned groups[] = {0, 1, 1, 3, 0, 0, 0};
    static const uint64_t stamps[] = {7, 300, 310, 320, 330, 340, 350};
    static const size_t lens[] = {0x118, 4, 10, 0, 1, 4, 0};
    for (size_t i = 0; i < 7; i++) {
        DM_ASSERT_EQ_INT(g1.r[i].header_type, types[i]);
        DM_ASSERT_EQ_INT(g1.r[i].pointer_size, 4);
        DM_ASSERT_EQ_INT(g1.r[i].opcode, opcodes[i]);
        DM_ASSERT_EQ_INT(g1.r[i].group, groups[i]);
        DM_ASSERT_EQ_U64(g1.r[i].ts, stamps[i]);
        DM_ASSERT_EQ_U64(g1.r[i].payload_len, lens[i]);
    }
    DM_ASSERT_MEM_EQ(g1.r[2].payload, "1234567890", 10);
    DM_ASSERT_MEM_EQ(g1.r[5].payload, "ev32", 4);
    DM_ASSERT_EQ_INT(g1.r[5].tid, 27);
    DM_ASSERT_EQ_INT(g1.r[6].pid, 30);

    DM_ASSERT_EQ_U64(g1.info.pointer_size, 4);
    DM_ASSERT_EQ_U64(g1.info.buffer_size, hv32.buffer_size);
    DM_ASSERT_EQ_U64(g1.info.provider_version, hv32.build);
    DM_ASSERT_EQ_U64(g1.info.number_of_processors, hv32.nproc);
    DM_ASSERT_EQ_U64(g1.info.perf_freq, hv32.perf_freq);
    DM_ASSERT_EQ_U64(g1.info.start_time, hv32.start_time);
    DM_ASSERT_EQ_U64(g1.info.reserved_flags, hv32.reserved_flags);
    DM_ASSERT_EQ_U64(g1.info.buffers_lost, hv32.buffers_lost);
    DM_ASSERT_EQ_U64(g1.info.header_timestamp, hv32.ts);
    tb_free(&file);
    tb_free(&recs);
}

DM_TEST(clock_types)
{
    struct tb file = {0};
    struct hdr_vals v = hv32;
    char path[1024];

    /* System time: FILETIME units, whatever PerfFreq says. */
    v.reserved_flags = 2;
    v.perf_freq = 0;
    add_header_buffer(&file, &v, NULL);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.info.perf_freq, 10000000u);
    tb_free(&file);

    /* CPU cycles: CpuSpeedInMHz million per second. */
    v.reserved_flags = 3;
    add_header_buffer(&file, &v, NULL);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.info.perf_freq, 2000000000u);
    tb_free(&file);

    /* QPC with no frequency cannot be used. */
    v.reserved_flags = 1;
    add_header_buffer(&file, &v, NULL);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_open, "PerfFreq"));
    tb_free(&file);
}

/*
 * Replay a file b through dm_replay_source; the events in ev (up to max),
 * their count in *n. Returns open's or run's error, or 0; the source's
 * message in err. The file is removed before returning.
 */
static int replay_file(const struct tb *b, struct dm_event *ev, size_t max,
                       size_t *n, char *err, size_t errlen)
{
    struct dm_options opt;
    struct dm_source src;
    struct dm_sink sink;
    struct dm_ring *ring = dm_ring_create(64 * DM_RING_RECORD_MAX);
    char path[1024];
    FILE *f;
    int rc;

    *n = 0;
    err[0] = '\0';
    if (ring == NULL)
        return DM_ENOMEM;
    temp_path(path, sizeof path);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
        dm_ring_destroy(ring);
        remove(path);
        return DM_EIO;
    }
    memset(&opt, 0, sizeof opt);
    memset(&src, 0, sizeof src);
    memset(&sink, 0, sizeof sink);
    opt.replay_path = path;
    src.ops = &dm_replay_source;
    sink.ring = ring;
    sink.wait_when_full = 1;
    rc = src.ops->open(&src, &opt);
    if (rc == 0)
        rc = src.ops->run(&src, &sink);
    snprintf(err, errlen, "%s", src.errmsg);
    src.ops->close(&src);
    remove(path);
    dm_ring_close(ring);
    *n = dmt_ring_take(ring, ev, max);
    dm_ring_destroy(ring);
    return rc;
}

/*
 * A system-time (ClockType 2) trace: record timestamps are 100 ns units,
 * but DiskIo's HighResResponseTime stays in QPC ticks of the header's
 * PerfFreq (MS diskio-typegroup1; docs/etw.md §3, §7). PerfFreq here is
 * 3,579,545 Hz (the ACPI PM timer), so a wrong divisor of 10^7 shows.
 */
DM_TEST(replay_system_time_clock)
{
    struct tb file = {0}, recs = {0};
    struct hdr_vals v = hv64;
    uint8_t read[52] = {0};
    struct dm_event ev[4];
    char err[512];
    size_t n;

    v.reserved_flags = 2;
    v.perf_freq = 3579545u;
    v.ts = UINT64_C(0x01D9000000000000); /* a FILETIME */
    /* DiskIo_TypeGroup1 Read v3, x64 (docs/etw.md §3): TransferSize 8,
     * ByteOffset 16, Irp 32, HighResResponseTime 40, IssuingThreadId 48.
     * 715,909 ticks = PerfFreq / 5 = 0.2 s exactly. */
    put_le(read + 8, 4096, 4);
    put_le(read + 16, 8192, 8);
    put_le(read + 32, 0xfffffa8000001000u, 8);
    put_le(read + 40, 715909u, 8);
    put_le(read + 48, 44, 4);
    /* PERFINFO64 header, HookId 0x010A (DiskIo Read), 1.2345678 s after the
     * header in 100 ns units. */
    rec_system(&recs, 0x11, 0x010A, 3, 0, 0, v.ts + 12345678u, read, sizeof read);
    add_header_buffer(&file, &v, NULL);
    add_buffer(&file, &recs, 0, 0, 0, 0);
    DM_ASSERT_EQ_INT(replay_file(&file, ev, 4, &n, err, sizeof err), 0);
    DM_ASSERT_EQ_U64(n, 1);
    DM_ASSERT_EQ_U64(ev[0].time_ns, UINT64_C(1234567800));
    /* HRRT * 1e9 / PerfFreq; 10^7 would give 71,590,900. */
    DM_ASSERT_EQ_U64(ev[0].duration_ns, UINT64_C(200000000));
    DM_ASSERT_EQ_U64(ev[0].byte_offset, 8192u);
    DM_ASSERT_EQ_U64(ev[0].transfer_size, 4096u);
    tb_free(&file);

    /* Without PerfFreq no duration can be computed: refused, by name. */
    v.perf_freq = 0;
    add_header_buffer(&file, &v, NULL);
    add_buffer(&file, &recs, 0, 0, 0, 0);
    DM_ASSERT_EQ_INT(replay_file(&file, ev, 4, &n, err, sizeof err), DM_ECORRUPT);
    DM_ASSERT(contains(err, "PerfFreq"));
    DM_ASSERT_EQ_U64(n, 0);

    /* The cycle clock stays refused. */
    v.perf_freq = 3579545u;
    v.reserved_flags = 3;
    tb_free(&file);
    add_header_buffer(&file, &v, NULL);
    add_buffer(&file, &recs, 0, 0, 0, 0);
    DM_ASSERT_EQ_INT(replay_file(&file, ev, 4, &n, err, sizeof err), DM_EUNSUPPORTED);
    DM_ASSERT(contains(err, "ClockType 3"));
    tb_free(&file);
    tb_free(&recs);
}

DM_TEST(compressed_buffers)
{
    struct tb file = {0}, a = {0}, b = {0};
    char path[1024];
    uint8_t big[200];
    size_t ba, bb;

    for (int i = 0; i < 200; i++)
        big[i] = (uint8_t)(i * 7);
    add_header_buffer(&file, &hv64, NULL);
    /* CPU 3's first buffer compressed (a 200-byte payload spans several flag
     * words), its second plain: one stream, file order. */
    rec_system(&a, 0x11, 0x010B, 3, 0, 0, 100, big, 200);
    rec_system(&a, 0x02, 0x010D, 3, 5, 6, 101, big, 12);
    ba = add_buffer(&file, &a, 3, F_COMPRESSED | F_PROC_INDEX, 1, 0);
    rec_system(&b, 0x11, 0x010E, 3, 0, 0, 102, big + 1, 28);
    bb = add_buffer(&file, &b, 3, 0, 1, 0);

    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_U64(g1.n, 4);
    DM_ASSERT_EQ_INT(g1.r[1].opcode, 11);
    DM_ASSERT_EQ_U64(g1.r[1].payload_len, 200);
    DM_ASSERT_MEM_EQ(g1.r[1].payload, big, 64);
    DM_ASSERT_EQ_U64(g1.r[1].buf_off, ba);
    DM_ASSERT_EQ_INT(g1.r[1].cpu, 3);
    DM_ASSERT_EQ_INT(g1.r[2].opcode, 13);
    DM_ASSERT_EQ_INT(g1.r[2].tid, 5);
    DM_ASSERT_EQ_INT(g1.r[3].opcode, 14);
    DM_ASSERT_EQ_U64(g1.r[3].buf_off, bb);
    DM_ASSERT_MEM_EQ(g1.r[3].payload, big + 1, 28);
    DM_ASSERT_EQ_U64(g1.bytes_done, file.len);
    tb_free(&file);
    tb_free(&a);
    tb_free(&b);
}

/* A PERFINFO64 record whose opcode identifies it in the merged order. */
static void tagged(struct tb *r, unsigned id, uint64_t ts)
{
    uint8_t tag = (uint8_t)id;

    rec_system(r, 0x11, 0x0F00 | id, 2, 0, 0, ts, &tag, 1);
}

DM_TEST(two_cpus_merge_by_time)
{
    struct tb file = {0}, a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
    char path[1024];
    size_t off[5];

    add_header_buffer(&file, &hv64, NULL);
    /* File order A(cpu 0) B(cpu 300) C(cpu 0) D(cpu 300) E(cpu 0); CPU 300
     * needs ProcessorIndex (flag 0x20). Buffers of the two CPUs overlap. */
    tagged(&a, 1, 10);
    tagged(&a, 2, 30);
    tagged(&a, 3, 50);
    tagged(&b, 4, 20);
    tagged(&b, 5, 40);
    tagged(&b, 6, 50);
    tagged(&c, 7, 60);
    tagged(&c, 8, 90);
    tagged(&d, 9, 55);
    tagged(&d, 10, 90);
    tagged(&d, 11, 95);
    tagged(&e, 12, 95);
    off[0] = add_buffer(&file, &a, 0, 0, 1, 0);
    off[1] = add_buffer(&file, &b, 300, F_PROC_INDEX | F_COMPRESSED, 1, 0);
    off[2] = add_buffer(&file, &c, 0, 0, 0, 0); /* no end marker: Offset ends it */
    off[3] = add_buffer(&file, &d, 300, F_PROC_INDEX, 1, 0);
    off[4] = add_buffer(&file, &e, 0, F_COMPRESSED, 1, 0);

    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_U64(g1.n, 13);
    /* By hand: by time; at 50, 90 and 95 the earlier buffer in the file
     * first. */
    static const unsigned want_id[] = {1, 4, 2, 5, 3, 6, 9, 7, 8, 10, 11, 12};
    static const unsigned want_cpu[] = {0, 300, 0, 300, 0, 300, 300, 0, 0, 300, 300, 0};
    static const unsigned want_buf[] = {0, 1, 0, 1, 0, 1, 3, 2, 2, 3, 3, 4};
    DM_ASSERT_EQ_INT(g1.r[0].group, 0); /* the header first */
    for (size_t i = 0; i < 12; i++) {
        DM_ASSERT_EQ_INT(g1.r[i + 1].opcode, want_id[i]);
        DM_ASSERT_EQ_INT(g1.r[i + 1].cpu, want_cpu[i]);
        DM_ASSERT_EQ_U64(g1.r[i + 1].buf_off, off[want_buf[i]]);
        DM_ASSERT_EQ_INT(g1.r[i + 1].payload[0], want_id[i]);
    }
    tb_free(&file);
    tb_free(&a);
    tb_free(&b);
    tb_free(&c);
    tb_free(&d);
    tb_free(&e);
}

DM_TEST(lost_buffer_flags)
{
    struct tb file = {0}, r = {0};
    char path[1024];

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    add_buffer(&file, &r, 0, F_EVENTS_LOST, 1, 0);
    add_buffer(&file, &r, 1, F_BUFFER_LOST | F_COMPRESSED, 1, 0);
    add_buffer(&file, &r, 2, 0, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_U64(g1.n, 4);
    DM_ASSERT_EQ_U64(g1.info.buffers_flagged_lost, 2);
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(record_past_buffer_end)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    size_t buf, bad;

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    tagged(&r, 2, 20);
    /* A PERFINFO64 header claiming 200 bytes with 16 present. */
    bad = r.len;
    tb_le(&r, 0xC0110002u, 4);
    tb_le(&r, 200, 2);
    tb_le(&r, 0x010A, 2);
    tb_le(&r, 30, 8);
    buf = add_buffer(&file, &r, 0, 0, 0, 0);

    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 3); /* header, 1, 2 */
    DM_ASSERT_EQ_INT(g1.r[2].opcode, 2);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf + 0x48 + bad)));
    DM_ASSERT(contains(g1.err_end, path));
    /* It stays failed. */
    DM_ASSERT_EQ_INT(g1.rc_again, DM_ECORRUPT);
    DM_ASSERT_STR_EQ(g1.err_again, g1.err_end);
    tb_free(&file);

    /* In a compressed buffer the message names the buffer and the byte. */
    add_header_buffer(&file, &hv64, NULL);
    buf = add_buffer(&file, &r, 0, F_COMPRESSED, 0, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 3);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf)));
    {
        char byte[32];
        snprintf(byte, sizeof byte, "byte %zu", 0x48 + bad);
        DM_ASSERT(contains(g1.err_end, byte));
    }
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(record_smaller_than_header)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    size_t buf;

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    /* EVENT_HEADER64 whose size (0x20) cannot hold its 0x50-byte header. */
    tb_le(&r, 0xC0130020u, 4);
    tb_fill(&r, 0, 0x1C);
    buf = add_buffer(&file, &r, 0, 0, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_U64(g1.n, 2);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf + 0x48 + 24)));
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(bad_extended_item)
{
    struct tb file = {0}, r = {0}, ext = {0};
    char path[1024];
    size_t buf, at;

    add_header_buffer(&file, &hv64, NULL);
    /* Item size 64 in an event with 16 bytes after the header. */
    tb_le(&ext, 64, 2);
    tb_le(&ext, 1, 2);
    tb_le(&ext, 0, 2);
    tb_le(&ext, 4, 2);
    tb_fill(&ext, 0, 8);
    at = rec_event(&r, 0x13, guid_b, 1, 0, 1, 2, 10, ext.p, ext.len, NULL, 0);
    buf = add_buffer(&file, &r, 0, 0, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_U64(g1.n, 1);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf + 0x48 + at)));
    tb_free(&file);
    tb_free(&r);
    tb_free(&ext);
}

DM_TEST(unknown_marker)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    size_t buf;

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    tb_le(&r, 0x12345678u, 4);
    tb_fill(&r, 0, 12);
    buf = add_buffer(&file, &r, 0, 0, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_U64(g1.n, 2);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf + 0x48 + 24)));
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(buffer_past_eof)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    size_t cut;

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    tagged(&r, 2, 20);
    add_buffer(&file, &r, 0, 0, 1, 0);
    /* CPU 1's buffer cut in half: BufferSize runs past the end of file. */
    cut = add_buffer(&file, &r, 1, 0, 1, 0);
    file.len = cut + 60;
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 3);
    DM_ASSERT_EQ_INT(g1.r[2].opcode, 2);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ETRUNCATED);
    DM_ASSERT(contains(g1.err_end, offset_text(cut)));
    DM_ASSERT_EQ_INT(g1.rc_again, DM_ETRUNCATED);

    /* 30 stray bytes after the last buffer: too few for a header. */
    file.len = cut + 30;
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_U64(g1.n, 3);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ETRUNCATED);
    DM_ASSERT(contains(g1.err_end, offset_text(cut)));
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(bad_compressed_data)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    size_t buf;

    add_header_buffer(&file, &hv64, NULL);
    tagged(&r, 1, 10);
    buf = add_buffer(&file, &r, 0, F_COMPRESSED, 1, 0);
    /* First item a match with no output yet. */
    memset(file.p + buf + 0x48, 0xFF, 4);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 1);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf)));
    tb_free(&file);
    tb_free(&r);
}

#define WIN 0x18000u  /* WINDOW_BYTES (etl_internal.h) */

/* LZ77 for n bytes: the lit literals, then one match of distance 1 (the
 * last literal again) with a 32-bit length ([MS-XCA] 2.4: token length
 * code 7, nibble 15, byte 255, a 16-bit 0, then length - 3); the last flag
 * word's other bits are match flags, which end the stream. */
static void lz_fill(struct tb *z, const uint8_t *lit, size_t nlit, size_t n)
{
    tb_le(z, 0xFFFFFFFFu >> nlit, 4);
    tb_put(z, lit, nlit);
    tb_le(z, 0x0007, 2);
    tb_le(z, 0xFF0F, 2);
    tb_le(z, 0, 2);
    tb_le(z, n - nlit - 3, 4);
}

/*
 * Compressed buffers whose headers claim 16 MiB each, one per CPU, for
 * every CPU a trace can name (2,048): each CPU holds a window, not its
 * claim, so they all fit the budget and the trace opens. When the LZ77
 * data inflates to what the header claims (a 16-byte record, then the end
 * marker's 0xFF bytes), every record comes back, holding little; when it
 * inflates to less, the first buffer read fails naming it and the sizes.
 */
DM_TEST(claims_held_as_windows)
{
    struct hdr_vals hv = hv64;
    struct tb file = {0};
    const uint32_t claim = 16u << 20;
    const unsigned cpus = 2048;
    size_t first = 0;
    char want[128];

    hv.buffer_size = claim;
    for (int damaged = 0; damaged < 2; damaged++) {
        struct dm_etl *etl = NULL;
        struct dm_etl_record rec;
        char err[512];
        uint64_t n = 0, peak;
        int rc, bad = 0;

        file.len = 0;
        add_header_buffer(&file, &hv, NULL);
        for (unsigned cpu = 0; cpu < cpus; cpu++) {
            struct tb r = {0}, z = {0};
            uint8_t ff = 0xFF;
            size_t at;

            rec_system(&r, 0x11, 0x0A00, 2, 0, 0, 100 + cpu, NULL, 0);
            tb_put(&r, &ff, 1);
            if (damaged)
                lz_fill(&z, r.p, r.len, 1000); /* 1,000 bytes, not 16 MiB */
            else
                lz_fill(&z, r.p, r.len, claim - 0x48);
            at = add_buffer(&file, &r, cpu, F_COMPRESSED | F_PROC_INDEX, 0, 0);
            if (cpu == 0)
                first = at;
            /* Its LZ77 data, and its claim. */
            file.len = at + 0x48;
            tb_put(&file, z.p, z.len);
            put_le(file.p + at + 0x00, 0x48 + z.len, 4);
            put_le(file.p + at + 0x30, claim, 4);
            tb_free(&r);
            tb_free(&z);
        }
        rc = dm_etl_open_mem(&etl, file.p, file.len, "mem.etl", err, sizeof err);
        DM_ASSERT_EQ_INT(rc, 0);
        rc = dm_etl_next(etl, &rec, err, sizeof err); /* the trace header */
        while (rc == 1 && (rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1)
            bad += rec.timestamp != 100 + n++ || rec.cpu != n - 1;
        peak = dm_etl_held_peak(etl);
        dm_etl_close(etl);
        if (damaged) {
            DM_ASSERT_EQ_INT(rc, DM_ECORRUPT);
            DM_ASSERT_EQ_U64(n, 0);
            DM_ASSERT(contains(err, offset_text(first)));
            snprintf(want, sizeof want, "inflates to 1000 bytes, its header says %" PRIu32,
                     claim - 0x48);
            DM_ASSERT(contains(err, want));
        } else {
            DM_ASSERT_EQ_INT(rc, 0);
            DM_ASSERT_EQ_U64(n, cpus);
            DM_ASSERT_EQ_INT(bad, 0);
        }
        /* A window per CPU at most (allocated; each touched its first
         * fill only). */
        DM_ASSERT(peak <= (uint64_t)(cpus + 1) * (0x2000 + WIN));
    }
    tb_free(&file);
}

/* A legitimate trace is never refused: 64 CPUs, a header BufferSize of
 * 16 MiB (Windows 8+ allows 16 MB buffers), compressed and plain buffers of
 * 64 KB, read from a file (where plain buffers are held too). */
DM_TEST(budget_takes_64_cpus)
{
    struct hdr_vals hv = hv64;
    struct tb file = {0};
    char path[1024];
    uint8_t pad[65000];

    memset(pad, 0x5A, sizeof pad);
    hv.buffer_size = 16u << 20;
    add_header_buffer(&file, &hv, NULL);
    for (unsigned cpu = 0; cpu < 64; cpu++) {
        struct tb r = {0};

        rec_system(&r, 0x11, 0x0A00, 2, 0, 0, 100 + cpu, pad, sizeof pad);
        add_buffer(&file, &r, cpu, (cpu & 1 ? F_COMPRESSED : 0) | F_PROC_INDEX, 1, 0);
        tb_free(&r);
    }
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_INT(g1.rc_end, 0);
    DM_ASSERT_EQ_U64(g1.n, 65);
    tb_free(&file);
}

/* ---- windows over large plain buffers ---------------------------------- */

/* A plain buffer read from a file is held through a window of 96 KiB,
 * which moves to start at a record the window's end cuts (etl_internal.h):
 * records are at most 65,535 bytes (16-bit size fields, docs/etw.md §4).
 * These put records at the window's edges and check each comes back
 * whole. */

/* A PERFINFO64 record (0x10 header) of size bytes in all, tagged id: the
 * HookId's opcode is id's low byte, the payload starts with id and then
 * holds (id * 7 + i) bytes, so a record cut or shifted anywhere shows. */
static void sized(struct tb *r, uint32_t id, uint64_t ts, size_t size)
{
    static uint8_t pay[0xFFFF];
    size_t plen = size - 0x10;

    for (size_t i = 0; i < plen; i++)
        pay[i] = (uint8_t)(id * 7u + i);
    if (plen >= 4)
        put_le(pay, id, 4);
    rec_system(r, 0x11, 0x0A00 | (id & 0xFFu), 2, 0, 0, ts, pay, plen);
}

/* Read what sized() wrote: every record of the trace after its header, in
 * order, must be id 1.., with ts == id, and the payload the pattern of
 * sizes[id - 1]. Returns the count, or a negative at the first mismatch
 * (and the end's rc in *rc_end, its message in err). */
static long check_sized(struct dm_etl *etl, const size_t *sizes, size_t n,
                        int *rc_end, char *err, size_t errlen)
{
    struct dm_etl_record rec;
    long got = 0;
    int rc;

    rc = dm_etl_next(etl, &rec, err, errlen); /* the trace header */
    while (rc == 1 && (rc = dm_etl_next(etl, &rec, err, errlen)) == 1) {
        uint32_t id = (uint32_t)got + 1;

        if ((size_t)got >= n || rec.timestamp != id || rec.opcode != (id & 0xFFu) ||
            rec.payload_len != sizes[got] - 0x10)
            return -1 - got;
        for (size_t i = 0; i < rec.payload_len; i++)
            if (rec.payload[i] != (i < 4 && rec.payload_len >= 4
                                       ? (uint8_t)(id >> (8 * i))
                                       : (uint8_t)(id * 7u + i)))
                return -1 - got;
        got++;
    }
    *rc_end = rc;
    return got;
}

/* The record sizes of the window tests, in buffer order, from offset 0 of
 * the records (records start 8-aligned): twelve of 8 KiB end exactly at
 * the first window's end; the next window starts with the largest record,
 * 65,535 bytes, and one more puts the next record's start 8 bytes before
 * the window's end (its marker and size inside, the rest not); the one
 * after it leaves 16 bytes, a whole PERFINFO header, in the window; then
 * sizes all over, so that later windows end everywhere, the last one short
 * and last record large. */
static size_t window_sizes(size_t *sizes, size_t max)
{
    size_t n = 0;

    for (int i = 0; i < 12; i++)
        sizes[n++] = 0x2000;         /* 12 * 0x2000 == WIN */
    sizes[n++] = 0xFFFF;             /* stride 0x10000 */
    sizes[n++] = 0x7FF8;             /* to WIN - 8 */
    sizes[n++] = 0x30;               /* cut after its first 8 bytes */
    sizes[n++] = 0xFFFF;             /* 0x10030 */
    sizes[n++] = 0x7FC0;             /* to 0x17FF0: WIN - 16 */
    sizes[n++] = 0x1000;             /* cut after its 16-byte header */
    for (size_t i = 0; n + 1 < max && i < 40; i++)
        sizes[n++] = 0x10 + (i * 0x1357u) % 0xFFF0; /* sizes all over */
    sizes[n++] = 0xFFFF;
    return n;
}

DM_TEST(window_records_whole)
{
    static size_t sizes[64];
    struct tb file = {0}, r = {0};
    char path[1024], err[512];
    size_t n = window_sizes(sizes, 60), total = 0;
    int rc_end = 1;
    long got;

    add_header_buffer(&file, &hv64, NULL);
    for (size_t i = 0; i < n; i++) {
        sized(&r, (uint32_t)i + 1, i + 1, sizes[i]);
        total = r.len;
    }
    DM_ASSERT(total > 4 * WIN); /* several windows */
    add_buffer(&file, &r, 0, 0, 1, 0);

    for (int pass = 0; pass < 4; pass++) {
        struct dm_etl *etl = NULL;
        FILE *f;

        temp_path(path, sizeof path);
        f = fopen(path, "wb");
        DM_ASSERT(f != NULL && fwrite(file.p, 1, file.len, f) == file.len &&
                  fclose(f) == 0);
        /* From a file (a window), from memory (in place), and a selecting
         * pass that takes the group of every record (its skip loop stops
         * at the window's limit too) or of none but the header. */
        if (pass == 1)
            DM_ASSERT_EQ_INT(dm_etl_open_mem(&etl, file.p, file.len, "mem.etl", err,
                                             sizeof err), 0);
        else
            DM_ASSERT_EQ_INT(dm_etl_open(&etl, path, err, sizeof err), 0);
        if (pass >= 2) {
            struct dm_etl_select sel;

            memset(&sel, 0, sizeof sel);
            sel.groups[0] = 1;                /* the header's group 0 */
            if (pass == 2)
                sel.groups[0x0A >> 3] |= 1u << (0x0A & 7); /* the records' */
            dm_etl_select(etl, &sel);
        }
        got = check_sized(etl, sizes, n, &rc_end, err, sizeof err);
        if (pass == 0)
            DM_ASSERT(dm_etl_held_peak(etl) <= 2 * WIN); /* buffer 0, a window */
        dm_etl_close(etl);
        remove(path);
        if (pass == 3) {
            DM_ASSERT_EQ_INT(got, 0);
        } else {
            DM_ASSERT_EQ_INT(got, (long)n);
        }
        DM_ASSERT_EQ_INT(rc_end, 0);
    }
    tb_free(&file);
    tb_free(&r);
}

/* Damage past the first window names its true file offset (or, in a
 * compressed buffer, its true place after inflating), after every record
 * before it. */
DM_TEST(window_damage_offset)
{
    static size_t sizes[64];
    struct tb file = {0}, r = {0};
    char path[1024];
    char byte[32];
    size_t buf, bad;

    window_sizes(sizes, 60);
    add_header_buffer(&file, &hv64, NULL);
    for (size_t i = 0; i < 30; i++)
        sized(&r, (uint32_t)i + 1, i + 1, sizes[i]);
    bad = r.len;
    DM_ASSERT(bad > 2 * WIN);
    tb_le(&r, 0x12345678u, 4); /* no known marker */
    tb_fill(&r, 0, 60);
    buf = add_buffer(&file, &r, 0, 0, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 31);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf + 0x48 + bad)));
    DM_ASSERT(contains(g1.err_end, "unknown marker 0x12345678"));
    tb_free(&file);

    /* Compressed: the buffer's offset and the byte's place in it after
     * inflating, several windows on. */
    add_header_buffer(&file, &hv64, NULL);
    buf = add_buffer(&file, &r, 0, F_COMPRESSED, 1, 0);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, 0);
    DM_ASSERT_EQ_U64(g1.n, 31);
    DM_ASSERT_EQ_INT(g1.rc_end, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_end, offset_text(buf)));
    snprintf(byte, sizeof byte, "(byte %zu after inflating)", 0x48 + bad);
    DM_ASSERT(contains(g1.err_end, byte));
    tb_free(&file);
    tb_free(&r);
}

#ifndef _WIN32
#include <sys/statvfs.h>
#endif

/* Write n bytes at offset off of f (a sparse file: what lies between
 * writes is a hole). */
static int put_at(FILE *f, long off, const void *p, size_t n)
{
    return fseek(f, off, SEEK_SET) == 0 && fwrite(p, 1, n, f) == n ? 0 : -1;
}

/*
 * 64 CPUs of full 16 MiB plain buffers (1 GiB, which the budget of
 * whole buffers refused) open, return every record in time order, and
 * hold a window per CPU. The file is sparse: each 64 KiB block of a buffer
 * is a tagged 32-byte SYSTEM record and a MESSAGE record (skipped) filling
 * the rest, whose bytes are a hole.
 */
#define BIG_CPUS 64u
#define BIG_BUF (16u << 20)
#define BIG_BLOCK 0x10000u

DM_TEST(budget_takes_64_cpus_of_16mib)
{
    struct hdr_vals hv = hv64;
    struct tb head = {0}, r = {0};
    struct dm_etl *etl = NULL;
    struct dm_etl_record rec;
    char path[1024], err[512];
    const unsigned blocks = BIG_BUF / BIG_BLOCK;
    uint64_t n = 0, last_ts = 0;
    long base;
    FILE *f;
    int rc, bad = 0;

#ifdef _WIN32
    DM_SKIP("needs a sparse 1 GiB temporary file (POSIX seek past the end)");
#else
    {
        struct statvfs vfs;
        char dir[1024], *slash;

        temp_path(path, sizeof path);
        snprintf(dir, sizeof dir, "%s", path);
        slash = strrchr(dir, '/');
        if (slash != NULL)
            *slash = '\0';
        DM_REQUIRE(statvfs(dir, &vfs) == 0 &&
                       (uint64_t)vfs.f_bavail * vfs.f_frsize >= (256u << 20),
                   "fewer than 256 MiB free in the temporary folder for a sparse "
                   "1 GiB trace");
    }
#endif
    hv.buffer_size = BIG_BUF;
    add_header_buffer(&head, &hv, NULL);
    f = fopen(path, "wb");
    DM_ASSERT(f != NULL);
    rc = put_at(f, 0, head.p, head.len);
    base = (long)head.len;
    for (unsigned cpu = 0; rc == 0 && cpu < BIG_CPUS; cpu++) {
        long at = base + (long)cpu * (long)BIG_BUF;
        uint8_t h[0x48];

        memset(h, 0, sizeof h);
        put_le(h + 0x00, BIG_BUF, 4);   /* BufferSize */
        put_le(h + 0x28, cpu, 2);       /* ProcessorIndex */
        put_le(h + 0x30, BIG_BUF, 4);   /* Offset: full */
        put_le(h + 0x34, F_PROC_INDEX, 2);
        rc = put_at(f, at, h, sizeof h);
        for (unsigned b = 0; rc == 0 && b < blocks; b++) {
            /* Block b of every CPU before block b + 1 of any: the CPUs
             * interleave in time. The last block is 0x48 shorter. */
            size_t room = BIG_BLOCK - (b + 1 == blocks ? 0x48 : 0);

            r.len = 0;
            tagged(&r, cpu, 1000 + (uint64_t)b * BIG_CPUS + cpu);
            tb_le(&r, 0x90000000u | (uint32_t)(room - r.len), 4); /* MESSAGE */
            rc = put_at(f, at + 0x48 + (long)b * BIG_BLOCK, r.p, r.len);
        }
    }
    if (rc == 0) { /* the last hole ends the file */
        uint8_t z = 0;
        rc = put_at(f, base + (long)BIG_CPUS * BIG_BUF - 1, &z, 1);
    }
    if (fclose(f) != 0)
        rc = -1;
    if (rc != 0)
        remove(path);
    DM_ASSERT_EQ_INT(rc, 0);

    rc = dm_etl_open(&etl, path, err, sizeof err);
    if (rc != 0)
        remove(path);
    DM_ASSERT_EQ_INT(rc, 0);
    rc = dm_etl_next(etl, &rec, err, sizeof err); /* the trace header */
    while (rc == 1 && (rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1) {
        if (rec.timestamp != 1000 + n || rec.cpu != n % BIG_CPUS ||
            rec.opcode != n % BIG_CPUS)
            bad++;
        last_ts = rec.timestamp;
        n++;
    }
    {
        uint64_t peak = dm_etl_held_peak(etl);

        dm_etl_close(etl);
        remove(path);
        DM_ASSERT_EQ_INT(rc, 0);
        DM_ASSERT_EQ_INT(bad, 0);
        DM_ASSERT_EQ_U64(n, (uint64_t)BIG_CPUS * blocks);
        DM_ASSERT_EQ_U64(last_ts, 1000 + n - 1);
        /* A window per CPU and buffer 0's: 6.1 MiB, not 1 GiB. */
        DM_ASSERT(peak <= (uint64_t)(BIG_CPUS + 1) * WIN);
        DM_ASSERT(peak >= (uint64_t)BIG_CPUS * WIN);
    }
    tb_free(&head);
    tb_free(&r);
}

DM_TEST(not_an_etl)
{
    struct tb file = {0}, r = {0};
    char path[1024];
    static const char text[] =
        "This is a plain text file, long enough to fill a buffer header and "
        "then some more, but it is not an event trace log.\n";

    tb_put(&file, text, sizeof text - 1);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_open, "not an .etl trace (bad buffer header at offset 0)"));
    DM_ASSERT(contains(g1.err_open, path));
    tb_free(&file);

    /* Empty and short files. */
    tb_put(&file, "x", 1);
    file.len = 0;
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_open, "not an .etl trace"));
    file.len = 1;
    run_mem(&file, &g1);
    DM_ASSERT_EQ_INT(g1.rc_open, DM_ECORRUPT);
    tb_free(&file);

    /* A sound buffer whose first record is not the trace header. */
    tagged(&r, 1, 10);
    add_buffer(&file, &r, 0, 0, 1, 4);
    run_file(&file, &g1, path, sizeof path);
    DM_ASSERT_EQ_INT(g1.rc_open, DM_ECORRUPT);
    DM_ASSERT(contains(g1.err_open, "not an .etl trace"));
    DM_ASSERT(contains(g1.err_open, "offset 72"));
    tb_free(&file);
    tb_free(&r);
}

DM_TEST(missing_file)
{
    static int dummy;
    struct dm_etl *etl = (struct dm_etl *)(void *)&dummy;
    char err[512] = "";
    int rc = dm_etl_open(&etl, "/nonexistent/dir/none.etl", err, sizeof err);

    DM_ASSERT_EQ_INT(rc, DM_EOPEN);
    DM_ASSERT(etl == NULL);
    DM_ASSERT(contains(err, "none.etl"));
}

/* ---- the real samples --------------------------------------------------- */

/* Count DiskIo (group 1) records per opcode 10..15 over a whole sample and
 * check the merged timestamps never go back. */
struct sample_scan {
    int rc_open, rc_end;
    char err[512];
    uint64_t records, backwards, cpu_out_of_range;
    uint64_t diskio[6];
    struct dm_etl_info info;
    unsigned first_group, first_opcode;
    uint64_t first_ts;
};

static void scan_sample(const char *name, struct sample_scan *s)
{
    char path[1024];
    struct dm_etl *etl;
    struct dm_etl_record rec;
    uint64_t last = 0;
    int rc;

    memset(s, 0, sizeof *s);
    snprintf(path, sizeof path, "%s/%s", dmt_shared_etl_dir(), name);
    s->rc_open = dm_etl_open(&etl, path, s->err, sizeof s->err);
    if (s->rc_open != 0)
        return;
    s->info = *dm_etl_info(etl);
    while ((rc = dm_etl_next(etl, &rec, s->err, sizeof s->err)) == 1) {
        if (s->records == 0) {
            s->first_group = rec.group;
            s->first_opcode = rec.opcode;
            s->first_ts = rec.timestamp;
        }
        s->records++;
        if (rec.timestamp < last)
            s->backwards++;
        last = rec.timestamp;
        if (rec.cpu >= s->info.number_of_processors)
            s->cpu_out_of_range++;
        if (rec.group == 1 && rec.opcode >= 10 && rec.opcode <= 15 &&
            (rec.header_type == 0x02 || rec.header_type == 0x11))
            s->diskio[rec.opcode - 10]++;
    }
    s->rc_end = rc;
    dm_etl_close(etl);
}

static struct sample_scan scan;

DM_TEST(sample_perfview_win8)
{
    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder ../shared/etl not found");
    scan_sample("perfview-net452-x64-win8.etl", &scan);
    DM_ASSERT_EQ_INT(scan.rc_open, 0);
    DM_ASSERT_EQ_INT(scan.rc_end, 0);
    /* The header event as PerfView's baseline prints it (EVENT 0.000):
     * BufferSize=65,536; Version=131,590; ProviderVersion=9,200;
     * NumberOfProcessors=8; LogFileMode=67,174,401; PointerSize=8;
     * EventsLost=0; PerfFreq=10,000,000; ReservedFlags=1; BuffersLost=0. */
    DM_ASSERT_EQ_U64(scan.info.buffer_size, 65536);
    DM_ASSERT_EQ_U64(scan.info.os_version, 131590);
    DM_ASSERT_EQ_U64(scan.info.provider_version, 9200);
    DM_ASSERT_EQ_U64(scan.info.number_of_processors, 8);
    DM_ASSERT_EQ_U64(scan.info.log_file_mode, 67174401u);
    DM_ASSERT(scan.info.log_file_mode & 0x04000000u); /* COMPRESSED_MODE */
    DM_ASSERT_EQ_U64(scan.info.pointer_size, 8);
    DM_ASSERT_EQ_U64(scan.info.events_lost, 0);
    DM_ASSERT_EQ_U64(scan.info.perf_freq, 10000000u);
    DM_ASSERT_EQ_U64(scan.info.reserved_flags, 1);
    DM_ASSERT_EQ_U64(scan.info.buffers_lost, 0);
    DM_ASSERT_EQ_U64(scan.info.file_size, 4879401u); /* README */
    /* The trace header event comes first and is time 0. */
    DM_ASSERT_EQ_INT(scan.first_group, 0);
    DM_ASSERT_EQ_INT(scan.first_opcode, 0);
    DM_ASSERT_EQ_U64(scan.first_ts, scan.info.header_timestamp);
    DM_ASSERT_EQ_U64(scan.backwards, 0);
    DM_ASSERT_EQ_U64(scan.cpu_out_of_range, 0);
    /* README: Read/Write/ReadInit/WriteInit/FlushBuffers/FlushInit. */
    DM_ASSERT_EQ_U64(scan.diskio[0], 1208);
    DM_ASSERT_EQ_U64(scan.diskio[1], 21);
    DM_ASSERT_EQ_U64(scan.diskio[2], 1208);
    DM_ASSERT_EQ_U64(scan.diskio[3], 21);
    DM_ASSERT_EQ_U64(scan.diskio[4], 2);
    DM_ASSERT_EQ_U64(scan.diskio[5], 2);
}

DM_TEST(sample_filtrace_win11)
{
    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder ../shared/etl not found");
    scan_sample("filtrace-diskio-win11.etl", &scan);
    DM_ASSERT_EQ_INT(scan.rc_open, 0);
    DM_ASSERT_EQ_INT(scan.rc_end, 0);
    /* README: Windows 11, 10.0 build 26200, 64-bit, compressed, 10 MHz. */
    DM_ASSERT_EQ_U64(scan.info.provider_version, 26200);
    DM_ASSERT_EQ_U64(scan.info.os_version & 0xFF, 10);
    DM_ASSERT_EQ_U64(scan.info.pointer_size, 8);
    DM_ASSERT(scan.info.log_file_mode & 0x04000000u);
    DM_ASSERT_EQ_U64(scan.info.perf_freq, 10000000u);
    DM_ASSERT_EQ_U64(scan.info.file_size, 373578u);
    /* Every buffer's CPU is below the header's processor count. */
    DM_ASSERT(scan.info.number_of_processors >= 1);
    DM_ASSERT_EQ_U64(scan.cpu_out_of_range, 0);
    DM_ASSERT_EQ_INT(scan.first_group, 0);
    DM_ASSERT_EQ_U64(scan.backwards, 0);
    DM_ASSERT_EQ_U64(scan.diskio[0], 2);
    DM_ASSERT_EQ_U64(scan.diskio[1], 117);
    DM_ASSERT_EQ_U64(scan.diskio[2], 2);
    DM_ASSERT_EQ_U64(scan.diskio[3], 116);
    DM_ASSERT_EQ_U64(scan.diskio[4], 0);
    DM_ASSERT_EQ_U64(scan.diskio[5], 4);
}

/* ---- selection (dm_etl_select) against the full merge ------------------- */

/*
 * The oracle for a selecting reader is the full reader: every record
 * dm_etl_next returns without a selection, kept when the selection would
 * pick it, must be what the selecting reader returns, in the same order,
 * ending with the same code and message. Random traces cover what the
 * samples lack: streams that go back in time, picks in buffer 0, damage
 * in a stream that also holds skipped records, compressed buffers.
 */

/* xorshift64: a fixed sequence per seed, so a failing case can be rerun. */
static uint32_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 32);
}

/* What the selection of a case picks: HookId groups in pick_groups (bit g),
 * GUIDs b and c as pick_guids bits 0 and 1; of the groups picked, every
 * HookId but pick_skip_hook (0: none left out; through the opcodes
 * bitmap). */
static unsigned pick_groups, pick_guids, pick_skip_hook;
static uint8_t pick_opcodes[DM_ETL_HOOK_BYTES];

static int guid_picked(const uint8_t guid[16])
{
    return ((pick_guids & 1u) && memcmp(guid, guid_b, 16) == 0) ||
           ((pick_guids & 2u) && memcmp(guid, guid_c, 16) == 0);
}

static int record_picked(const struct dm_etl_record *r)
{
    if (r->has_guid)
        return guid_picked(r->guid);
    if (pick_skip_hook != 0 && (r->group << 8 | r->opcode) == pick_skip_hook)
        return 0;
    return r->group < 32 && (pick_groups >> r->group & 1u);
}

static void case_selection(struct dm_etl_select *sel)
{
    memset(sel, 0, sizeof *sel);
    for (unsigned g = 0; g < 32; g++)
        if (pick_groups >> g & 1u)
            sel->groups[g >> 3] |= (uint8_t)(1u << (g & 7u));
    sel->guid_wanted = guid_picked;
    if (pick_skip_hook != 0) {
        memset(pick_opcodes, 0xFF, sizeof pick_opcodes);
        pick_opcodes[pick_skip_hook >> 3] &= (uint8_t)~(1u << (pick_skip_hook & 7u));
        sel->opcodes = pick_opcodes;
    }
}

struct seq_rec {
    uint64_t ts, buf_off;
    unsigned cpu, group, opcode, header_type;
    size_t payload_len;
    uint32_t sum;            /* of the payload bytes */
};

struct seq {
    size_t n, cap;
    struct seq_rec *r;
    int rc;
    char err[512];
};

static void seq_add(struct seq *q, const struct dm_etl_record *rec)
{
    struct seq_rec *o;

    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 256;
        struct seq_rec *p = realloc(q->r, cap * sizeof *p);

        if (p == NULL) {
            fprintf(stderr, "test_etl: out of memory\n");
            exit(1);
        }
        q->r = p;
        q->cap = cap;
    }
    o = &q->r[q->n++];
    o->ts = rec->timestamp;
    o->buf_off = rec->buffer_file_offset;
    o->cpu = rec->cpu;
    o->group = rec->group;
    o->opcode = rec->opcode;
    o->header_type = rec->header_type;
    o->payload_len = rec->payload_len;
    o->sum = 0;
    for (size_t i = 0; i < rec->payload_len; i++)
        o->sum = o->sum * 31u + rec->payload[i];
}

/* Read etl to its end into q: with the case's selection (select), or every
 * record kept when keep() says so (the oracle). */
static void read_seq(struct dm_etl *etl, int select, int (*keep)(const struct dm_etl_record *),
                     struct seq *q)
{
    struct dm_etl_select sel;
    struct dm_etl_record rec;

    q->n = 0;
    q->err[0] = '\0';
    if (select) {
        case_selection(&sel);
        dm_etl_select(etl, &sel);
    }
    while ((q->rc = dm_etl_next(etl, &rec, q->err, sizeof q->err)) == 1)
        if (keep == NULL || keep(&rec))
            seq_add(q, &rec);
}

/* Compare two sequences; returns the index of the first difference, or
 * SIZE_MAX when they are equal (records, end code and message). */
static size_t seq_diff(const struct seq *a, const struct seq *b)
{
    size_t n = a->n < b->n ? a->n : b->n;

    for (size_t i = 0; i < n; i++) {
        const struct seq_rec *x = &a->r[i], *y = &b->r[i];

        if (x->ts != y->ts || x->buf_off != y->buf_off || x->cpu != y->cpu ||
            x->group != y->group || x->opcode != y->opcode ||
            x->header_type != y->header_type || x->payload_len != y->payload_len ||
            x->sum != y->sum)
            return i;
    }
    if (a->n != b->n || a->rc != b->rc || strcmp(a->err, b->err) != 0)
        return n;
    return SIZE_MAX;
}

/* One record of a random trace: its kind from r, payload a 4-byte tag. */
static void random_record(struct tb *recs, uint32_t r, uint32_t tag, uint64_t ts)
{
    uint8_t pay[4];

    put_le(pay, tag, 4);
    switch (r % 9) {
    case 0: case 1: case 2: /* DiskIo completions and Inits, the bulk */
        rec_system(recs, 0x11, 0x010A, 3, 0, 0, ts, pay, 4);
        break;
    case 3:
        rec_system(recs, 0x02, 0x010C, 3, 7, 8, ts, pay, 4);
        break;
    case 4: /* Process */
        rec_system(recs, 0x02, 0x0302, 4, 7, 8, ts, pay, 4);
        break;
    case 5: /* Thread, compact header */
        rec_system(recs, 0x04, 0x0502, 3, 7, 8, ts, pay, 4);
        break;
    case 6: /* FileIo */
        rec_system(recs, 0x11, 0x0424, 2, 0, 0, ts, pay, 4);
        break;
    case 7:
        rec_full(recs, 0x14, (r >> 8) & 1 ? guid_b : guid_c, 0x24, 2, 9, 10, ts, pay, 4);
        break;
    default:
        rec_event(recs, 0x13, (r >> 8) & 1 ? guid_b : guid_a, 0x11, 1, 9, 10, ts,
                  NULL, 0, pay, 4);
        break;
    }
}

/*
 * A random trace: 1 to 6 CPUs, up to 30 buffers of up to 12 records, some
 * compressed, times rising per CPU but now and then going back. damage: 1
 * puts one record with an unknown marker somewhere, 2 an EVENT_HEADER
 * record with a bad extended item, 3 cuts the file at a random byte.
 */
static void random_trace(struct tb *file, uint64_t *seed, int damage)
{
    uint64_t now[6] = {0};
    struct tb extra = {0};
    unsigned ncpu = 1 + rnd(seed) % 6, nbufs = 1 + rnd(seed) % 30;
    unsigned bad_buf = rnd(seed) % nbufs, tag = 1;
    unsigned n0 = rnd(seed) % 3;

    for (unsigned i = 0; i < n0; i++) /* records beside the trace header */
        random_record(&extra, rnd(seed), tag++, 1 + rnd(seed) % 100);
    add_header_buffer(file, &hv64, &extra);
    tb_free(&extra);
    for (unsigned b = 0; b < nbufs; b++) {
        struct tb recs = {0};
        unsigned cpu = rnd(seed) % ncpu, nrec = rnd(seed) % 13;
        unsigned bad_rec = nrec > 0 ? rnd(seed) % nrec : 0;

        for (unsigned i = 0; i < nrec; i++) {
            uint64_t ts;

            now[cpu] += rnd(seed) % 20;
            ts = now[cpu];
            if (rnd(seed) % 8 == 0) /* back in time */
                ts = ts > 25 ? ts - rnd(seed) % 25 : 0;
            if (damage && b == bad_buf && i == bad_rec && damage == 1) {
                tb_le(&recs, 0x12345678u, 4);
                tb_le(&recs, 0, 4);
            } else if (damage && b == bad_buf && i == bad_rec && damage == 2) {
                uint8_t bad_ext[8] = {4, 0, 1, 0, 0, 0, 0, 0}; /* item size 4 < 8 */

                rec_event(&recs, 0x13, guid_a, 0x11, 1, 9, 10, ts, bad_ext, 8, "zz", 2);
            } else {
                random_record(&recs, rnd(seed), tag++, ts);
            }
        }
        add_buffer(file, &recs, cpu, rnd(seed) % 3 == 0 ? F_COMPRESSED : 0,
                   rnd(seed) % 2, 0);
        tb_free(&recs);
    }
    if (damage == 3 && file->len > 0x200)
        file->len = 0x200 + rnd(seed) % (file->len - 0x200);
}

static struct seq seq_full, seq_sel;

DM_TEST(select_matches_full_merge_random)
{
    unsigned cases = 0, damaged_failures = 0, backwards = 0;

    for (uint64_t c = 0; c < 3000; c++) {
        uint64_t seed = 0x9E3779B97F4A7C15u * (c + 1);
        struct tb file = {0};
        struct dm_etl *a = NULL, *b = NULL;
        char err[512];
        size_t at;

        random_trace(&file, &seed, (int)(c % 4));
        pick_groups = rnd(&seed) & (1u << 0 | 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5);
        pick_guids = rnd(&seed) & 3u;
        /* Now and then one opcode of the DiskIo group left out: a
         * completion (0x010A) or an Init (0x010C) of the records above. */
        pick_skip_hook = c % 3 == 0 ? 0 : c % 3 == 1 ? 0x010Au : 0x010Cu;
        if (dm_etl_open_mem(&a, file.p, file.len, "rand.etl", err, sizeof err) != 0) {
            tb_free(&file);
            continue; /* cut inside buffer 0: nothing to compare */
        }
        DM_ASSERT_EQ_INT(dm_etl_open_mem(&b, file.p, file.len, "rand.etl", err, sizeof err), 0);
        read_seq(a, 0, record_picked, &seq_full);
        read_seq(b, 1, NULL, &seq_sel);
        at = seq_diff(&seq_full, &seq_sel);
        if (at != SIZE_MAX)
            dmt_fail_at(__FILE__, __LINE__,
                        "case %u: selection differs from the full merge at record %zu "
                        "(full: %zu records, rc %d \"%s\"; selected: %zu, rc %d \"%s\")",
                        (unsigned)c, at, seq_full.n, seq_full.rc, seq_full.err,
                        seq_sel.n, seq_sel.rc, seq_sel.err);
        cases++;
        damaged_failures += seq_full.rc < 0;
        for (size_t i = 1; i < seq_full.n; i++)
            backwards += seq_full.r[i].ts < seq_full.r[i - 1].ts;
        dm_etl_close(a);
        dm_etl_close(b);
        tb_free(&file);
        if (dmt_status != DMT_PASS)
            break;
    }
    /* The cases did what they are for: most opened, damage was met, and
     * merged picks went back in time (streams not in time order). */
    pick_skip_hook = 0;
    DM_ASSERT(cases > 2500);
    DM_ASSERT(damaged_failures > 500);
    DM_ASSERT(backwards > 100);
    free(seq_full.r);
    free(seq_sel.r);
    memset(&seq_full, 0, sizeof seq_full);
    memset(&seq_sel, 0, sizeof seq_sel);
}

/* The selection replay's naming pass uses, asked of the decoder's classes
 * (replay.c): every class but DiskIo and unknown ones. */
static int naming_guid(const uint8_t guid[16])
{
    enum dm_kclass k = dm_kclass_from_guid(guid);

    return k != DM_K_OTHER && k != DM_K_DISKIO;
}

static int naming_record(const struct dm_etl_record *r)
{
    enum dm_kclass k = r->has_guid ? dm_kclass_from_guid(r->guid)
                                   : dm_kclass_from_group(r->group);

    return k != DM_K_OTHER && k != DM_K_DISKIO;
}

/* Both samples, and a file read through the path (pread) rather than from
 * memory: the naming selection gives the full merge's naming records, in
 * its order; after dm_etl_rewind the full pass is the same as from a fresh
 * open. */
static void check_sample_selection(const char *name, uint64_t min_naming)
{
    char path[1024], err[512];
    struct dm_etl *a = NULL, *b = NULL;
    struct dm_etl_select sel;
    struct dm_etl_record rec;
    struct seq again = {0};
    size_t at;

    snprintf(path, sizeof path, "%s/%s", dmt_shared_etl_dir(), name);
    DM_ASSERT_EQ_INT(dm_etl_open(&a, path, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(dm_etl_open(&b, path, err, sizeof err), 0);
    read_seq(a, 0, naming_record, &seq_full);
    memset(&sel, 0, sizeof sel);
    for (unsigned g = 0; g < 256; g++) {
        enum dm_kclass k = dm_kclass_from_group(g);

        if (k != DM_K_OTHER && k != DM_K_DISKIO)
            sel.groups[g >> 3] |= (uint8_t)(1u << (g & 7u));
    }
    sel.guid_wanted = naming_guid;
    dm_etl_select(b, &sel);
    seq_sel.n = 0;
    seq_sel.err[0] = '\0';
    while ((seq_sel.rc = dm_etl_next(b, &rec, seq_sel.err, sizeof seq_sel.err)) == 1)
        seq_add(&seq_sel, &rec);
    at = seq_diff(&seq_full, &seq_sel);
    if (at != SIZE_MAX)
        dmt_fail_at(__FILE__, __LINE__, "%s: naming records differ at %zu (%zu vs %zu)",
                    name, at, seq_full.n, seq_sel.n);
    DM_ASSERT_EQ_INT(seq_full.rc, 0);
    DM_ASSERT(seq_full.n >= min_naming);

    /* Rewound without a selection: every record, as a fresh reader gives. */
    dm_etl_select(b, NULL);
    DM_ASSERT_EQ_INT(dm_etl_rewind(b, err, sizeof err), 0);
    read_seq(b, 0, NULL, &again);
    dm_etl_close(a);
    DM_ASSERT_EQ_INT(dm_etl_open(&a, path, err, sizeof err), 0);
    read_seq(a, 0, NULL, &seq_full);
    DM_ASSERT_EQ_U64(seq_diff(&seq_full, &again), SIZE_MAX);
    DM_ASSERT(again.n > seq_sel.n);
    dm_etl_close(a);
    dm_etl_close(b);
    free(again.r);
}

DM_TEST(select_naming_records_samples)
{
    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder ../shared/etl not found");
    /* Counted with the full reader: Process, Thread, FileIo and SysConfig
     * records of each sample (thousands in the 2012 one, dozens in the
     * other) must all come through; the exact list is the oracle's. */
    check_sample_selection("perfview-net452-x64-win8.etl", 1000);
    check_sample_selection("filtrace-diskio-win11.etl", 10);
    free(seq_full.r);
    free(seq_sel.r);
    memset(&seq_full, 0, sizeof seq_full);
    memset(&seq_sel, 0, sizeof seq_sel);
}

/* dm_etl_on_buffer: a nonzero answer stops the pass with DM_ESTOPPED, which
 * sticks; a rewind starts over. */
static unsigned buffers_seen;

static int stop_at_third(void *ctx, uint64_t bytes_done)
{
    (void)ctx;
    (void)bytes_done;
    return ++buffers_seen >= 3;
}

DM_TEST(on_buffer_stops_pass)
{
    char path[1024], err[512];
    struct dm_etl *etl = NULL;
    struct dm_etl_record rec;
    uint64_t n = 0;
    int rc;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder ../shared/etl not found");
    snprintf(path, sizeof path, "%s/%s", dmt_shared_etl_dir(), "perfview-net452-x64-win8.etl");
    DM_ASSERT_EQ_INT(dm_etl_open(&etl, path, err, sizeof err), 0);
    buffers_seen = 0;
    dm_etl_on_buffer(etl, stop_at_third, NULL);
    while ((rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1)
        n++;
    DM_ASSERT_EQ_INT(rc, DM_ESTOPPED);
    DM_ASSERT_EQ_INT(buffers_seen, 3);
    DM_ASSERT(n < 179474); /* the sample's record count */
    DM_ASSERT_EQ_INT(dm_etl_next(etl, &rec, err, sizeof err), DM_ESTOPPED);
    dm_etl_on_buffer(etl, NULL, NULL);
    DM_ASSERT_EQ_INT(dm_etl_rewind(etl, err, sizeof err), 0);
    n = 0;
    while ((rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1)
        n++;
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_U64(n, 179474);
    dm_etl_close(etl);
}

/* ---- the LZ77 inflater against a reference ---------------------------- */

/*
 * A plain reading of [MS-XCA] 2.3/2.4, one item and one byte at a time,
 * with the inflater's contract (lz77.h) for malformed input: the fast
 * inflater must give the same result on every input, valid or not.
 */
static long lz_reference(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap)
{
    size_t ip = 0, op = 0, half = SIZE_MAX;
    uint32_t flags = 0;
    int nflags = 0;

    if (in_len == 0)
        return 0;
    for (;;) {
        size_t dist, len;
        unsigned token;

        if (nflags == 0) {
            if (ip == in_len)
                break;
            if (in_len - ip < 4)
                return DM_ECORRUPT;
            flags = (uint32_t)in[ip] | (uint32_t)in[ip + 1] << 8 |
                    (uint32_t)in[ip + 2] << 16 | (uint32_t)in[ip + 3] << 24;
            ip += 4;
            nflags = 32;
        }
        nflags--;
        if (!(flags >> nflags & 1u)) {
            if (ip >= in_len || op >= cap)
                return DM_ECORRUPT;
            out[op++] = in[ip++];
            continue;
        }
        if (ip == in_len)
            break;
        if (in_len - ip < 2)
            return DM_ECORRUPT;
        token = in[ip] | in[ip + 1] << 8;
        ip += 2;
        dist = (token >> 3) + 1;
        len = token & 7u;
        if (len == 7) {
            if (half == SIZE_MAX) {
                if (ip >= in_len)
                    return DM_ECORRUPT;
                len = in[ip] & 15u;
                half = ip++;
            } else {
                len = in[half] >> 4;
                half = SIZE_MAX;
            }
            if (len == 15) {
                if (ip >= in_len)
                    return DM_ECORRUPT;
                len = in[ip++];
                if (len == 255) {
                    if (in_len - ip < 2)
                        return DM_ECORRUPT;
                    len = (size_t)in[ip] | (size_t)in[ip + 1] << 8;
                    ip += 2;
                    if (len == 0) {
                        if (in_len - ip < 4)
                            return DM_ECORRUPT;
                        len = (size_t)in[ip] | (size_t)in[ip + 1] << 8 |
                              (size_t)in[ip + 2] << 16 | (size_t)in[ip + 3] << 24;
                        ip += 4;
                    }
                    /* The wide forms hold length - 3 whole: at least 22. */
                    if (len < 22)
                        return DM_ECORRUPT;
                    len -= 22;
                }
                len += 15;
            }
            len += 7;
        }
        len += 3;
        if (dist > op || len > cap - op)
            return DM_ECORRUPT;
        for (size_t i = 0; i < len; i++, op++)
            out[op] = out[op - dist];
    }
    return (long)op;
}

/* An MS-XCA writer for the test: items go after their flag word, which is
 * patched when its 32 items are in; the last word is padded with match
 * flags, which end the stream. plain gets the bytes the items stand for. */
struct lz_writer {
    struct tb z, plain;
    size_t flag_at, half_at;
    unsigned items;
    uint32_t flags;
};

static void lz_flag(struct lz_writer *w, unsigned bit)
{
    if (w->items == 32) {
        put_le(w->z.p + w->flag_at, w->flags, 4);
        w->items = 0;
    }
    if (w->items == 0) {
        w->flag_at = tb_le(&w->z, 0, 4);
        w->flags = 0;
    }
    w->flags |= (uint32_t)bit << (31 - w->items);
    w->items++;
}

static void lz_literal(struct lz_writer *w, uint8_t c)
{
    lz_flag(w, 0);
    tb_put(&w->z, &c, 1);
    tb_put(&w->plain, &c, 1);
}

/* A match of len bytes from dist back (both valid for plain so far unless
 * the caller means damage; plain then gets nothing). */
static void lz_match(struct lz_writer *w, size_t dist, size_t len)
{
    size_t m = len - 3;

    lz_flag(w, 1);
    tb_le(&w->z, (dist - 1) << 3 | (m < 7 ? m : 7), 2);
    if (m >= 7) {
        size_t n = m - 7, nib = n < 15 ? n : 15;

        if (w->half_at == SIZE_MAX) {
            w->half_at = tb_le(&w->z, nib, 1);
        } else {
            w->z.p[w->half_at] |= (uint8_t)(nib << 4);
            w->half_at = SIZE_MAX;
        }
        if (n >= 15) {
            tb_le(&w->z, n - 15 < 255 ? n - 15 : 255, 1);
            if (n - 15 >= 255) {
                if (m <= 0xFFFF) {
                    tb_le(&w->z, m, 2);
                } else {
                    tb_le(&w->z, 0, 2);
                    tb_le(&w->z, m, 4);
                }
            }
        }
    }
    if (dist <= w->plain.len)
        for (size_t i = 0; i < len; i++) {
            uint8_t c = w->plain.p[w->plain.len - dist];
            tb_put(&w->plain, &c, 1);
        }
}

static void lz_finish(struct lz_writer *w)
{
    if (w->items > 0) {
        w->flags |= w->items < 32 ? (UINT32_C(1) << (32 - w->items)) - 1 : 0;
        put_le(w->z.p + w->flag_at, w->flags, 4);
    }
}

static uint32_t lz_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 32);
}

/* A random stream: literal runs of 0..40, matches of every length form
 * and of near, far and overlapping distances. */
static void lz_random_stream(struct lz_writer *w, uint64_t *seed, size_t target)
{
    memset(w, 0, sizeof *w);
    w->half_at = SIZE_MAX;
    while (w->plain.len < target) {
        unsigned run = lz_rand(seed) % 41, pick = lz_rand(seed) % 100;
        size_t len, dist;

        if (lz_rand(seed) % 4 == 0)
            run = 0;
        for (unsigned i = 0; i < run; i++)
            lz_literal(w, (uint8_t)(lz_rand(seed) % 7 + 'a'));
        if (w->plain.len == 0)
            continue;
        if (pick < 60)
            len = 3 + lz_rand(seed) % 14;          /* token or nibble */
        else if (pick < 85)
            len = 3 + lz_rand(seed) % 300;         /* the byte form */
        else if (pick < 98)
            len = 280 + lz_rand(seed) % 3000;      /* the 16-bit form */
        else
            len = 65539 + lz_rand(seed) % 5000;    /* the 32-bit form */
        dist = lz_rand(seed) % 3 == 0 ? 1 + lz_rand(seed) % 20
                                      : 1 + lz_rand(seed) % 8192;
        if (dist > w->plain.len)
            dist = w->plain.len;
        lz_match(w, dist, len);
    }
    lz_finish(w);
}

DM_TEST(lz77_matches_reference)
{
    uint64_t seed = 0x9E3779B97F4A7C15u;
    size_t cap_max = 300000;
    uint8_t *a = malloc(cap_max), *b = malloc(cap_max);
    unsigned valid = 0, corrupt = 0;

    DM_ASSERT(a != NULL && b != NULL);
    for (unsigned iter = 0; iter < 400; iter++) {
        struct lz_writer w;
        size_t cap;
        long got, want;

        lz_random_stream(&w, &seed, 1 + lz_rand(&seed) % 100000);
        DM_ASSERT(w.plain.len <= cap_max);
        /* The writer, the reference and the inflater agree on a whole
         * valid stream. */
        want = lz_reference(w.z.p, w.z.len, b, cap_max);
        got = dm_lz77_decompress(w.z.p, w.z.len, a, w.plain.len);
        DM_ASSERT_EQ_INT(want, (long)w.plain.len);
        DM_ASSERT_EQ_INT(got, (long)w.plain.len);
        DM_ASSERT(memcmp(a, w.plain.p, w.plain.len) == 0);
        DM_ASSERT(memcmp(b, w.plain.p, w.plain.len) == 0);
        valid++;
        /* Then damaged: output too small, input cut, bytes changed. */
        for (unsigned d = 0; d < 6; d++) {
            size_t zlen = w.z.len;

            cap = w.plain.len;
            if (d == 0)
                cap = lz_rand(&seed) % (w.plain.len + 1);
            else if (d == 1)
                zlen = lz_rand(&seed) % (zlen + 1);
            else
                for (unsigned k = 0; k < d; k++)
                    w.z.p[lz_rand(&seed) % w.z.len] ^= (uint8_t)(1u << (lz_rand(&seed) % 8));
            want = lz_reference(w.z.p, zlen, b, cap);
            got = dm_lz77_decompress(w.z.p, zlen, a, cap);
            DM_ASSERT_EQ_INT(got, want);
            if (want >= 0)
                DM_ASSERT(memcmp(a, b, (size_t)want) == 0);
            else
                corrupt++;
        }
        tb_free(&w.z);
        tb_free(&w.plain);
    }
    /* Both kinds of outcome were met. */
    DM_ASSERT(valid == 400);
    DM_ASSERT(corrupt > 400);
    free(a);
    free(b);
}

/*
 * Inflate in[0..in_len) as the .etl reader does: through input chunks of
 * ci bytes (each a new allocation, holding the bytes the last call left
 * unused and then the next ci, so that nothing may point into an old one)
 * and an output window of oc bytes after DM_LZ77_HISTORY of kept output.
 * What comes out goes to all (cap bytes at most: more is DM_ECORRUPT, as
 * output past out_cap is for the one-shot call). Returns the count or
 * DM_ECORRUPT.
 */
static long lz_chunked(const uint8_t *in, size_t in_len, size_t ci, size_t oc,
                       uint8_t *all, size_t cap)
{
    size_t wcap = DM_LZ77_HISTORY + oc, opos = 0, done = 0, total = 0;
    size_t fed = 0, clen = 0, cpos = 0;
    uint8_t *win = malloc(wcap), *chunk = NULL;
    struct dm_lz77 z;
    long result = DM_ECORRUPT;

    if (in_len == 0) { /* as dm_lz77_decompress */
        free(win);
        return 0;
    }
    dm_lz77_init(&z);
    for (;;) {
        size_t n = in_len - fed < ci ? in_len - fed : ci;
        uint8_t *next = malloc(clen - cpos + n + 1);
        int rc;

        if (win == NULL || next == NULL) {
            free(next);
            break;
        }
        if (clen > cpos)
            memcpy(next, chunk + cpos, clen - cpos);
        memcpy(next + (clen - cpos), in + fed, n);
        free(chunk);
        chunk = next;
        clen = clen - cpos + n;
        cpos = 0;
        fed += n;
        rc = dm_lz77_inflate(&z, chunk, clen, &cpos, fed == in_len, win, wcap, &opos);
        if (rc < 0)
            break;
        /* Take the new output; on a full window keep its last history. */
        if (total + (opos - done) > cap)
            break;
        memcpy(all + total, win + done, opos - done);
        total += opos - done;
        done = opos;
        if (rc == DM_LZ77_END) {
            result = (long)total;
            break;
        }
        if (rc == DM_LZ77_OUT_FULL) {
            size_t keep = opos < DM_LZ77_HISTORY ? opos : DM_LZ77_HISTORY;

            if (opos != wcap) /* full means full */
                break;
            memmove(win, win + opos - keep, keep);
            memset(win + keep, 0xEE, wcap - keep); /* what was there is gone */
            opos = done = keep;
        } else if (rc != DM_LZ77_NEED_IN || fed == in_len || clen - cpos >= 10) {
            break; /* NEED_IN only for input that is not final, < 10 left */
        }
    }
    free(chunk);
    free(win);
    return result;
}

/* The resumable inflater, cut everywhere: input chunks and output windows
 * of every size from 1 to 24 (and larger windows where a stream's 32-bit
 * matches would make tiny ones slow) give what the one-shot call gives,
 * on valid streams (the writer's bytes) and damaged ones (the same count
 * or DM_ECORRUPT alike). The random streams hold shared nibbles, whose
 * byte an earlier chunk held, and 16- and 32-bit lengths, which windows
 * cut many times. */
DM_TEST(lz77_chunked_matches_one_shot)
{
    uint64_t seed = 0xD1B54A32D192ED03u;
    size_t cap_max = 300000;
    uint8_t *a = malloc(cap_max), *b = malloc(cap_max);
    unsigned runs = 0, corrupt = 0, long_matches = 0;

    DM_ASSERT(a != NULL && b != NULL);
    for (unsigned iter = 0; iter < 24; iter++) {
        struct lz_writer w;

        lz_random_stream(&w, &seed, 1 + lz_rand(&seed) % 6000);
        if (w.plain.len > 20000)
            long_matches++;
        for (unsigned d = 0; d < 4; d++) {
            size_t zlen = w.z.len, cap = w.plain.len;
            long want;

            if (d == 1)
                cap = lz_rand(&seed) % (w.plain.len + 1);
            else if (d == 2)
                zlen = lz_rand(&seed) % (zlen + 1);
            else if (d == 3)
                w.z.p[lz_rand(&seed) % w.z.len] ^= (uint8_t)(1u << (lz_rand(&seed) % 8));
            want = dm_lz77_decompress(w.z.p, zlen, b, cap);
            if (d == 0) {
                DM_ASSERT_EQ_INT(want, (long)w.plain.len);
                DM_ASSERT(memcmp(b, w.plain.p, w.plain.len) == 0);
            }
            for (size_t k = 1; k <= 24; k++) {
                size_t big = 1u << 16, oc = w.plain.len > 20000 ? k * 509 : k;
                const size_t cuts[3][2] = {{k, big}, {big, oc}, {k, oc}};

                for (int c = 0; c < 3; c++) {
                    long got = lz_chunked(w.z.p, zlen, cuts[c][0], cuts[c][1], a, cap);

                    DM_ASSERT_EQ_INT(got, want);
                    if (want > 0)
                        DM_ASSERT(memcmp(a, b, (size_t)want) == 0);
                    runs++;
                }
            }
            if (want < 0)
                corrupt++;
        }
        tb_free(&w.z);
        tb_free(&w.plain);
    }
    DM_ASSERT(runs == 24 * 4 * 24 * 3);
    DM_ASSERT(corrupt > 10);   /* damaged streams were met ... */
    DM_ASSERT(long_matches > 0); /* ... and 32-bit lengths */
    free(a);
    free(b);
}

/* Read a trace of BIG_CPUS CPUs whose block b of CPU c holds one record
 * tagged c at time 1000 + b * BIG_CPUS + c: every record in time order,
 * none missing. Returns the records read, or -1 on a mismatch or error
 * (then err says which); *peak gets the bytes held at most. */
static long read_big(struct dm_etl *etl, char *err, size_t errlen, uint64_t *peak)
{
    struct dm_etl_record rec;
    uint64_t n = 0;
    int rc, bad = 0;

    rc = dm_etl_next(etl, &rec, err, errlen); /* the trace header */
    while (rc == 1 && (rc = dm_etl_next(etl, &rec, err, errlen)) == 1) {
        if (rec.timestamp != 1000 + n || rec.cpu != n % BIG_CPUS ||
            rec.opcode != n % BIG_CPUS)
            bad++;
        n++;
    }
    *peak = dm_etl_held_peak(etl);
    dm_etl_close(etl);
    if (rc == 0 && bad != 0)
        snprintf(err, errlen, "%d records out of place", bad);
    return rc == 0 && bad == 0 ? (long)n : -1;
}

/*
 * The same 64 CPUs of full 16 MiB buffers, compressed: each block a tagged
 * record and a MESSAGE record of zeros, which LZ77 writes as a literal 0
 * and one match of distance 1 (a 16-bit length), so the 1 GiB of records
 * is a 700 KB trace. Read from a file (compressed bytes in chunks) and
 * from memory, they inflate through windows of 104 KiB.
 */
DM_TEST(budget_takes_64_cpus_of_16mib_compressed)
{
    struct hdr_vals hv = hv64;
    struct tb file = {0}, r = {0};
    const unsigned blocks = BIG_BUF / BIG_BLOCK;
    char path[1024], err[512];
    FILE *f;

    hv.buffer_size = BIG_BUF;
    add_header_buffer(&file, &hv, NULL);
    for (unsigned cpu = 0; cpu < BIG_CPUS; cpu++) {
        struct lz_writer w;
        size_t at = file.len;

        memset(&w, 0, sizeof w);
        w.half_at = SIZE_MAX;
        for (unsigned b = 0; b < blocks; b++) {
            size_t room = BIG_BLOCK - (b + 1 == blocks ? 0x48 : 0);
            uint8_t zero = 0;

            r.len = 0;
            tagged(&r, cpu, 1000 + (uint64_t)b * BIG_CPUS + cpu);
            tb_le(&r, 0x90000000u | (uint32_t)(room - r.len), 4); /* MESSAGE */
            /* Literals without the writer's plain copy (16 MiB each). */
            for (size_t i = 0; i < r.len; i++) {
                lz_flag(&w, 0);
                tb_put(&w.z, r.p + i, 1);
            }
            lz_flag(&w, 0);
            tb_put(&w.z, &zero, 1);
            lz_match(&w, 1, room - r.len - 1); /* plain is empty: no copy */
        }
        lz_finish(&w);
        tb_put(&file, NULL, 0x48);
        put_le(file.p + at + 0x00, 0x48 + w.z.len, 4); /* BufferSize */
        put_le(file.p + at + 0x28, cpu, 2);            /* ProcessorIndex */
        put_le(file.p + at + 0x30, BIG_BUF, 4);        /* Offset: full */
        put_le(file.p + at + 0x34, F_PROC_INDEX | F_COMPRESSED, 2);
        tb_put(&file, w.z.p, w.z.len);
        tb_free(&w.z);
        tb_free(&w.plain);
    }
    DM_ASSERT(file.len < (1u << 20));

    for (int mem = 0; mem < 2; mem++) {
        struct dm_etl *etl = NULL;
        uint64_t peak = 0;
        long n;
        int rc;

        if (mem) {
            rc = dm_etl_open_mem(&etl, file.p, file.len, "mem.etl", err, sizeof err);
        } else {
            temp_path(path, sizeof path);
            f = fopen(path, "wb");
            DM_ASSERT(f != NULL);
            rc = fwrite(file.p, 1, file.len, f) == file.len ? 0 : -1;
            if (fclose(f) != 0 || rc != 0) {
                remove(path);
                DM_ASSERT(0);
            }
            rc = dm_etl_open(&etl, path, err, sizeof err);
        }
        n = rc == 0 ? read_big(etl, err, sizeof err, &peak) : -1;
        if (!mem)
            remove(path);
        if (n < 0)
            fprintf(stderr, "  %s\n", err);
        DM_ASSERT_EQ_INT(rc, 0);
        DM_ASSERT_EQ_INT(n, (long)(BIG_CPUS * blocks));
        /* A window and a chunk per CPU, and buffer 0's: 7.6 MiB. */
        DM_ASSERT(peak <= (uint64_t)(BIG_CPUS + 1) * (0x2000 + WIN + 0x4000));
        DM_ASSERT(peak >= (uint64_t)BIG_CPUS * (0x2000 + WIN));
    }
    tb_free(&file);
    tb_free(&r);
}

const struct dmt_case dm_suite_etl[] = {
    {"records_64bit", records_64bit},
    {"records_32bit", records_32bit},
    {"clock_types", clock_types},
    {"replay_system_time_clock", replay_system_time_clock},
    {"compressed_buffers", compressed_buffers},
    {"two_cpus_merge_by_time", two_cpus_merge_by_time},
    {"lost_buffer_flags", lost_buffer_flags},
    {"record_past_buffer_end", record_past_buffer_end},
    {"record_smaller_than_header", record_smaller_than_header},
    {"bad_extended_item", bad_extended_item},
    {"unknown_marker", unknown_marker},
    {"buffer_past_eof", buffer_past_eof},
    {"bad_compressed_data", bad_compressed_data},
    {"claims_held_as_windows", claims_held_as_windows},
    {"budget_takes_64_cpus", budget_takes_64_cpus},
    {"budget_takes_64_cpus_of_16mib", budget_takes_64_cpus_of_16mib},
    {"budget_takes_64_cpus_of_16mib_compressed", budget_takes_64_cpus_of_16mib_compressed},
    {"window_records_whole", window_records_whole},
    {"window_damage_offset", window_damage_offset},
    {"not_an_etl", not_an_etl},
    {"missing_file", missing_file},
    {"sample_perfview_win8", sample_perfview_win8},
    {"sample_filtrace_win11", sample_filtrace_win11},
    {"select_matches_full_merge_random", select_matches_full_merge_random},
    {"select_naming_records_samples", select_naming_records_samples},
    {"on_buffer_stops_pass", on_buffer_stops_pass},
    {"lz77_matches_reference", lz77_matches_reference},
    {"lz77_chunked_matches_one_shot", lz77_chunked_matches_one_shot},
    {NULL, NULL},
};
