/*
 * etl_internal.h - what the .etl reader's files share (not part of etl.h).
 *
 * The reader is three files, one job each, each calling only the ones
 * below it:
 *   etl_reader.c  the front: open (a path or memory) and close, the per-CPU
 *                 streams and their merge, selection, rewind and next();
 *   etl_file.c    the buffers: the index with its memory budget, buffer 0's
 *                 trace header and time zone, the per-buffer read through a
 *                 window and the LZ77 inflation into one;
 *   etl_frame.c   a leaf: record framing inside the window a stream holds
 *                 (the checking path, the quick path and the selecting
 *                 skip, which must stay equivalent: its top comment says
 *                 how), and the header readers that turn a frame into a
 *                 dm_etl_record. Where the window's end may cut a record it
 *                 returns DM_ETL__NEED_MORE, and the reader refills.
 * This header holds the layouts they all read (with their sources), the
 * shared structs, the inline helpers of the hot path (which must stay
 * inline in dm_etl_next's merge step) and the few calls between the files,
 * named dm_etl__ (internal, like dm_kmerge__replay).
 */
#ifndef DM_ETL_INTERNAL_H
#define DM_ETL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/bytes.h"
#include "base/kmerge.h"
#include "etl/etl.h"
#include "etl/lz77.h"

/* WMI_BUFFER_HEADER: docs/etw.md §4 [GC-wbh][MS-ebh][phnt]. */
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

/* Record markers: docs/etw.md §4 [phnt][GC-sth]. Byte 3 holds the flags
 * (0xC0: TRACE_HEADER_FLAG | TRACE_HEADER_EVENT_TRACE; 0x9_: a MESSAGE
 * record), byte 2 the header type, bytes 0-1 the MOF version (system,
 * compact and perfinfo headers) or else the record size. */
#define MARKER_END 0xFFFFFFFFu
#define MARKER_FLAGS_TRACE 0xC0u
#define MARKER_FLAGS_MESSAGE 0x90u
#define MARKER_HEADER32 0xC0010002u /* SYSTEM32 header, version 2 */
#define MARKER_HEADER64 0xC0020002u /* SYSTEM64 header, version 2 */

/* Kinds of record header, from the header type in marker byte 2 [phnt]
 * (etl_frame.c's header_types and kind_header_size). */
enum rec_kind {
    K_OTHER = 0, K_SYSTEM, K_COMPACT, K_PERFINFO, K_FULL, K_INSTANCE, K_EVENT
};

/* Per header type, what the hot loop needs in one load: the kind, the
 * pointer size, the header size, where the timestamp is (0x08 in PERFINFO,
 * 0x10 in the others) and whether the size is Packet.Size (SYSTEM, COMPACT,
 * PERFINFO) or the marker's low word. Indexed by the whole type byte, so
 * any marker may look it up; zero entries are K_OTHER. Same sources as
 * header_types and kind_header_size, which the checking path uses
 * (etl_frame.c, which defines this table). */
struct type_info {
    unsigned char kind, pointer_size, hdr, ts_off, size_in_packet;
};

extern const struct type_info dm_etl__type_info[256];

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

/*
 * A plain buffer read from a file is held through a window of WINDOW_BYTES,
 * not whole. A record's size is a 16-bit field (Packet.Size, EVENT_HEADER
 * Size or the marker's low word; docs/etw.md §4), so a record spans at
 * most RECORD_SPAN bytes with its 8-byte stride, and a window starting at
 * a record holds it whole. The window's end is where a record may be cut:
 * the framing paths see it as the buffer's filled end, and when one finds
 * too few bytes there for the record it frames, dm_etl__next_head says so
 * (DM_ETL__NEED_MORE) and its caller moves the window to start at that
 * record (dm_etl__refill, which keeps the bytes already read) and has it
 * framed again. So the common path has no
 * check of its own, and what it frames is what it would frame in the
 * whole buffer. The window's length is a multiple of 8 (but at the filled
 * end), so a record that fits has its stride inside too (next_pos).
 * WINDOW_BYTES is RECORD_SPAN and half as much again: a refill reads 32 KiB
 * or more, and 2,048 CPUs (MAX_CPUS) hold 192 MiB of windows at most.
 */
#define RECORD_SPAN 0x10000u /* 0xFFFF rounded up to the 8-byte stride */
#define WINDOW_BYTES (RECORD_SPAN + RECORD_SPAN / 2)

/*
 * A compressed buffer inflates as a stream into a window of the same
 * WINDOW_BYTES of records after DM_LZ77_HISTORY bytes of the output before
 * them, which a match may reach (lz77.h): LZ_WINDOW in all. Its compressed
 * bytes are read from a file in chunks of LZ_CHUNK (a trace in memory is
 * read where it lies). A buffer larger than LZ_WINDOW first inflates only
 * LZ_FIRST_FILL, so that a CPU of which only the first records are read
 * (a stopped pass, damage elsewhere) costs little; the window grows when a
 * record is cut at its end, then moves. Per CPU at most LZ_WINDOW +
 * LZ_CHUNK (120 KiB): 2,048 CPUs (MAX_CPUS) hold 240 MiB at most. What an
 * end marker leaves of a buffer is not inflated; where the records run to
 * the buffer's claimed end, the LZ77 stream must end there too.
 */
#define LZ_WINDOW (DM_LZ77_HISTORY + WINDOW_BYTES)
#define LZ_CHUNK 0x4000u
#define LZ_FIRST_FILL 0x4000u

