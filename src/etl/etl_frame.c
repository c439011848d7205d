/*
 * etl_frame.c - framing the records of one loaded .etl buffer (see
 * etl_internal.h), and turning a framed record into a dm_etl_record.
 *
 * A leaf: it reads the bytes of the window a stream holds and calls no
 * other file of the reader. Where the window's end may cut a record it
 * says so (DM_ETL__NEED_MORE) and the caller, etl_reader.c, moves the
 * window (etl_file.c) and asks again, as libtraceevent's kbuffer leaves
 * the reading of the next page to its caller.
 *
 * Three paths frame a record (frame_quick is inline in etl_internal.h, for
 * dm_etl_next's merge step; the other two are here):
 *   frame_record (through frame_slow)  the checking path: every marker and
 *       header kind, every size checked, a message for each kind of damage;
 *   frame_quick (etl_internal.h)       the common well-formed kinds, in the
 *       loops that keep the frame in registers (dm_etl__next_head and
 *       dm_etl_next's merge step);
 *   skip_unpicked                      the selecting pass's loop over
 *       system-header records the selection does not take.
 * They must stay equivalent: a record the quick path or the skip takes is
 * one frame_record takes, with the same size, kind, payload start and
 * timestamp, and the stream's merge key moves the same way; whatever they
 * do not take (padding, the end marker, skipped kinds, EVENT_HEADER
 * extended items, damage) they leave to frame_record, which decides. So
 * the records returned, their order and every error are those of the
 * checking path alone, only faster. A change to one path's checks is a
 * change to all three.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/bytes.h"
#include "diskmon.h"
#include "etl/etl.h"
#include "etl/etl_internal.h"

/* Header types (marker byte 2) and their fixed header sizes [phnt]; the
 * kinds are etl_internal.h's. */
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

/* The hot loop's view of the same tables (etl_internal.h says why). */
const struct type_info dm_etl__type_info[256] = {
    [0x01] = {K_SYSTEM, 4, 0x20, 0x10, 1},    [0x02] = {K_SYSTEM, 8, 0x20, 0x10, 1},
    [0x03] = {K_COMPACT, 4, 0x18, 0x10, 1},   [0x04] = {K_COMPACT, 8, 0x18, 0x10, 1},
    [0x0A] = {K_FULL, 4, 0x30, 0x10, 0},      [0x14] = {K_FULL, 8, 0x30, 0x10, 0},
    [0x0B] = {K_INSTANCE, 4, 0x48, 0x10, 0},  [0x15] = {K_INSTANCE, 8, 0x48, 0x10, 0},
    [0x10] = {K_PERFINFO, 4, 0x10, 0x08, 1},  [0x11] = {K_PERFINFO, 8, 0x10, 0x08, 1},
    [0x12] = {K_EVENT, 4, 0x50, 0x10, 0},     [0x13] = {K_EVENT, 8, 0x50, 0x10, 0},
};

/* Message for a bad record at byte pos of s's records held now (its
 * window's: base says where that is in the buffer): a file offset for a
 * plain buffer, the buffer's offset and the inflated position otherwise. */
