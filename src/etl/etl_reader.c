/*
 * etl_reader.c - a portable reader of .etl trace files (see etl.h).
 *
 * An .etl file is a run of buffers, each a 72-byte WMI_BUFFER_HEADER followed
 * by 8-byte-aligned records from one CPU; compressed buffers hold MS-XCA
 * Plain LZ77 data that inflates to the records. Layouts: etw-facts.md s.4.
 *
 * How it reads:
 *   - open() validates buffer 0 and the trace header record in it, then walks
 *     every other buffer header once and keeps a small index entry per buffer
 *     (offset, sizes, flags, CPU), chained per CPU in file order. A bad
 *     buffer header after buffer 0 ends the index there; the error is
 *     reported once every record before it has been returned.
 *   - next() returns the records of buffer 0 first (the trace header event
 *     and whatever the logger put beside it), then merges the per-CPU
 *     streams with a tournament tree (core/kmerge.h) keyed on (timestamp,
 *     buffer index), so equal timestamps keep file order; the key of a
 *     stream is the largest of its records so far (before() says why).
 *     Each stream holds one loaded (inflated) buffer; the next one is read
 *     and inflated only when the current one is used up, so memory is one
 *     buffer per CPU plus the index whatever the size of the file.
 *   - With a selection (dm_etl_select), a stream skips the records not
 *     picked inside next_in_buffer, after reading only their size, kind,
 *     timestamp and group or GUID; only picked records enter the merge.
 *   - A bad record ends the trace where it is found: next() returns the
 *     error, after every record it returned before, and keeps returning it.
 *     A stream that fails after its first record keeps its failure in the
 *     merge under its key, so a selecting reader reports it where the full
 *     merge would.
 *
 * Every length read from the file is checked against the bytes that hold it
 * before anything is read through it; fields are assembled byte by byte into
 * fixed-width integers (dm_le16/dm_le32/dm_le64, core/bytes.h), never read through a cast
 * pointer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "core/kmerge.h"
#include "diskmon.h"
#include "etl/etl.h"
#include "etl/lz77.h"
#include "platform/platform.h"

/* WMI_BUFFER_HEADER: etw-facts.md s.4 [GC-wbh][MS-ebh][phnt]. */
#define BUF_HDR_SIZE 0x48u
#define BUF_OFF_SIZE 0x00u      /* BufferSize: bytes on disk */
/* ETW_BUFFER_CONTEXT: u8 ProcessorNumber (+ u8 Alignment), or u16 ProcessorIndex */
#define BUF_OFF_CONTEXT 0x28u
#define BUF_OFF_FILLED 0x30u    /* Offset: filled bytes including the header */
#define BUF_OFF_FLAGS 0x34u     /* u16 BufferFlag */
#define BUF_FLAG_EVENTS_LOST 0x0002u
#define BUF_FLAG_BUFFER_LOST 0x0004u
#define BUF_FLAG_PROC_INDEX 0x0020u  /* context holds ProcessorIndex & 0x7FF */
#define BUF_FLAG_COMPRESSED 0x0040u  /* MS-XCA Plain LZ77 after the header */
#define PROC_INDEX_MASK 0x7FFu
#define MAX_CPUS (PROC_INDEX_MASK + 1u)

/* Bounds on a compressed buffer's inflated size, which only its header
 * states. ETW caps a session's buffers at 1 MB [MS-props], and no buffer
 * exceeds the session's BufferSize from the trace header; a compressed
 * buffer may claim the larger of the two, never more than 16 MB, so a forged
 * header cannot ask for gigabytes. */
#define ETW_MAX_BUFFER_BYTES (1u << 20)
#define MAX_BUFFER_BYTES (16u << 20)

/* Record markers: etw-facts.md s.4 [phnt][GC-sth]. Byte 3 holds the flags
 * (0xC0: TRACE_HEADER_FLAG | TRACE_HEADER_EVENT_TRACE; 0x9_: a MESSAGE
 * record), byte 2 the header type, bytes 0-1 the MOF version (system,
 * compact and perfinfo headers) or else the record size. */
#define MARKER_END 0xFFFFFFFFu
#define MARKER_FLAGS_TRACE 0xC0u
#define MARKER_FLAGS_MESSAGE 0x90u
#define MARKER_HEADER32 0xC0010002u /* SYSTEM32 header, version 2 */
#define MARKER_HEADER64 0xC0020002u /* SYSTEM64 header, version 2 */

/* Header types (marker byte 2) and their fixed header sizes [phnt]. */
enum rec_kind {
    K_OTHER = 0, K_SYSTEM, K_COMPACT, K_PERFINFO, K_FULL, K_INSTANCE, K_EVENT
};

static const struct {
    unsigned char kind;
    unsigned char pointer_size;
} header_types[0x16] = {
    [0x01] = {K_SYSTEM, 4},   [0x02] = {K_SYSTEM, 8},
    [0x03] = {K_COMPACT, 4},  [0x04] = {K_COMPACT, 8},
    [0x0A] = {K_FULL, 4},     [0x14] = {K_FULL, 8},
    [0x0B] = {K_INSTANCE, 4}, [0x15] = {K_INSTANCE, 8},
    [0x10] = {K_PERFINFO, 4}, [0x11] = {K_PERFINFO, 8},
    [0x12] = {K_EVENT, 4},    [0x13] = {K_EVENT, 8},
};

static const unsigned kind_header_size[] = {
    [K_OTHER] = 4,      /* just the marker */
    [K_SYSTEM] = 0x20,  /* SYSTEM_TRACE_HEADER */
    [K_COMPACT] = 0x18, /* SYSTEM_TRACE_HEADER without CPU times */
    [K_PERFINFO] = 0x10, /* PERFINFO_TRACE_HEADER */
    [K_FULL] = 0x30,    /* EVENT_TRACE_HEADER */
    [K_INSTANCE] = 0x48, /* EVENT_INSTANCE_GUID_HEADER [dissect c_etl.py] */
    [K_EVENT] = 0x50,   /* EVENT_HEADER */
};

/* Per header type, what the hot loop needs in one load: the kind, the
 * pointer size, the header size, where the timestamp is (0x08 in PERFINFO,
 * 0x10 in the others) and whether the size is Packet.Size (SYSTEM, COMPACT,
 * PERFINFO) or the marker's low word. Indexed by the whole type byte, so
 * any marker may look it up; zero entries are K_OTHER. Same sources as
 * header_types and kind_header_size, which the checking path uses. */
struct type_info {
    unsigned char kind, pointer_size, hdr, ts_off, size_in_packet;
};

