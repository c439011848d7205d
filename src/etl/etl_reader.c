/*
 * etl_reader.c - a portable reader of .etl trace files (see etl.h), its
 * front: open and close, the per-CPU streams and their merge, selection,
 * rewind and next(). It calls down into the buffer layer (etl_file.c: the
 * index, loading and refilling windows) and the framer (etl_frame.c, a
 * leaf that asks for a refill rather than doing one); etl_internal.h lists
 * the three.
 *
 * An .etl file is a run of buffers, each a 72-byte WMI_BUFFER_HEADER followed
 * by 8-byte-aligned records from one CPU; compressed buffers hold MS-XCA
 * Plain LZ77 data that inflates to the records. Layouts: docs/etw.md §4.
 *
 * How it reads:
 *   - open() validates buffer 0 and the trace header record in it, then walks
 *     every other buffer header once and keeps a small index entry per buffer
 *     (offset, sizes, flags, CPU), chained per CPU in file order. A bad
 *     buffer header after buffer 0 ends the index there; the error is
 *     reported once every record before it has been returned.
 *   - next() returns the records of buffer 0 first (the trace header event
 *     and whatever the logger put beside it), then merges the per-CPU
 *     streams with a tournament tree (base/kmerge.h) keyed on (timestamp,
 *     buffer index), so equal timestamps keep file order; the key of a
 *     stream is the largest of its records so far (before() says why).
 *     Each stream holds a window of one buffer (etl_internal.h): a plain
 *     buffer is read, and a compressed one inflated, a window at a time as
 *     its records are taken, and the next buffer only when the current one
 *     is used up, so memory is one window per CPU plus the index whatever
 *     the size of the file or of its buffers.
 *   - With a selection (dm_etl_select), a stream skips the records not
 *     picked inside dm_etl__next_head, after reading only their size, kind,
 *     timestamp and HookId or GUID; only picked records enter the merge.
 *   - A bad record ends the trace where it is found: next() returns the
 *     error, after every record it returned before, and keeps returning it.
 *     A stream that fails after its first record keeps its failure in the
 *     merge under its key, so a selecting reader reports it where the full
 *     merge would.
 *
 * Every length read from the file is checked against the bytes that hold it
 * before anything is read through it; fields are assembled byte by byte into
 * fixed-width integers (dm_le16/dm_le32/dm_le64, base/bytes.h), never read
 * through a cast pointer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "base/kmerge.h"
#include "diskmon.h"
#include "etl/etl.h"
#include "etl/etl_internal.h"
#include "platform/platform.h"

/* dm_etl__next_head, moving the window (dm_etl__refill) whenever its end
 * may have cut the record to frame: 1 with s->head framed, 0 at the end of
 * the buffer, <0 error. */
static int next_head(struct dm_etl *etl, struct stream *s, char *err, size_t errlen)
{
    int rc;

    while ((rc = dm_etl__next_head(etl, s, err, errlen)) == DM_ETL__NEED_MORE) {
        rc = dm_etl__refill(etl, s, err, errlen);
        if (rc < 0)
            return rc;
    }
    return rc;
}

/* next_head, then its record into *rec (buffer 0, read without a merge). */
static int next_in_buffer(struct dm_etl *etl, struct stream *s,
                          struct dm_etl_record *rec, char *err, size_t errlen)
{
    int rc = next_head(etl, s, err, errlen);

    if (rc == 1)
        dm_etl__fill_record(etl, s, rec);
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
            dm_etl__release(etl, s);
            return 0;
        }
        rc = dm_etl__load_buffer(etl, s, s->next, err, errlen);
        if (rc < 0)
            return rc;
    }
}

/*
 * Merge order: earlier timestamp first; equal timestamps in file order
 * (buffer index; inside a buffer, stream order). Streams are compared by
 * their keys, the largest (timestamp, buffer) of each stream's records so
 * far, not by the head record's own. For streams in time order, as ETW
 * writes them (docs/etw.md §4), the two are the same. For a stream that
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

/* The merge over the streams dm_etl__index_buffers made (etl_file.c): a
 * tree of stream indices ordered by before(), whose keys' timestamps sit in
 * one array the tree compares inline. */