/* One CPU's buffers in file order, with the one loaded now. */
struct stream {
    uint32_t cur;        /* loaded buffer, NO_BUF before the first/after the last */
    uint32_t next;       /* buffer to load after cur */
    uint32_t first;      /* the CPU's first buffer (dm_etl_rewind starts there) */
    unsigned cpu;
    const uint8_t *recs; /* records of cur held now: its bytes from 0x48 +
                          * base to 0x48 + base + len, in data, or in the
                          * caller's memory (dm_etl_open_mem) */
    uint8_t *data;       /* what was read or inflated */
    size_t cap, len, pos;
    size_t base;         /* where recs starts in cur's records (a window's) */
    size_t total;        /* cur's record bytes: Offset - 0x48 */
    struct dm_lz77 lz;   /* a compressed cur's inflation, where it stopped */
    uint8_t *zin;        /* its compressed bytes read and not yet used */
    size_t zcap, zlen, zpos;
    uint64_t znext;      /* the file offset of its next byte to read */
    /* The merge key: the largest (timestamp, buffer index) of the stream's
     * decodable records so far, picked or not (see before() in
     * etl_reader.c). The timestamp lives in the reader's keys array, which
     * the tree compares inline (dm_kmerge_use_keys). */
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
    uint64_t held_max;       /* most buffer bytes held at once (etl_file.c) */
    uint64_t held_now, held_peak; /* bytes allocated for buffers: now, most */

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

    uint64_t bytes_done;
    uint64_t skipped;

    /* dm_etl_select: which records next() returns; the answers for GUIDs
     * are cached, as a trace names few classes but many records. */
    int selecting;
    int header_picked;       /* the selection takes the trace header record */
    struct dm_etl_select sel;
    /* The system-header records the selection takes, by HookId (bit h & 7
     * of byte h >> 3): groups and opcodes folded into one test. */
    uint8_t hooks[DM_ETL_HOOK_BYTES];
    uint8_t guid_seen[GUID_CACHE][16];
    uint8_t guid_ok[GUID_CACHE];
    unsigned guids, guid_evict;

    int (*on_buffer)(void *ctx, uint64_t bytes_done); /* dm_etl_on_buffer */
    void *on_buffer_ctx;

    int err;                 /* sticky: once next() failed it keeps failing */
    char err_msg[384];
};

/* etl_file.c: buffer 0's index entry (its header checked); the trace
 * header record's payload into etl->info (rec NULL: buffer 0 held no
 * record); the other buffers' index and one stream per CPU. */
int dm_etl__index_first(struct dm_etl *etl, char *err, size_t errlen);
int dm_etl__read_trace_header(struct dm_etl *etl, const struct dm_etl_record *rec,
                              uint32_t marker, char *err, size_t errlen);
int dm_etl__index_buffers(struct dm_etl *etl, char *err, size_t errlen);
/* etl_file.c: read (and inflate) buffer bi into s; move s's window to
 * start at s->pos (when base + len < total: the window ends early). */
int dm_etl__load_buffer(struct dm_etl *etl, struct stream *s, uint32_t bi,
                        char *err, size_t errlen);
int dm_etl__refill(struct dm_etl *etl, struct stream *s, char *err, size_t errlen);
/* etl_file.c: free what s holds (its stream has ended). */
void dm_etl__release(struct dm_etl *etl, struct stream *s);

/* etl_frame.c: framing and decoding the records of a loaded buffer.
 * dm_etl__next_head returns DM_ETL__NEED_MORE (never a dm_err, which are
 * negative) when the caller must refill s's window and call again. */
#define DM_ETL__NEED_MORE 2
int dm_etl__next_head(struct dm_etl *etl, struct stream *s, char *err,
                      size_t errlen);
void dm_etl__fill_record(const struct dm_etl *etl, const struct stream *s,
                         struct dm_etl_record *rec);
int dm_etl__picked(struct dm_etl *etl, const struct frame *f);

/* The position after a record of size bytes at pos: records start 8-byte
 * aligned [dissect etl.py]; the filled end may cut the last one's padding. */
static inline size_t next_pos(size_t pos, uint32_t size, size_t len)
{
    size_t stride = ((size_t)size + 7u) & ~(size_t)7u;

    return stride > len - pos ? len : pos + stride;
}

/*
 * Frame the record at r (left bytes to the buffer's filled end) when it is
 * one of the common well-formed kinds: 1 with f's r, marker, size, type,
 * kind, at and ts set (its pos, left and hdr are for frame_slow's
 * messages only), 0 to leave it to frame_slow (padding, the end marker,
 * skipped kinds, EVENT_HEADER extended items, damage). The checks are
 * frame_record's, so a record either takes, it takes the same way (the top
 * of etl_frame.c, where both are). Inline, into loops that keep f in
 * registers.
 */
static inline int frame_quick(const uint8_t *r, size_t left, struct frame *f)
{
    const struct type_info *ti;
    uint32_t marker, size;

    if (left < 8) /* the marker and Packet.Size */
        return 0;
    marker = dm_le32(r);
    ti = &dm_etl__type_info[marker >> 16 & 0xFFu];
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

/* dm_etl__next_head's common case without a selection, small enough to
 * inline in dm_etl_next's merge step: 1 when the record at s->pos was
 * framed into s->head (and the key moved), 0 to leave everything to
 * dm_etl__next_head. */
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

#endif /* DM_ETL_INTERNAL_H */