static const struct type_info type_info[256] = {
    [0x01] = {K_SYSTEM, 4, 0x20, 0x10, 1},    [0x02] = {K_SYSTEM, 8, 0x20, 0x10, 1},
    [0x03] = {K_COMPACT, 4, 0x18, 0x10, 1},   [0x04] = {K_COMPACT, 8, 0x18, 0x10, 1},
    [0x0A] = {K_FULL, 4, 0x30, 0x10, 0},      [0x14] = {K_FULL, 8, 0x30, 0x10, 0},
    [0x0B] = {K_INSTANCE, 4, 0x48, 0x10, 0},  [0x15] = {K_INSTANCE, 8, 0x48, 0x10, 0},
    [0x10] = {K_PERFINFO, 4, 0x10, 0x08, 1},  [0x11] = {K_PERFINFO, 8, 0x10, 0x08, 1},
    [0x12] = {K_EVENT, 4, 0x50, 0x10, 0},     [0x13] = {K_EVENT, 8, 0x50, 0x10, 0},
};

/* Field offsets inside record headers [phnt][GC-sth][MS-evh]. */
#define SYS_OFF_SIZE 0x04     /* Packet.Size, bytes including the header */
#define SYS_OFF_HOOK 0x06     /* Packet.HookId = Group << 8 | Type */
#define SYS_OFF_TID 0x08
#define SYS_OFF_PID 0x0C
#define SYS_OFF_TIME 0x10     /* SYSTEM/COMPACT SystemTime */
#define PERF_OFF_TIME 0x08    /* PERFINFO TimeStamp */
#define FULL_OFF_TYPE 0x04    /* EVENT_TRACE_HEADER Class.Type */
#define FULL_OFF_VERSION 0x06 /* Class.Version, u16 */
#define FULL_OFF_GUID 0x18
#define EVH_OFF_FLAGS 0x04    /* EVENT_HEADER Flags */
#define EVH_OFF_PROVIDER 0x18
#define EVH_OFF_VERSION 0x2A  /* EventDescriptor.Version */
#define EVH_OFF_OPCODE 0x2D   /* EventDescriptor.Opcode */
#define EVH_FLAG_EXTENDED_INFO 0x0001u /* extended data items follow [MS-evh] */
/* An extended data item as stored: u16 item size (with this 8-byte header,
 * a multiple of 8), u16 ExtType, u16 whose bit 0 (Linkage) says another
 * item follows, u16 DataSize [dissect c_etl.py][MS EVENT_HEADER_EXTENDED_DATA_ITEM]. */
#define EXT_HDR_SIZE 8u
#define EXT_OFF_LINKAGE 4
#define EXT_OFF_DATA_SIZE 6
#define TIDPID_OFF_TID 0x08   /* FULL/INSTANCE/EVENT headers share these */
#define TIDPID_OFF_PID 0x0C
#define TIME_OFF 0x10

/* TRACE_LOGFILE_HEADER, the payload of the first record, 32-bit layout; the
 * 64-bit layout is 8 bytes longer from 0x40 on because the two pointers at
 * 0x38 widen. etw-facts.md s.4 [GC-tlh][mingw offsetof]. */
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

#define NO_BUF UINT32_MAX
/* Distinct GUIDs whose selection answer is kept: a kernel trace names a
 * dozen classes by GUID (the samples: 7); a miss only costs a call. */
#define GUID_CACHE 16u

/* One buffer of the file, from its header. */
struct buf_entry {
    uint64_t offset;
    uint32_t disk_size;  /* BufferSize */
    uint32_t filled;     /* Offset: header plus records */
    uint32_t next;       /* next buffer of the same CPU, NO_BUF if none */
    uint16_t flags;
    uint16_t cpu;
};

/* One record's frame inside a buffer: where it is and what kind of header
 * it has, after every size was checked against the buffer. */
struct frame {
    const uint8_t *r;        /* the record's first byte */
    size_t pos, left;        /* its offset in the buffer, bytes from there on */
    uint32_t marker, size;
    unsigned type, kind, hdr;
    size_t at;               /* where the payload starts (after EVENT items) */
    uint64_t ts;
};

/* One CPU's buffers in file order, with the one loaded now. */
struct stream {
    uint32_t cur;        /* loaded buffer, NO_BUF before the first/after the last */
    uint32_t next;       /* buffer to load after cur */
    uint32_t first;      /* the CPU's first buffer (dm_etl_rewind starts there) */
    unsigned cpu;
    const uint8_t *recs; /* records of cur: its bytes from 0x48 to Offset, in
                          * data, or in the caller's memory (dm_etl_open_mem) */
    uint8_t *data;       /* what was read or inflated */
    size_t cap, len, pos;
    /* The merge key: the largest (timestamp, buffer index) of the stream's
     * decodable records so far, picked or not (see before()). The
     * timestamp lives in the reader's keys array, which the tree compares
     * inline (dm_kmerge_use_keys). */
    uint64_t *key_ts;
    uint32_t key_buf;
    int has_key;         /* a decodable record was met */
    int err;             /* a failure met after has_key: reported in turn */
    char *err_msg;
    struct frame head;   /* the stream's next record (merge head), framed;
                          * dm_etl_next decodes it into the caller's record */
};

/* Where next() is: the header record, the rest of buffer 0, the merge, done. */
enum phase { PH_HEADER, PH_PROLOGUE, PH_MERGE, PH_END };

struct dm_etl {
    FILE *fp;
    const uint8_t *mem;      /* dm_etl_open_mem: the caller's bytes */
    char *name;
    struct dm_etl_info info;
    uint32_t max_filled;     /* largest Offset accepted for compressed buffers */
    uint64_t held_max;       /* most buffer bytes held at once (index_buffers) */

    struct buf_entry *bufs;  /* bufs[0] is the header buffer */
    uint32_t nbufs, bufs_cap;
    int index_err;           /* why the index stopped early, 0 if it did not */
    char index_msg[384];

    struct stream prologue;  /* buffer 0 */
    struct dm_etl_record header_rec; /* its first record, read at open */
    struct stream *streams;
    unsigned nstreams;
    struct dm_kmerge merge;  /* stream indices, first by (timestamp, position) */
    uint64_t *keys;          /* per stream, its key's timestamp */
    uint64_t prologue_key;   /* buffer 0's, which is not merged */
    int top_consumed;        /* the top stream's record was returned: advance it first */
    enum phase phase;

    uint8_t *scratch;        /* compressed bytes of the buffer being inflated */
    size_t scratch_cap;
    uint64_t bytes_done;
    uint64_t skipped;