static int merge_init(struct dm_etl *etl, char *err, size_t errlen)
{
    etl->keys = calloc(etl->nstreams ? etl->nstreams : 1, sizeof *etl->keys);
    if (etl->keys == NULL ||
        dm_kmerge_init(&etl->merge, etl->nstreams, before, etl) != 0) {
        snprintf(err, errlen, "%s: out of memory", etl->name);
        return DM_ENOMEM;
    }
    dm_kmerge_use_keys(&etl->merge, etl->keys);
    for (unsigned i = 0; i < etl->nstreams; i++)
        etl->streams[i].key_ts = &etl->keys[i];
    return 0;
}

/*
 * The trace header record, first in buffer 0 (etl_file.c reads its
 * TRACE_LOGFILE_HEADER payload).
 */
static int read_header(struct dm_etl *etl, char *err, size_t errlen)
{
    struct stream *s = &etl->prologue;
    uint32_t marker = s->len >= 4 ? dm_le32(s->recs) : 0;
    int rc;

    if (marker != MARKER_HEADER32 && marker != MARKER_HEADER64) {
        snprintf(err, errlen,
                 "%s: not an .etl trace (no trace header record at offset %u)",
                 etl->name, BUF_HDR_SIZE);
        return DM_ECORRUPT;
    }
    rc = next_in_buffer(etl, s, &etl->header_rec, err, errlen);
    if (rc < 0)
        return rc;
    return dm_etl__read_trace_header(etl, rc == 1 ? &etl->header_rec : NULL, marker,
                                     err, errlen);
}

/* Shared by dm_etl_open and dm_etl_open_mem once the input is attached:
 * buffer 0 and the trace header, the index of the other buffers, and the
 * merge over their streams. */
static int open_common(struct dm_etl *etl, char *err, size_t errlen)
{
    int rc = dm_etl__index_first(etl, err, errlen);

    if (rc < 0)
        return rc;
    rc = dm_etl__load_buffer(etl, &etl->prologue, 0, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_header(etl, err, errlen);
    if (rc < 0)
        return rc;
    rc = dm_etl__index_buffers(etl, err, errlen);
    if (rc < 0)
        return rc;
    rc = merge_init(etl, err, errlen);
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
                dm_etl__fill_record(etl, s, rec);
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
            dm_etl__fill_record(etl, s, rec);
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
    uint8_t hook[SYS_OFF_HOOK + 2] = {0};
    struct frame f;

    etl->header_picked = 0;
    if (!etl->selecting)
        return;
    /* The header is a SYSTEM header record (MARKER_HEADER32/64), whose
     * HookId is all dm_etl__picked reads of it; buffer 0's window
     * may have moved past the record itself. */
    hook[SYS_OFF_HOOK] = (uint8_t)etl->header_rec.opcode;
    hook[SYS_OFF_HOOK + 1] = (uint8_t)etl->header_rec.group;
    f.r = hook;
    f.kind = K_SYSTEM;
    etl->header_picked = dm_etl__picked(etl, &f);
}

void dm_etl_select(struct dm_etl *etl, const struct dm_etl_select *sel)
{
    etl->selecting = sel != NULL;
    if (sel != NULL) {
        etl->sel = *sel;
        etl->sel.opcodes = NULL; /* folded into hooks, not kept */
        /* A group's 256 HookIds are its 32 bytes of hooks. */
        for (unsigned group = 0; group < 256u; group++) {
            uint8_t *h = etl->hooks + group * 32u;

            if (!(sel->groups[group >> 3] >> (group & 7u) & 1u))
                memset(h, 0, 32);
            else if (sel->opcodes == NULL)
                memset(h, 0xFF, 32);
            else
                memcpy(h, sel->opcodes + group * 32u, 32);
        }
    }
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
    rc = dm_etl__load_buffer(etl, &etl->prologue, 0, err, errlen);
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
        free(etl->streams[i].zin);
        free(etl->streams[i].err_msg);
    }
    free(etl->streams);
    free(etl->keys);
    dm_kmerge_free(&etl->merge);
    free(etl->prologue.data);
    free(etl->prologue.zin);
    free(etl->bufs);
    free(etl->name);
    free(etl);
}
