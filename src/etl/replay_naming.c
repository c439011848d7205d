/*
 * replay_naming.c - replay's naming pass on both cores (replay_naming.h).
 *
 * The naming pass reads the whole trace before the first line goes out,
 * and while it runs the printer has nothing to do, so one core sat idle
 * for a third of the source thread's time. Its work splits in two halves
 * of about the same cost (callgrind, the generated trace of 100,000
 * requests: reading and merging 45M instructions, dm_kdecode_rundown 38M):
 * a reader thread runs the selecting merge (dm_etl_next) and copies each
 * picked record into a batch; the calling thread takes the batches in the
 * order they were filled and hands their records to dm_kdecode_rundown.
 * The records reach the decoder in the merge's order, one by one, exactly
 * as when one thread did both, so the rundown tables, and the output, are
 * the same.
 *
 * The batches are a ring of BATCHES buffers of BATCH_BYTES: the reader
 * fills batch k (k counted from 0, batch k % BATCHES) once the decoder
 * has drained batch k - BATCHES, and publishes it by storing k + 1 in
 * filled (release); the decoder reads filled (acquire), decodes the batch
 * and stores k + 1 in drained (release), which the reader reads (acquire)
 * before it writes the batch again. Each side sleeps on its own waiter
 * (platform.h) when it has to wait, and the other wakes it after each
 * batch; a wake given before the wait makes the wait return at once, and
 * each side checks its counter again after every wake, so none is lost.
 * That is a system call per batch and side, a few hundred for a 15 MB
 * trace. Memory: BATCHES * BATCH_BYTES, on top of the reader's window per
 * CPU.
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "etl/replay_naming.h"
#include "platform/platform.h"

/* Four batches of 128 KiB: about 1,500 DiskIo completions each, so the
 * two threads meet once per 1,500 records and each can run up to three
 * batches ahead of the other. A record's size is a 16-bit field of its
 * header (etl_frame.c), so a record with its entry always fits a batch. */
#define BATCHES 4u
#define BATCH_BYTES (128u * 1024u)
#define RECORD_MAX 0xFFFFu

/* A picked record in a batch: the dm_krecord fields, then the payload,
 * padded to 8 bytes so the next entry is aligned. */
struct entry {
    uint64_t timestamp;
    uint32_t tid, pid;
    uint32_t opcode, version;
    uint32_t payload_len;
    uint8_t kclass;
    uint8_t pointer_size;
    uint8_t has_payload; /* 0: the reader gave a NULL payload */
};

_Static_assert(BATCH_BYTES >= sizeof(struct entry) + RECORD_MAX + 8,
               "every record fits an empty batch");

struct batch {
    unsigned char *data;
    size_t used;
    int last; /* the reader's final batch: rc is its last result */
    int rc;
};

struct naming {
    struct dm_etl *etl;
    dm_replay_classify *classify;
    void *ctx;
    struct batch batch[BATCHES];
    dm_atomic_u64 filled;  /* batches published by the reader */
    dm_atomic_u64 drained; /* batches the decoder is done with */
    dm_waiter *reader_wake, *decoder_wake;
};

static size_t entry_size(size_t payload_len)
{
    return sizeof(struct entry) + ((payload_len + 7u) & ~(size_t)7u);
}

/* Batch k, once the decoder is done with what it held before. */
static struct batch *reader_batch(struct naming *n, uint64_t k)
{
    while (k - dm_atomic_load_acquire(&n->drained) >= BATCHES)
        (void)dm_waiter_wait(n->reader_wake, DM_WAIT_FOREVER, NULL);
    n->batch[k % BATCHES].used = 0;
    return &n->batch[k % BATCHES];
}

static void publish(struct naming *n, uint64_t k)
{
    dm_atomic_store_release(&n->filled, k + 1);
    dm_waiter_wake(n->decoder_wake);
}

static void append(struct batch *b, const struct dm_etl_record *rec, enum dm_kclass kclass)
{
    struct entry *e = (struct entry *)(void *)(b->data + b->used);

    e->timestamp = rec->timestamp;
    e->tid = rec->tid;
    e->pid = rec->pid;
    e->opcode = rec->opcode;
    e->version = rec->version;
    e->payload_len = (uint32_t)rec->payload_len;
    e->kclass = (uint8_t)kclass;
    e->pointer_size = (uint8_t)rec->pointer_size;
    e->has_payload = rec->payload != NULL;
    if (rec->payload_len > 0 && rec->payload != NULL)
        memcpy(e + 1, rec->payload, rec->payload_len);
    b->used += entry_size(rec->payload_len);
}

/* The reader thread: the selecting merge, every record the decoder does
 * not ignore (DM_K_OTHER) into the batches, then a last batch with the
 * reader's result. */