static int record_error(const struct dm_etl *etl, const struct stream *s,
                        size_t pos, char *err, size_t errlen, const char *what)
{
    const struct buf_entry *e = &etl->bufs[s->cur];

    if (e->flags & BUF_FLAG_COMPRESSED)
        snprintf(err, errlen,
                 "%s: corrupt record in the compressed buffer at offset %" PRIu64
                 " (byte %zu after inflating): %s; the trace is damaged from here on",
                 etl->name, e->offset, s->base + pos + BUF_HDR_SIZE, what);
    else
        snprintf(err, errlen,
                 "%s: corrupt record at offset %" PRIu64
                 ": %s; the trace is damaged from here on",
                 etl->name, e->offset + BUF_HDR_SIZE + s->base + pos, what);
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
 * HookId (group and opcode) for system headers, else by its GUID, whose answer is asked
 * once and cached. Every header kind checked here holds the bytes read
 * (kind_header_size). */
int dm_etl__picked(struct dm_etl *etl, const struct frame *f)
{
    const uint8_t *guid;
    unsigned i;
    int ok;

    switch (f->kind) {
    case K_SYSTEM:
    case K_COMPACT:
    case K_PERFINFO: {
        unsigned hook = dm_le16(f->r + SYS_OFF_HOOK);

        return etl->hooks[hook >> 3] >> (hook & 7u) & 1u;
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
    f->ts = dm_le64(f->r + dm_etl__type_info[f->type].ts_off);
    return 1;
}

/*
 * The selecting pass's inner loop over the bulk of a trace: from pos, step
 * over well-formed system-header records (SYSTEM, COMPACT, PERFINFO) whose
 * HookId the selection does not take, moving the key (*key_ts,
 * *key_buf; *has_key) as dm_etl__next_head would. Stops at the first
 * record that is anything else (picked, another kind, padding, the end
 * marker or one for the checking path) and returns its position, for
 * dm_etl__next_head to take from there. The checks are frame_quick's for
 * these kinds.
 */
static size_t skip_unpicked(const uint8_t *hooks, const uint8_t *recs, size_t pos,
                            size_t len, uint32_t cur, uint64_t *key_ts,
                            uint32_t *key_buf, int *has_key)
{
    uint64_t kts = *key_ts;
    uint32_t kbuf = *key_buf;
    int any = 0;

    while (len - pos >= 8) { /* the marker and Packet.Size */
        const uint8_t *r = recs + pos;
        uint32_t marker = dm_le32(r), size;
        const struct type_info *ti = &dm_etl__type_info[marker >> 16 & 0xFFu];
        unsigned hook;
        uint64_t ts;

        /* size_in_packet marks exactly the three system-header kinds. */
        if ((marker >> 24 & MARKER_FLAGS_TRACE) != MARKER_FLAGS_TRACE || !ti->size_in_packet)
            break;
        size = dm_le16(r + SYS_OFF_SIZE);
        if (size < ti->hdr || size > len - pos)
            break;
        hook = dm_le16(r + SYS_OFF_HOOK);
        if (hooks[hook >> 3] >> (hook & 7u) & 1u)
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
 * found, 0 at the end of the buffer, DM_ETL__NEED_MORE when the window's
 * end may have cut the record at s->pos (the caller refills the window,
 * dm_etl__refill, and calls again), or DM_ECORRUPT. Records of kinds not
 * decoded here are skipped by their size and counted. Every decodable
 * record moves the stream's merge key, also one the selection skips: the
 * merge must place the picked ones where the unselected merge would (see
 * before(), etl_reader.c). A skipped record costs its header only: its
 * frame, timestamp and the selection test (and an EVENT_HEADER's extended
 * items, checked so that a damaged one fails here as it would unselected).
 *
 * The loop works in locals (the record bytes are read through uint8_t
 * pointers, which may alias anything, so fields of s would be reloaded
 * after every store) and writes the stream back once.
 */
int dm_etl__next_head(struct dm_etl *etl, struct stream *s, char *err,
                      size_t errlen)
{
    const uint8_t *recs = s->recs;
    size_t len = s->len;
    const uint32_t cur = s->cur;
    const int selecting = etl->selecting;
    size_t pos = s->pos;
    uint64_t key_ts = *s->key_ts;
    uint32_t key_buf = s->key_buf;
    int has_key = s->has_key, rc;

    for (;;) {
        struct frame f;

        if (selecting)
            pos = skip_unpicked(etl->hooks, recs, pos, len, cur, &key_ts,
                                &key_buf, &has_key);
        if (frame_quick(recs + pos, len - pos, &f)) {
            pos = next_pos(pos, f.size, len);
        } else {
            size_t at = pos;

            /* Through s->head, so that f's address does not escape and
             * the common path keeps it in registers. */
            s->pos = pos;
            rc = frame_slow(etl, s, &s->head, err, errlen);
            pos = s->pos;
            if ((rc < 0 || (rc == 0 && s->head.left < 4)) && pos == at &&
                s->base + len < s->total && len - pos < RECORD_SPAN) {
                /* The window's end, not the buffer's, may have cut the
                 * record (or its marker: an end marker read whole ends
                 * the buffer): the caller moves the window to start
                 * there and calls again (etl_internal.h). */
                rc = DM_ETL__NEED_MORE;
                break;
            }
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
        if (selecting && f.kind <= K_PERFINFO) { /* system headers: the HookId's bit */
            unsigned hook = dm_le16(f.r + SYS_OFF_HOOK);

            if (!(etl->hooks[hook >> 3] >> (hook & 7u) & 1u))
                continue;
        }
        s->head = f;
        if (selecting && f.kind > K_PERFINFO && !dm_etl__picked(etl, &s->head))
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

/* Decode s->head's header fields into *rec. */
void dm_etl__fill_record(const struct dm_etl *etl, const struct stream *s,
                         struct dm_etl_record *rec)
{
    const struct frame *f = &s->head;

    rec->header_type = f->type;
    rec->pointer_size = dm_etl__type_info[f->type].pointer_size;
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