    /* dm_etl_select: which records next() returns; the answers for GUIDs
     * are cached, as a trace names few classes but many records. */
    int selecting;
    int header_picked;       /* the selection takes the trace header record */
    struct dm_etl_select sel;
    uint8_t guid_seen[GUID_CACHE][16];
    uint8_t guid_ok[GUID_CACHE];
    unsigned guids, guid_evict;

    int (*on_buffer)(void *ctx, uint64_t bytes_done); /* dm_etl_on_buffer */
    void *on_buffer_ctx;

    int err;                 /* sticky: once next() failed it keeps failing */
    char err_msg[384];
};

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

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    uint8_t *p;

    if (*cap >= need)
        return 0;
    p = realloc(*buf, need);
    if (p == NULL)
        return DM_ENOMEM;
    *buf = p;
    *cap = need;
    return 0;
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

/* Read (and inflate) buffer index bi into s, ready to walk from its first
 * record. A plain buffer of a trace in memory is walked where it lies. */
static int load_buffer(struct dm_etl *etl, struct stream *s, uint32_t bi,
                       char *err, size_t errlen)
{
    const struct buf_entry *e = &etl->bufs[bi];
    size_t len = e->filled - BUF_HDR_SIZE;
    int rc;

    if (!(e->flags & BUF_FLAG_COMPRESSED) && etl->mem != NULL) {
        /* The index checked filled <= disk_size <= the bytes left. */
        s->recs = etl->mem + e->offset + BUF_HDR_SIZE;
    } else if (grow(&s->data, &s->cap, len > 0 ? len : 1) != 0) {
        snprintf(err, errlen, "%s: out of memory for the buffer at offset %" PRIu64,
                 etl->name, e->offset);
        return DM_ENOMEM;
    } else if (e->flags & BUF_FLAG_COMPRESSED) {
        size_t zlen = e->disk_size - BUF_HDR_SIZE;
        const uint8_t *z;
        long got;

        if (etl->mem != NULL) {
            z = etl->mem + e->offset + BUF_HDR_SIZE;
        } else {
            if (grow(&etl->scratch, &etl->scratch_cap, zlen > 0 ? zlen : 1) != 0) {
                snprintf(err, errlen,
                         "%s: out of memory for the buffer at offset %" PRIu64,
                         etl->name, e->offset);
                return DM_ENOMEM;
            }
            rc = read_at(etl, e->offset + BUF_HDR_SIZE, etl->scratch, zlen, err, errlen);
            if (rc < 0)
                return rc;
            z = etl->scratch;
        }
        got = dm_lz77_decompress(z, zlen, s->data, len);
        if (got != (long)len) {
            if (got < 0)
                snprintf(err, errlen,
                         "%s: corrupt compressed buffer at offset %" PRIu64
                         ": its LZ77 data is malformed",
                         etl->name, e->offset);
            else
                snprintf(err, errlen,
                         "%s: corrupt compressed buffer at offset %" PRIu64
                         ": inflates to %ld bytes, its header says %zu",
                         etl->name, e->offset, got, len);
            return DM_ECORRUPT;
        }
        s->recs = s->data;
    } else {
        rc = read_at(etl, e->offset + BUF_HDR_SIZE, s->data, len, err, errlen);
        if (rc < 0)
            return rc;
        s->recs = s->data;
    }
    s->cur = bi;
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

/* Message for a bad record at byte pos of s's records: a file offset for a
 * plain buffer, the buffer's offset and the inflated position otherwise. */
static int record_error(const struct dm_etl *etl, const struct stream *s,
                        size_t pos, char *err, size_t errlen, const char *what)
{
    const struct buf_entry *e = &etl->bufs[s->cur];

    if (e->flags & BUF_FLAG_COMPRESSED)
        snprintf(err, errlen,
                 "%s: corrupt record in the compressed buffer at offset %" PRIu64
                 " (byte %zu after inflating): %s; the trace is damaged from here on",
                 etl->name, e->offset, pos + BUF_HDR_SIZE, what);
    else
        snprintf(err, errlen,
                 "%s: corrupt record at offset %" PRIu64
                 ": %s; the trace is damaged from here on",
                 etl->name, e->offset + BUF_HDR_SIZE + pos, what);
    return DM_ECORRUPT;
}

/*
 * Read the marker at s->pos and check the record's size against its header
 * and the buffer: 1 with f filled, 0 when only padding or the end marker is
 * left, or a record error (record_error) when the bytes are not a record.
 */
static int frame_record(struct dm_etl *etl, const struct stream *s, struct frame *f,
                        char *err, size_t errlen)
{
    char what[160];

    f->r = s->recs + s->pos;
    f->pos = s->pos;
    f->left = s->len - s->pos;
    f->size = 0; /* these three are set on every path that returns 1 */
    f->kind = K_OTHER;
    f->hdr = 0;
    /* Fewer than 4 bytes cannot hold a marker: only padding is left. */
    if (f->left < 4)
        return 0;
    f->marker = dm_le32(f->r);
    if (f->marker == MARKER_END)
        return 0;
    f->type = f->marker >> 16 & 0xFFu;
    if ((f->marker >> 24 & MARKER_FLAGS_TRACE) == MARKER_FLAGS_TRACE) {
        f->kind = f->type < sizeof header_types / sizeof header_types[0]
                      ? header_types[f->type].kind
                      : K_OTHER;
    } else if ((f->marker >> 24 & 0xF0u) == MARKER_FLAGS_MESSAGE) {
        f->kind = K_OTHER;
    } else {
        snprintf(what, sizeof what, "unknown marker 0x%08" PRIX32, f->marker);
        return record_error(etl, s, f->pos, err, errlen, what);
    }
    f->hdr = kind_header_size[f->kind];
    if (f->kind == K_SYSTEM || f->kind == K_COMPACT || f->kind == K_PERFINFO) {
        if (f->left < 8) {
            snprintf(what, sizeof what, "marker 0x%08" PRIX32
                     " with no room for its size", f->marker);
            return record_error(etl, s, f->pos, err, errlen, what);
        }
        f->size = dm_le16(f->r + SYS_OFF_SIZE);
    } else {
        f->size = f->marker & 0xFFFFu;
    }
    if (f->size < f->hdr) {
        snprintf(what, sizeof what,
                 "size %" PRIu32 " is smaller than its %u-byte header "
                 "(marker 0x%08" PRIX32 ")", f->size, f->hdr, f->marker);
        return record_error(etl, s, f->pos, err, errlen, what);
    }
    if (f->size > f->left) {
        snprintf(what, sizeof what,
                 "size %" PRIu32 " runs past the buffer's filled end "
                 "(%zu bytes left; marker 0x%08" PRIX32 ")", f->size, f->left,
                 f->marker);
        return record_error(etl, s, f->pos, err, errlen, what);
    }
    return 1;
}

/* SYSTEM, COMPACT and PERFINFO headers: a HookId (group, opcode); PERFINFO
 * has no thread or process. */
static void read_system_header(const struct frame *f, struct dm_etl_record *rec)
{
    unsigned hook = dm_le16(f->r + SYS_OFF_HOOK);

    rec->group = hook >> 8;
    rec->opcode = hook & 0xFFu;
    rec->version = f->marker & 0xFFFFu;
    if (f->kind != K_PERFINFO) {
        rec->tid = dm_le32(f->r + SYS_OFF_TID);
        rec->pid = dm_le32(f->r + SYS_OFF_PID);
    }
}

/* FULL_HEADER and INSTANCE_HEADER: a class GUID. */
static void read_full_header(const struct frame *f, struct dm_etl_record *rec)
{
    rec->opcode = f->r[FULL_OFF_TYPE];
    rec->version = dm_le16(f->r + FULL_OFF_VERSION);
    rec->tid = dm_le32(f->r + TIDPID_OFF_TID);
    rec->pid = dm_le32(f->r + TIDPID_OFF_PID);
    rec->has_guid = 1;
    memcpy(rec->guid, f->r + FULL_OFF_GUID, sizeof rec->guid);
}

/* EVENT_HEADER: a provider GUID. */
static void read_event_header(const struct frame *f, struct dm_etl_record *rec)
{
    rec->opcode = f->r[EVH_OFF_OPCODE];
    rec->version = f->r[EVH_OFF_VERSION];
    rec->tid = dm_le32(f->r + TIDPID_OFF_TID);
    rec->pid = dm_le32(f->r + TIDPID_OFF_PID);
    rec->has_guid = 1;
    memcpy(rec->guid, f->r + EVH_OFF_PROVIDER, sizeof rec->guid);
}

/* Where an EVENT_HEADER record's payload starts: after the header and the
 * extended data items it may carry, each checked against the event before
 * the next is read. Returns 0 with *at set, or a record error. */
static int event_payload(const struct dm_etl *etl, const struct stream *s,
                         const struct frame *f, size_t *at, char *err,
                         size_t errlen)
{
    char what[160];
    unsigned more;

    *at = f->hdr;
    if (!(dm_le16(f->r + EVH_OFF_FLAGS) & EVH_FLAG_EXTENDED_INFO))
        return 0;
    do {
        unsigned item, data;

        if (f->size - *at < EXT_HDR_SIZE) {
            snprintf(what, sizeof what,
                     "extended data item at byte %zu of a %" PRIu32
                     "-byte event runs past it", *at, f->size);
            return record_error(etl, s, f->pos, err, errlen, what);
        }
        item = dm_le16(f->r + *at);
        data = dm_le16(f->r + *at + EXT_OFF_DATA_SIZE);
        more = dm_le16(f->r + *at + EXT_OFF_LINKAGE) & 1u;
        if (item < EXT_HDR_SIZE || item > f->size - *at ||
            data > item - EXT_HDR_SIZE) {
            snprintf(what, sizeof what,
                     "extended data item at byte %zu has size %u "
                     "(data %u) in a %" PRIu32 "-byte event",
                     *at, item, data, f->size);
            return record_error(etl, s, f->pos, err, errlen, what);
        }
        *at += item;
    } while (more);
    return 0;
}

/* Whether the selection (dm_etl_select) takes the record framed in f: by
 * HookId group for system headers, else by its GUID, whose answer is asked
 * once and cached. Every header kind checked here holds the bytes read
 * (kind_header_size). */
static int picked(struct dm_etl *etl, const struct frame *f)
{
    const uint8_t *guid;
    unsigned i;
    int ok;

    switch (f->kind) {
    case K_SYSTEM:
    case K_COMPACT:
    case K_PERFINFO: {
        unsigned group = f->r[SYS_OFF_HOOK + 1]; /* HookId >> 8 */

        return etl->sel.groups[group >> 3] >> (group & 7u) & 1u;
    }
    case K_EVENT:
        guid = f->r + EVH_OFF_PROVIDER;
        break;
    default: /* K_FULL, K_INSTANCE */
        guid = f->r + FULL_OFF_GUID;
        break;
    }
    for (i = 0; i < etl->guids; i++)
        if (memcmp(etl->guid_seen[i], guid, sizeof etl->guid_seen[i]) == 0)
            return etl->guid_ok[i];
    ok = etl->sel.guid_wanted != NULL && etl->sel.guid_wanted(guid) != 0;
    i = etl->guids < GUID_CACHE ? etl->guids++ : etl->guid_evict++ % GUID_CACHE;
    memcpy(etl->guid_seen[i], guid, sizeof etl->guid_seen[i]);
    etl->guid_ok[i] = (uint8_t)ok;
    return ok;
}

/* The position after a record of size bytes at pos: records start 8-byte
 * aligned [dissect etl.py]; the filled end may cut the last one's padding. */
static inline size_t next_pos(size_t pos, uint32_t size, size_t len)
{
    size_t stride = ((size_t)size + 7u) & ~(size_t)7u;

    return stride > len - pos ? len : pos + stride;
}

/* The checking path for the record at s->pos: 1 with f filled and s past
 * it, 2 when it is a kind not decoded here (skipped by its size and
 * counted), 0 at the end of the buffer, or a record error. */
static int frame_slow(struct dm_etl *etl, struct stream *s, struct frame *f,
                      char *err, size_t errlen)
{
    int rc = frame_record(etl, s, f, err, errlen);

    if (rc <= 0)
        return rc;
    s->pos = next_pos(f->pos, f->size, s->len);
    if (f->kind == K_OTHER) {
        etl->skipped++;
        return 2;
    }
    f->at = f->hdr;
    if (f->kind == K_EVENT) {
        rc = event_payload(etl, s, f, &f->at, err, errlen);
        if (rc < 0)
            return rc;
    }
    f->ts = dm_le64(f->r + type_info[f->type].ts_off);
    return 1;
}

/*
 * Frame the record at r (left bytes to the buffer's filled end) when it is
 * one of the common well-formed kinds: 1 with f's r, marker, size, type,
 * kind, at and ts set (its pos, left and hdr are for frame_slow's
 * messages only), 0 to leave it to frame_slow (padding, the end marker,
 * skipped kinds, EVENT_HEADER extended items, damage). The checks are
 * frame_record's, so a record either takes, it takes the same way. Inline,
 * into loops that keep f in registers.
 */
static inline int frame_quick(const uint8_t *r, size_t left, struct frame *f)
{
    const struct type_info *ti;
    uint32_t marker, size;

    if (left < 8) /* the marker and Packet.Size */
        return 0;
    marker = dm_le32(r);
    ti = &type_info[marker >> 16 & 0xFFu];
    if ((marker >> 24 & MARKER_FLAGS_TRACE) != MARKER_FLAGS_TRACE || ti->kind == K_OTHER)
        return 0;
    size = ti->size_in_packet ? dm_le16(r + SYS_OFF_SIZE) : marker & 0xFFFFu;
    if (size < ti->hdr || size > left)
        return 0;
    if (ti->kind == K_EVENT && (dm_le16(r + EVH_OFF_FLAGS) & EVH_FLAG_EXTENDED_INFO))
        return 0;
    f->r = r;
    f->marker = marker;
    f->size = size;
    f->type = marker >> 16 & 0xFFu;
    f->kind = ti->kind;
    f->at = ti->hdr;
    f->ts = dm_le64(r + ti->ts_off);
    return 1;
}

/*
 * The selecting pass's inner loop over the bulk of a trace: from pos, step
 * over well-formed system-header records (SYSTEM, COMPACT, PERFINFO) whose
 * HookId group the selection does not take, moving the key (*key_ts,
 * *key_buf; *has_key) as next_head would. Stops at the first record that
 * is anything else (picked, another kind, padding, the end marker or one
 * for the checking path) and returns its position, for next_head to take
 * from there. The checks are frame_quick's for these kinds.
 */
static size_t skip_unpicked(const uint8_t *groups, const uint8_t *recs, size_t pos,
                            size_t len, uint32_t cur, uint64_t *key_ts,
                            uint32_t *key_buf, int *has_key)
{
    uint64_t kts = *key_ts;
    uint32_t kbuf = *key_buf;
    int any = 0;

    while (len - pos >= 8) { /* the marker and Packet.Size */
        const uint8_t *r = recs + pos;
        uint32_t marker = dm_le32(r), size;
        const struct type_info *ti = &type_info[marker >> 16 & 0xFFu];
        unsigned group;
        uint64_t ts;

        /* size_in_packet marks exactly the three system-header kinds. */
        if ((marker >> 24 & MARKER_FLAGS_TRACE) != MARKER_FLAGS_TRACE || !ti->size_in_packet)
            break;
        size = dm_le16(r + SYS_OFF_SIZE);
        if (size < ti->hdr || size > len - pos)
            break;
        group = r[SYS_OFF_HOOK + 1]; /* HookId >> 8 */
        if (groups[group >> 3] >> (group & 7u) & 1u)
            break;
        ts = dm_le64(r + ti->ts_off);
        if (ts >= kts) {
            kts = ts;
            kbuf = cur;
        }
        any = 1;
        pos = next_pos(pos, size, len);
    }
    *key_ts = kts;
    *key_buf = kbuf;
    if (any)
        *has_key = 1;
    return pos;
}

/*
 * Frame s's next decodable record of its loaded buffer into s->head: 1 when
 * found, 0 at the end of the buffer, or DM_ECORRUPT. Records of kinds not
 * decoded here are skipped by their size and counted. Every decodable
 * record moves the stream's merge key, also one the selection skips: the
 * merge must place the picked ones where the unselected merge would (see
 * before()). A skipped record costs its header only: its frame, timestamp
 * and the selection test (and an EVENT_HEADER's extended items, checked so
 * that a damaged one fails here as it would unselected).
 *
 * The loop works in locals (the record bytes are read through uint8_t
 * pointers, which may alias anything, so fields of s would be reloaded
 * after every store) and writes the stream back once.
 */
static int next_head(struct dm_etl *etl, struct stream *s, char *err, size_t errlen)
{
    const uint8_t *recs = s->recs;
    const size_t len = s->len;
    const uint32_t cur = s->cur;
    const int selecting = etl->selecting;
    size_t pos = s->pos;
    uint64_t key_ts = *s->key_ts;
    uint32_t key_buf = s->key_buf;
    int has_key = s->has_key, rc;

    for (;;) {
        struct frame f;

        if (selecting)
            pos = skip_unpicked(etl->sel.groups, recs, pos, len, cur, &key_ts,
                                &key_buf, &has_key);
        if (frame_quick(recs + pos, len - pos, &f)) {
            pos = next_pos(pos, f.size, len);
        } else {
            /* Through s->head, so that f's address does not escape and
             * the common path keeps it in registers. */
            s->pos = pos;
            rc = frame_slow(etl, s, &s->head, err, errlen);
            pos = s->pos;
            if (rc == 2)
                continue;
            if (rc <= 0)
                break;
            f = s->head;
        }
        /* Buffer indexes only grow along a stream, so the largest (time,
         * buffer) pair is the newest record's whenever its time is not
         * smaller. */
        if (f.ts >= key_ts) {
            key_ts = f.ts;
            key_buf = cur;
        }
        has_key = 1;
        if (selecting && f.kind <= K_PERFINFO) { /* system headers: the group's bit */
            unsigned group = f.r[SYS_OFF_HOOK + 1]; /* HookId >> 8 */

            if (!(etl->sel.groups[group >> 3] >> (group & 7u) & 1u))
                continue;
        }
        s->head = f;
        if (selecting && f.kind > K_PERFINFO && !picked(etl, &s->head))
            continue;
        rc = 1;
        break;
    }
    s->pos = pos;
    *s->key_ts = key_ts;
    s->key_buf = key_buf;
    s->has_key = has_key;
    return rc;
}

/* next_head's common case without a selection, small enough to inline in
 * dm_etl_next's merge step: 1 when the record at s->pos was framed into
 * s->head (and the key moved), 0 to leave everything to next_head. */
static inline int next_head_quick(const struct dm_etl *etl, struct stream *s)
{
    struct frame f;

    if (etl->selecting || !frame_quick(s->recs + s->pos, s->len - s->pos, &f))
        return 0;
    s->pos = next_pos(s->pos, f.size, s->len);
    if (f.ts >= *s->key_ts) {
        *s->key_ts = f.ts;
        s->key_buf = s->cur;
    }
    s->has_key = 1;
    s->head = f;
    return 1;
}

/* Decode s->head's header fields into *rec. */
static void fill_record(const struct dm_etl *etl, const struct stream *s,
                        struct dm_etl_record *rec)
{
    const struct frame *f = &s->head;

    rec->header_type = f->type;
    rec->pointer_size = type_info[f->type].pointer_size;
    rec->group = 0;
    rec->version = 0;
    rec->has_guid = 0;
    rec->tid = UINT32_MAX;
    rec->pid = UINT32_MAX;
    rec->timestamp = f->ts;
    rec->cpu = s->cpu;
    rec->buffer_file_offset = etl->bufs[s->cur].offset;
    switch (f->kind) {
    case K_SYSTEM:
    case K_COMPACT:
    case K_PERFINFO:
        read_system_header(f, rec);
        break;
    case K_FULL:
    case K_INSTANCE:
        read_full_header(f, rec);
        break;
    default: /* K_EVENT */
        read_event_header(f, rec);
        break;
    }
    rec->payload = f->r + f->at;
    rec->payload_len = f->size - f->at;
}

/* next_head, then its record into *rec (buffer 0, read without a merge). */
static int next_in_buffer(struct dm_etl *etl, struct stream *s,
                          struct dm_etl_record *rec, char *err, size_t errlen)
{
    int rc = next_head(etl, s, err, errlen);

    if (rc == 1)
        fill_record(etl, s, rec);
    return rc;
}

/* Move s to its next record, loading its next buffer when the current one
 * is used up: 1 with s->head framed, 0 when the stream has ended, <0 error. */
static int advance(struct dm_etl *etl, struct stream *s, char *err, size_t errlen)
{
    for (;;) {
        int rc;

        if (s->cur != NO_BUF) {
            rc = next_head(etl, s, err, errlen);
            if (rc != 0)
                return rc;
        }
        if (s->next == NO_BUF) {
            s->cur = NO_BUF;
            s->recs = NULL;
            free(s->data);
            s->data = NULL;
            s->cap = 0;
            return 0;
        }
        rc = load_buffer(etl, s, s->next, err, errlen);
        if (rc < 0)
            return rc;
    }
}

/*
 * Merge order: earlier timestamp first; equal timestamps in file order
 * (buffer index; inside a buffer, stream order). Streams are compared by
 * their keys, the largest (timestamp, buffer) of each stream's records so
 * far, not by the head record's own. For streams in time order, as ETW
 * writes them (etw-facts.md s.4), the two are the same. For a stream that
 * goes back in time they are still the same: taking the stream with the
 * smallest head each time gives the order of sorting every record by its
 * stream's running maximum (then stream order), checked by brute force over
 * random streams. The running maximum is what lets a selecting reader
 * merge the picked records alone and still return them in the order of
 * the full merge, the records it skips having moved the key.
 */
static inline int before(const void *ctx, unsigned a, unsigned b)
{
    const struct dm_etl *etl = ctx;
    const struct stream *sa = &etl->streams[a], *sb = &etl->streams[b];

    if (*sa->key_ts != *sb->key_ts)
        return *sa->key_ts < *sb->key_ts;
    return sa->key_buf < sb->key_buf;
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
 * Parse the trace header record (first in buffer 0): marker, then
 * TRACE_LOGFILE_HEADER fields into etl->info.
 */
static int parse_trace_header(struct dm_etl *etl, char *err, size_t errlen)
{
    struct stream *s = &etl->prologue;
    struct dm_etl_record *rec = &etl->header_rec;
    const uint8_t *p;
    unsigned wide;
    uint32_t marker, cpu_mhz;
    int rc;

    marker = s->len >= 4 ? dm_le32(s->recs) : 0;
    if (marker != MARKER_HEADER32 && marker != MARKER_HEADER64) {
        snprintf(err, errlen,
                 "%s: not an .etl trace (no trace header record at offset %u)",
                 etl->name, BUF_HDR_SIZE);
        return DM_ECORRUPT;
    }
    rc = next_in_buffer(etl, s, rec, err, errlen);
    if (rc < 0)
        return rc;
    wide = marker == MARKER_HEADER64 ? TLH_WIDE_SHIFT : 0;
    if (rc == 0 || rec->group != 0 || rec->opcode != 0 ||
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
 * once is at most, over the CPUs, each one's largest buffer, plus buffer 0
 * and the largest compressed buffer as read from the file. Those sizes are
 * what the buffer headers claim; for a compressed buffer nothing but the
 * budget bounds the claim (a few bytes of LZ77 can inflate to 16 MiB), so
 * it is checked before anything is allocated for it.
 */
static uint32_t held_bytes(const struct dm_etl *etl, const struct buf_entry *e)
{
    /* A plain buffer of a trace in memory is walked where it lies. */
    if (!(e->flags & BUF_FLAG_COMPRESSED) && etl->mem != NULL)
        return 0;
    return e->filled - BUF_HDR_SIZE;
}

/* Compressed bytes read from a file before inflating: its scratch. */
static uint32_t scratch_bytes(const struct dm_etl *etl, const struct buf_entry *e)
{
    if (!(e->flags & BUF_FLAG_COMPRESSED) || etl->mem != NULL)
        return 0;
    return e->disk_size - BUF_HDR_SIZE;
}

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
 * Walk the buffer headers after buffer 0 and chain them per CPU. A bad header
 * stops the walk; its error is kept for next() to report after the records
 * of the buffers before it. Only running out of memory, or the budget,
 * fails here.
 */
static int index_buffers(struct dm_etl *etl, char *err, size_t errlen)
{
    uint32_t last[MAX_CPUS];
    unsigned stream_of[MAX_CPUS];
    uint32_t held[MAX_CPUS];  /* per CPU, its largest buffer as held */
    uint32_t scratch = 0;     /* the largest compressed buffer read */
    uint64_t off = etl->bufs[0].disk_size;
    uint8_t hdr[BUF_HDR_SIZE];

    for (unsigned c = 0; c < MAX_CPUS; c++) {
        last[c] = NO_BUF;
        stream_of[c] = UINT32_MAX;
        held[c] = 0;
    }
    etl->held_max = held_bytes(etl, &etl->bufs[0]) + scratch_bytes(etl, &etl->bufs[0]);
    while (off < etl->info.file_size) {
        struct buf_entry e;
        int rc;

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
        if (scratch_bytes(etl, &e) > scratch) {
            etl->held_max += scratch_bytes(etl, &e) - scratch;
            scratch = scratch_bytes(etl, &e);
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
    etl->keys = calloc(etl->nstreams ? etl->nstreams : 1, sizeof *etl->keys);
    if (etl->streams == NULL || etl->keys == NULL ||
        dm_kmerge_init(&etl->merge, etl->nstreams, before, etl) != 0) {
        snprintf(err, errlen, "%s: out of memory", etl->name);
        return DM_ENOMEM;
    }
    dm_kmerge_use_keys(&etl->merge, etl->keys);
    for (unsigned i = 0; i < etl->nstreams; i++)
        etl->streams[i].key_ts = &etl->keys[i];
    for (uint32_t i = etl->nbufs; i-- > 1;) {
        struct stream *s = &etl->streams[stream_of[etl->bufs[i].cpu]];

        s->cpu = etl->bufs[i].cpu;
        s->cur = NO_BUF;
        s->next = i; /* ends at the CPU's first buffer */
        s->first = i;
    }
    return 0;
}

/* Shared by dm_etl_open and dm_etl_open_mem once the input is attached. */
static int open_common(struct dm_etl *etl, char *err, size_t errlen)
{
    uint8_t hdr[BUF_HDR_SIZE];
    struct buf_entry e0;
    int rc;

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
    rc = load_buffer(etl, &etl->prologue, 0, err, errlen);
    if (rc < 0)
        return rc;
    rc = parse_trace_header(etl, err, errlen);
    if (rc < 0)
        return rc;
    rc = index_buffers(etl, err, errlen);
    if (rc < 0)
        return rc;
    etl->phase = PH_HEADER;
    return 0;
}

static struct dm_etl *new_etl(const char *name)
{
    struct dm_etl *etl = calloc(1, sizeof *etl);
    size_t n = strlen(name) + 1;

    if (etl == NULL)
        return NULL;
    etl->name = malloc(n);
    if (etl->name == NULL) {
        free(etl);
        return NULL;
    }
    memcpy(etl->name, name, n);
    etl->prologue.cur = NO_BUF;
    etl->prologue.next = NO_BUF;
    etl->prologue.key_ts = &etl->prologue_key;
    return etl;
}

/* Name the real problem before fopen() does: a directory opens on some
 * systems and then reads as garbage ("bad buffer header at offset 0"), and an
 * empty file is not damaged, it is empty. */
static int check_path(const char *path, char *err, size_t errlen)
{
    uint64_t size = 0;

    if (path == NULL || path[0] == '\0') {
        snprintf(err, errlen, "empty file name: give the trace as -r FILE.etl");
        return DM_EUSAGE;
    }
    switch (dm_file_kind(path, &size)) {
    case DM_FILE_DIRECTORY:
        snprintf(err, errlen, "%s: is a directory, not an .etl trace file", path);
        return DM_EOPEN;
    case DM_FILE_OTHER:
        snprintf(err, errlen,
                 "%s: not a regular file (a pipe or a device); diskmon reads "
                 ".etl traces from files", path);
        return DM_EOPEN;
    case DM_FILE_REGULAR:
        if (size == 0) {
            snprintf(err, errlen, "%s: is empty (0 bytes), not an .etl trace", path);
            return DM_ECORRUPT;
        }
        return 0;
    default: /* missing: fopen() says why */
        return 0;
    }
}

/* The end of both opens: read the index and the header; on failure close
 * what was made. err is never NULL here. */
static int finish_open(struct dm_etl *etl, struct dm_etl **out, char *err, size_t errlen)
{
    int rc = open_common(etl, err, errlen);

    if (rc < 0) {
        dm_etl_close(etl);
        return rc;
    }
    *out = etl;
    return 0;
}

int dm_etl_open(struct dm_etl **out, const char *path, char *err, size_t errlen)
{
    char local[1];
    struct dm_etl *etl;
    int rc;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof local;
    }
    *out = NULL;
    rc = check_path(path, err, errlen);
    if (rc < 0)
        return rc;
    etl = new_etl(path);
    if (etl == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        return DM_ENOMEM;
    }
    etl->fp = fopen(path, "rb");
    if (etl->fp == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s (check the path and permissions)",
                 path, strerror(errno));
        dm_etl_close(etl);
        return DM_EOPEN;
    }
    if (dm_file_size(etl->fp, &etl->info.file_size) != 0) {
        snprintf(err, errlen, "%s: cannot find the file size (is it a regular file?)",
                 path);
        dm_etl_close(etl);
        return DM_EIO;
    }
    return finish_open(etl, out, err, errlen);
}

int dm_etl_open_mem(struct dm_etl **out, const void *data, size_t len,
                    const char *name, char *err, size_t errlen)
{
    char local[1];
    struct dm_etl *etl;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof local;
    }
    *out = NULL;
    etl = new_etl(name != NULL ? name : "(memory)");
    if (etl == NULL) {
        snprintf(err, errlen, "out of memory");
        return DM_ENOMEM;
    }
    etl->mem = data != NULL ? data : (const uint8_t *)"";
    etl->info.file_size = data != NULL ? len : 0;
    return finish_open(etl, out, err, errlen);
}

const struct dm_etl_info *dm_etl_info(const struct dm_etl *etl)
{
    return &etl->info;
}

/* Remember a failure (message in err) so every later call reports it too. */
static int fail(struct dm_etl *etl, int rc, const char *err)
{
    etl->err = rc;
    snprintf(etl->err_msg, sizeof etl->err_msg, "%s", err);
    etl->phase = PH_END;
    return rc;
}

/*
 * A stream failed after it had met a decodable record (s->has_key): keep
 * the failure in the stream, which stays in the merge under its key, so it
 * is reported where the unselected merge would meet it, right after the
 * last record before the damage. Without a selection that is at once; with
 * one, the stream may have skipped records (which moved its key), and the
 * other streams' records that come before them are returned first.
 */
static int defer_failure(struct dm_etl *etl, struct stream *s, int rc, const char *err)
{
    size_t n = strlen(err) + 1;

    s->err_msg = malloc(n);
    if (s->err_msg == NULL)
        return fail(etl, rc, err); /* out of memory: report it at once */
    memcpy(s->err_msg, err, n);
    s->err = rc;
    return 0;
}

/* The top stream has moved on to its next record, or ended (rc 0), or
 * failed (rc < 0, kept in the stream): restore the merge order. (Checking
 * first whether the top still comes before the runner-up, to skip the
 * sift, cost more than it saved: with the keys compared inline a sift that
 * changes nothing is two comparisons, and on the generated traces, whose
 * CPUs interleave record by record, the top changes 3 times in 4.) */
static void reorder_top(struct dm_etl *etl, int rc)
{
    if (rc == 0)
        dm_kmerge_pop(&etl->merge);
    else
        dm_kmerge_top_changed(&etl->merge);
}

static int next_record(struct dm_etl *etl, struct dm_etl_record *rec, char *err,
                       size_t errlen);

/*
 * Most calls take the merge's common step: the top stream's next record in
 * its loaded buffer, then the merge order restored and the new top's head
 * decoded. That path is kept short; the rest (a new buffer, the phases
 * before the merge, the end, failures) is next_record's.
 */
int dm_etl_next(struct dm_etl *etl, struct dm_etl_record *rec, char *err,
                size_t errlen)
{
    if (etl->phase == PH_MERGE && etl->top_consumed && err != NULL && errlen > 0) {
        struct stream *s = &etl->streams[dm_kmerge_top(&etl->merge)];
        int rc = next_head_quick(etl, s) ? 1 : next_head(etl, s, err, errlen);

        if (rc == 1) { /* another stream may come first now */
            dm_kmerge_top_changed(&etl->merge);
            s = &etl->streams[dm_kmerge_top(&etl->merge)];
            if (s->err == 0) {
                fill_record(etl, s, rec);
                return 1;
            }
            etl->top_consumed = 0; /* next_record reports the failure */
        } else if (rc < 0) { /* kept in the stream, reported in turn */
            etl->top_consumed = 0;
            if (defer_failure(etl, s, rc, err) < 0)
                return etl->err;
            reorder_top(etl, rc);
        }
        /* rc == 0: the buffer is used up; next_record loads the next. */
    }
    return next_record(etl, rec, err, errlen);
}

static int next_record(struct dm_etl *etl, struct dm_etl_record *rec, char *err,
                       size_t errlen)
{
    char local[sizeof etl->err_msg];
    struct stream *s;
    int rc;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof local;
    }
    if (etl->err != 0) {
        snprintf(err, errlen, "%s", etl->err_msg);
        return etl->err;
    }
    switch (etl->phase) {
    case PH_HEADER:
        etl->phase = PH_PROLOGUE;
        if (!etl->selecting || etl->header_picked) {
            *rec = etl->header_rec;
            return 1;
        }
        /* fall through */
    case PH_PROLOGUE:
        rc = next_in_buffer(etl, &etl->prologue, rec, err, errlen);
        if (rc != 0)
            return rc < 0 ? fail(etl, rc, err) : 1;
        /* Load the first record of every CPU stream and build the tree. A
         * stream that fails before its first decodable record fails the
         * trace here, as the merge cannot start without it. */
        for (unsigned i = 0; i < etl->nstreams; i++) {
            s = &etl->streams[i];
            rc = advance(etl, s, err, errlen);
            if (rc < 0 && (!s->has_key || rc == DM_ESTOPPED))
                return fail(etl, rc, err);
            if (rc < 0 && defer_failure(etl, s, rc, err) < 0)
                return etl->err;
            if (rc != 0)
                dm_kmerge_push(&etl->merge, i);
        }
        etl->top_consumed = 0;
        etl->phase = PH_MERGE;
        /* fall through */
    case PH_MERGE:
        if (etl->top_consumed) {
            etl->top_consumed = 0;
            s = &etl->streams[dm_kmerge_top(&etl->merge)];
            rc = advance(etl, s, err, errlen);
            if (rc == DM_ESTOPPED)
                return fail(etl, rc, err);
            if (rc < 0 && defer_failure(etl, s, rc, err) < 0)
                return etl->err;
            reorder_top(etl, rc);
        }
        if (dm_kmerge_count(&etl->merge) > 0) {
            s = &etl->streams[dm_kmerge_top(&etl->merge)];
            if (s->err != 0) {
                snprintf(err, errlen, "%s", s->err_msg);
                return fail(etl, s->err, err);
            }
            fill_record(etl, s, rec);
            etl->top_consumed = 1;
            return 1;
        }
        etl->phase = PH_END;
        /* fall through */
    default:
        if (etl->index_err != 0) {
            snprintf(err, errlen, "%s", etl->index_msg);
            return fail(etl, etl->index_err, err);
        }
        return 0;
    }
}

/* Whether the selection takes the trace header record, which open() and
 * rewind() read ahead of the first dm_etl_next. */
static void pick_header(struct dm_etl *etl)
{
    struct frame f;

    etl->header_picked = 0;
    if (!etl->selecting)
        return;
    f.r = etl->prologue.recs; /* the header is buffer 0's first record */
    f.kind = type_info[etl->header_rec.header_type].kind;
    etl->header_picked = picked(etl, &f);
}

void dm_etl_select(struct dm_etl *etl, const struct dm_etl_select *sel)
{
    etl->selecting = sel != NULL;
    if (sel != NULL)
        etl->sel = *sel;
    etl->guids = 0;
    etl->guid_evict = 0;
    pick_header(etl);
}

void dm_etl_on_buffer(struct dm_etl *etl, int (*fn)(void *ctx, uint64_t bytes_done),
                      void *ctx)
{
    etl->on_buffer = fn;
    etl->on_buffer_ctx = ctx;
}

int dm_etl_rewind(struct dm_etl *etl, char *err, size_t errlen)
{
    char local[1];
    int rc;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof local;
    }
    for (unsigned i = 0; i < etl->nstreams; i++) {
        struct stream *s = &etl->streams[i];

        s->cur = NO_BUF;
        s->next = s->first;
        *s->key_ts = 0;
        s->key_buf = 0;
        s->has_key = 0;
        s->err = 0;
        free(s->err_msg);
        s->err_msg = NULL;
    }
    dm_kmerge_clear(&etl->merge);
    etl->top_consumed = 0;
    etl->err = 0;
    etl->err_msg[0] = '\0';
    etl->bytes_done = 0;
    etl->skipped = 0;
    etl->prologue.cur = NO_BUF;
    etl->prologue.next = NO_BUF;
    rc = load_buffer(etl, &etl->prologue, 0, err, errlen);
    if (rc == 0) {
        int selecting = etl->selecting;

        etl->selecting = 0; /* the header record, picked or not */
        rc = next_in_buffer(etl, &etl->prologue, &etl->header_rec, err, errlen);
        etl->selecting = selecting;
    }
    if (rc <= 0) { /* it was read at open: the file changed since */
        if (rc == 0)
            snprintf(err, errlen, "%s: the trace header record is gone "
                     "(was the file changed while being read?)", etl->name);
        return fail(etl, rc < 0 ? rc : DM_ECORRUPT, err);
    }
    pick_header(etl);
    etl->phase = PH_HEADER;
    return 0;
}

uint64_t dm_etl_bytes_done(const struct dm_etl *etl)
{
    return etl->bytes_done;
}

uint64_t dm_etl_skipped(const struct dm_etl *etl)
{
    return etl->skipped;
}

void dm_etl_close(struct dm_etl *etl)
{
    if (etl == NULL)
        return;
    if (etl->fp != NULL)
        fclose(etl->fp);
    for (unsigned i = 0; etl->streams != NULL && i < etl->nstreams; i++) {
        free(etl->streams[i].data);
        free(etl->streams[i].err_msg);
    }
    free(etl->streams);
    free(etl->keys);
    dm_kmerge_free(&etl->merge);
    free(etl->prologue.data);
    free(etl->bufs);
    free(etl->scratch);
    free(etl->name);
    free(etl);
}