static void reader_main(void *arg)
{
    struct naming *n = arg;
    struct dm_etl_record rec;
    char err[512];
    uint64_t k = 0;
    struct batch *b = reader_batch(n, k);
    int rc;

    while ((rc = dm_etl_next(n->etl, &rec, err, sizeof err)) > 0) {
        enum dm_kclass kclass = n->classify(n->ctx, &rec);
        size_t need = entry_size(rec.payload_len);

        if (kclass == DM_K_OTHER)
            continue; /* dm_kdecode_rundown returns 0 at once */
        if (rec.payload_len > RECORD_MAX) { /* cannot happen: see RECORD_MAX */
            rc = DM_ECORRUPT;
            break;
        }
        if (b->used + need > BATCH_BYTES) {
            b->last = 0;
            publish(n, k++);
            b = reader_batch(n, k);
        }
        append(b, &rec, kclass);
    }
    b->last = 1;
    b->rc = rc;
    publish(n, k);
}

/* Hand batch b's records to dm_kdecode_rundown, in the order they came. */
static void decode_batch(struct dm_kdecoder *kd, const struct batch *b)
{
    struct dm_krecord kr;

    for (size_t at = 0; at < b->used;) {
        const struct entry *e = (const struct entry *)(const void *)(b->data + at);

        kr.kclass = (enum dm_kclass)e->kclass;
        kr.opcode = e->opcode;
        kr.version = e->version;
        kr.pointer_size = e->pointer_size;
        kr.timestamp = e->timestamp;
        kr.tid = e->tid;
        kr.pid = e->pid;
        kr.payload = e->has_payload ? (const uint8_t *)(e + 1) : NULL;
        kr.payload_len = e->payload_len;
        /* Damage is counted by the decoding pass, which meets it again;
         * out of memory leaves a name out, as in one thread. */
        (void)dm_kdecode_rundown(kd, &kr);
        at += entry_size(e->payload_len);
    }
}

/* The decoder's side: every batch in turn, until the last. */
static int decode_batches(struct naming *n, struct dm_kdecoder *kd)
{
    for (uint64_t k = 0;; k++) {
        const struct batch *b = &n->batch[k % BATCHES];
        int last, rc;

        while (dm_atomic_load_acquire(&n->filled) == k)
            (void)dm_waiter_wait(n->decoder_wake, DM_WAIT_FOREVER, NULL);
        decode_batch(kd, b);
        last = b->last;
        rc = b->rc;
        dm_atomic_store_release(&n->drained, k + 1);
        dm_waiter_wake(n->reader_wake);
        if (last)
            return rc;
    }
}

/* Without a second thread: both halves on this one, record by record. */
static int one_thread(struct naming *n, struct dm_kdecoder *kd)
{
    struct dm_etl_record rec;
    struct dm_krecord kr;
    char err[512]; /* dm_etl_next's quick path wants one */
    int rc;

    while ((rc = dm_etl_next(n->etl, &rec, err, sizeof err)) > 0) {
        kr.kclass = n->classify(n->ctx, &rec);
        kr.opcode = rec.opcode;
        kr.version = rec.version;
        kr.pointer_size = rec.pointer_size;
        kr.timestamp = rec.timestamp;
        kr.tid = rec.tid;
        kr.pid = rec.pid;
        kr.payload = rec.payload;
        kr.payload_len = rec.payload_len;
        (void)dm_kdecode_rundown(kd, &kr);
    }
    return rc;
}

static void naming_free(struct naming *n)
{
    for (unsigned i = 0; i < BATCHES; i++)
        free(n->batch[i].data);
    if (n->reader_wake != NULL)
        dm_waiter_destroy(n->reader_wake);
    if (n->decoder_wake != NULL)
        dm_waiter_destroy(n->decoder_wake);
}

int dm_replay_naming(struct dm_etl *etl, struct dm_kdecoder *kd,
                     dm_replay_classify *classify, void *ctx)
{
    struct naming n;
    dm_thread *reader;
    int ok, rc;

    memset(&n, 0, sizeof n);
    n.etl = etl;
    n.classify = classify;
    n.ctx = ctx;
    n.reader_wake = dm_waiter_create(0);
    n.decoder_wake = dm_waiter_create(0);
    ok = n.reader_wake != NULL && n.decoder_wake != NULL;
    for (unsigned i = 0; ok && i < BATCHES; i++)
        ok = (n.batch[i].data = malloc(BATCH_BYTES)) != NULL;
    if (!ok || dm_thread_start(&reader, reader_main, &n) != 0) {
        naming_free(&n);
        return one_thread(&n, kd);
    }
    rc = decode_batches(&n, kd);
    dm_thread_join(reader);
    naming_free(&n);
    return rc;
}
