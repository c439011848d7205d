/*
 * test_reorder.c - the live reorder stage (decode/reorder.c).
 *
 * Records are made up here: only their timestamp, a payload and, for
 * identification, the opcode field matter to the stage. The collector
 * checks what comes out against orders worked out by hand.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/reorder.h"
#include "diskmon.h"
#include "dmtest.h"

#define OUT_MAX 4096

/* What fn saw, in order. opcode carries a record's identity. */
struct collect {
    size_t n;
    uint64_t ts[OUT_MAX];
    unsigned id[OUT_MAX];
    size_t len[OUT_MAX];
    uint8_t first_byte[OUT_MAX];
    uint8_t last_byte[OUT_MAX];
    int fail_at;   /* return fail_rc on this call (1-based), 0: never */
    int fail_rc;
    int payload_ok; /* every payload byte i was (uint8_t)(id + i) */
};

static void collect_init(struct collect *c)
{
    memset(c, 0, sizeof *c);
    c->payload_ok = 1;
}

static int on_record(void *ctx, const struct dm_krecord *rec)
{
    struct collect *c = ctx;

    if (c->n < OUT_MAX) {
        c->ts[c->n] = rec->timestamp;
        c->id[c->n] = rec->opcode;
        c->len[c->n] = rec->payload_len;
        c->first_byte[c->n] = rec->payload_len > 0 ? rec->payload[0] : 0;
        c->last_byte[c->n] =
            rec->payload_len > 0 ? rec->payload[rec->payload_len - 1] : 0;
        for (size_t i = 0; i < rec->payload_len; i++)
            if (rec->payload[i] != (uint8_t)(rec->opcode + i))
                c->payload_ok = 0;
    }
    c->n++;
    if (c->fail_at != 0 && (int)c->n == c->fail_at)
        return c->fail_rc;
    return 0;
}

/* A record with payload bytes (id + i); buf must hold len bytes. */
static struct dm_krecord make(uint64_t ts, unsigned id, uint8_t *buf, size_t len)
{
    struct dm_krecord r;

    memset(&r, 0, sizeof r);
    r.kclass = DM_K_DISKIO;
    r.opcode = id;
    r.version = 3;
    r.pointer_size = 8;
    r.timestamp = ts;
    r.tid = DM_KNO_ID;
    r.pid = DM_KNO_ID;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(id + i);
    r.payload = len > 0 ? buf : NULL;
    r.payload_len = len;
    return r;
}

static int push(struct dm_reorder *ro, unsigned cpu, uint64_t ts, unsigned id,
                struct collect *c)
{
    uint8_t buf[52]; /* a DiskIo v3 x64 completion's size */
    struct dm_krecord r = make(ts, id, buf, sizeof buf);
    int rc = dm_reorder_push(ro, cpu, &r, on_record, c);

    memset(buf, 0xEE, sizeof buf); /* the stage must have copied it */
    return rc;
}

/* Four CPUs, each in order, arriving buffer by buffer out of global order:
 * after a flush everything comes out sorted, each exactly once. */
DM_TEST(interleaved_cpus_sorted)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(4, 1000000, 1024);
    unsigned id = 0;

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    /* CPU k's records have timestamps k, k+4, k+8, ... (so all 400 are
     * distinct); buffers of 10 records per CPU arrive CPU 3, 1, 0, 2, then
     * the next round. */
    for (unsigned round = 0; round < 10; round++) {
        static const unsigned order[4] = {3, 1, 0, 2};
        for (unsigned k = 0; k < 4; k++) {
            unsigned cpu = order[k];
            for (unsigned i = 0; i < 10; i++) {
                uint64_t ts = 100 + cpu + 4 * (round * 10 + i);
                DM_ASSERT_EQ_INT(push(ro, cpu, ts, id++ & 0xff, &c), 0);
            }
            DM_ASSERT_EQ_INT(dm_reorder_release(ro, 0, on_record, &c), 0);
        }
    }
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 400);
    for (size_t i = 0; i < c.n; i++)
        DM_ASSERT_EQ_U64(c.ts[i], 100 + i);
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 0);
    DM_ASSERT(c.payload_ok);
    dm_reorder_destroy(ro);
}

/* The watermark releases nothing until every CPU has delivered, then
 * exactly the records at or below the smallest newest timestamp. */
DM_TEST(watermark_needs_every_cpu)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(3, 1000000, 64);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    DM_ASSERT_EQ_INT(push(ro, 0, 10, 1, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 20, 2, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 1, 15, 3, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 1, 40, 4, &c), 0);
    /* CPU 2 has said nothing: now = 100 is far inside the window. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 100, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 4);
    /* CPU 2 delivers 30: the watermark is min(20, 40, 30) = 20, so 10, 15
     * and 20 go; 30 and 40 could still be overtaken by CPU 0. */
    DM_ASSERT_EQ_INT(push(ro, 2, 30, 5, &c), 0);
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 100, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 3);
    DM_ASSERT_EQ_U64(c.ts[0], 10);
    DM_ASSERT_EQ_U64(c.ts[1], 15);
    DM_ASSERT_EQ_U64(c.ts[2], 20);
    /* CPU 0 moves to 35: the watermark is min(35, 40, 30) = 30. */
    DM_ASSERT_EQ_INT(push(ro, 0, 35, 6, &c), 0);
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 100, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 4);
    DM_ASSERT_EQ_U64(c.ts[3], 30);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 2);
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 0);
    dm_reorder_destroy(ro);
}

/* A quiet CPU holds nothing back longer than the window. */
DM_TEST(time_bound_quiet_cpu)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(2, 1000, 64);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    DM_ASSERT_EQ_INT(push(ro, 0, 5000, 1, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 5500, 2, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 7000, 3, &c), 0);
    /* now 5999: 5000 + 1000 > 5999, nothing is old enough. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 5999, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 0);
    /* now 6000: 5000 is exactly window old; 5500 is not. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 6000, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 1);
    DM_ASSERT_EQ_U64(c.ts[0], 5000);
    /* now 6600: 5500 too; 7000 stays. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 6600, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 2);
    DM_ASSERT_EQ_U64(c.ts[1], 5500);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 1);
    /* A now below the window itself must not wrap around. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 10, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 2);
    dm_reorder_destroy(ro);
}

/* A full stage releases its oldest first; a new record older than all
 * held goes straight through. */
DM_TEST(count_bound_releases_oldest)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(2, 1000000, 3);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    DM_ASSERT_EQ_INT(push(ro, 0, 30, 1, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 40, 2, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 50, 3, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 0);
    /* Full: pushing 60 releases 30. */
    DM_ASSERT_EQ_INT(push(ro, 0, 60, 4, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 1);
    DM_ASSERT_EQ_U64(c.ts[0], 30);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 3);
    /* Full again: 35 is older than everything held (40, 50, 60), so it is
     * the oldest and goes at once, without being late (30 < 35). */
    DM_ASSERT_EQ_INT(push(ro, 1, 35, 5, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 2);
    DM_ASSERT_EQ_U64(c.ts[1], 35);
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 3);
    /* Many more: held never passes 3, output stays sorted. */
    for (unsigned i = 0; i < 100; i++)
        DM_ASSERT_EQ_INT(push(ro, i & 1, 100 + i, 6 + i, &c), 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 3);
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 105);
    for (size_t i = 1; i < c.n; i++)
        DM_ASSERT(c.ts[i - 1] <= c.ts[i]);
    dm_reorder_destroy(ro);
}

/* A record older than one already released is delivered at once and
 * counted; the rest keep their order. */
DM_TEST(late_record_counted_and_delivered)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(2, 100, 16);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    DM_ASSERT_EQ_INT(push(ro, 0, 1000, 1, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 1200, 2, &c), 0);
    /* CPU 1 is quiet; now 1100: 1000 goes by the time bound. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 1100, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 1);
    /* CPU 1 then delivers 900: older than 1000. */
    DM_ASSERT_EQ_INT(push(ro, 1, 900, 3, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 2);
    DM_ASSERT_EQ_U64(c.ts[1], 900);
    DM_ASSERT_EQ_INT(c.id[1], 3);
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 1);
    /* Equal to the last released is not late. */
    DM_ASSERT_EQ_INT(push(ro, 0, 1000, 4, &c), 0);
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 1);
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 4);
    DM_ASSERT_EQ_U64(c.ts[2], 1000);
    DM_ASSERT_EQ_U64(c.ts[3], 1200);
    dm_reorder_destroy(ro);
}

/* CPUs beyond n_cpus share one extra stream, which joins the watermark
 * once it delivered; until then it does not block the n_cpus. */
DM_TEST(cpu_beyond_count)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(1, 1000000, 16);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    DM_ASSERT_EQ_INT(push(ro, 0, 10, 1, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 20, 2, &c), 0);
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 0, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 2); /* one CPU: its own newest is the mark */
    DM_ASSERT_EQ_INT(push(ro, 7, 25, 3, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 30, 4, &c), 0);
    /* mark = min(30, 25) = 25. */
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 0, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 3);
    DM_ASSERT_EQ_U64(c.ts[2], 25);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 1);
    dm_reorder_destroy(ro);
}

DM_TEST(flush_releases_all)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(8, 1000000, 64);
    static const uint64_t ts[] = {70, 10, 50, 30, 60, 20, 40};

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned i = 0; i < 7; i++)
        DM_ASSERT_EQ_INT(push(ro, i, ts[i], i, &c), 0);
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 0, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 0); /* CPU 7 never delivered */
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 7);
    for (unsigned i = 0; i < 7; i++)
        DM_ASSERT_EQ_U64(c.ts[i], 10 * (i + 1));
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 0);
    /* Flushing an empty stage is fine. */
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 7);
    dm_reorder_destroy(ro);
}

/* Payloads of every size class survive, byte for byte, after the caller's
 * buffer was overwritten: empty, inline, exactly inline, allocated. */
DM_TEST(payload_bytes_survive)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(1, 1000000, 16);
    static const size_t lens[] = {0, 1, 52, DM_REORDER_INLINE,
                                  DM_REORDER_INLINE + 1, 3000, 65535};
    size_t n = sizeof lens / sizeof lens[0];
    uint8_t *buf = malloc(65535);

    DM_ASSERT(ro != NULL && buf != NULL);
    collect_init(&c);
    /* Pushed newest first, so the flush reverses them. */
    for (size_t i = 0; i < n; i++) {
        struct dm_krecord r = make(1000 - i, (unsigned)(7 * i + 1), buf, lens[i]);
        DM_ASSERT_EQ_INT(dm_reorder_push(ro, 0, &r, on_record, &c), 0);
        memset(buf, 0xEE, 65535);
    }
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, n);
    DM_ASSERT(c.payload_ok);
    for (size_t i = 0; i < n; i++) {
        size_t k = n - 1 - i;
        DM_ASSERT_EQ_U64(c.len[i], lens[k]);
        DM_ASSERT_EQ_INT(c.id[i], 7 * k + 1);
    }
    free(buf);
    dm_reorder_destroy(ro);
}

/* Long payloads are capped in bytes: pushing more than the cap releases
 * the oldest, and held long payloads never pass DM_REORDER_BIG_BYTES. */
DM_TEST(long_payload_byte_cap)
{
    struct collect c;
    size_t len = 60000, per_cap = DM_REORDER_BIG_BYTES / len;
    struct dm_reorder *ro = dm_reorder_create(1, UINT64_MAX, 4096);
    uint8_t *buf = malloc(len);

    DM_ASSERT(ro != NULL && buf != NULL);
    collect_init(&c);
    for (size_t i = 0; i < per_cap + 10; i++) {
        struct dm_krecord r = make(10 + i, (unsigned)i, buf, len);
        DM_ASSERT_EQ_INT(dm_reorder_push(ro, 0, &r, on_record, &c), 0);
        DM_ASSERT(dm_reorder_held(ro) <= per_cap);
    }
    DM_ASSERT_EQ_U64(c.n, 10);
    DM_ASSERT_EQ_U64(c.ts[0], 10);
    DM_ASSERT_EQ_U64(c.ts[9], 19);
    DM_ASSERT(c.payload_ok);
    free(buf);
    dm_reorder_destroy(ro); /* frees what is still held (ASan checks) */
}

/* Equal timestamps come out in arrival order, across CPUs too. */
DM_TEST(equal_timestamps_stable)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(2, 1000000, 256);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned i = 0; i < 200; i++)
        DM_ASSERT_EQ_INT(push(ro, i % 2, 500 + (i >= 100 ? 1 : 0), i, &c), 0);
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, 200);
    for (unsigned i = 0; i < 200; i++)
        DM_ASSERT_EQ_INT(c.id[i], i);
    dm_reorder_destroy(ro);
}

/* fn's error stops release, push and flush, and is returned; the record it
 * failed on is not offered again, the others stay held. */
DM_TEST(fn_error_propagates)
{
    struct collect c;
    struct dm_reorder *ro = dm_reorder_create(1, 10, 4);

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned i = 0; i < 4; i++)
        DM_ASSERT_EQ_INT(push(ro, 0, 100 + i, i, &c), 0);
    /* release: the second call fails. */
    c.fail_at = 2;
    c.fail_rc = DM_ESTOPPED;
    DM_ASSERT_EQ_INT(dm_reorder_release(ro, 1000, on_record, &c), DM_ESTOPPED);
    DM_ASSERT_EQ_U64(c.n, 2);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 2);
    /* push into a full stage: the release it makes fails; the new record is
     * not taken. */
    DM_ASSERT_EQ_INT(push(ro, 0, 200, 10, &c), 0);
    DM_ASSERT_EQ_INT(push(ro, 0, 201, 11, &c), 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 4);
    c.fail_at = (int)c.n + 1;
    DM_ASSERT_EQ_INT(push(ro, 0, 202, 12, &c), DM_ESTOPPED);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 3);
    /* flush: fails on its first record, keeps the other two. */
    c.fail_at = (int)c.n + 1;
    c.fail_rc = -1;
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), -1);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 2);
    c.fail_at = 0;
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(dm_reorder_held(ro), 0);
    /* 100..103 once each (the failed ones included), then 200, 201. */
    DM_ASSERT_EQ_U64(c.n, 6);
    for (size_t i = 1; i < c.n; i++)
        DM_ASSERT(c.ts[i - 1] < c.ts[i]);
    dm_reorder_destroy(ro);
}

/* Random per-CPU streams with random delivery, random release clock and a
 * small count bound: every record comes out exactly once, and out of
 * order only when counted late. */
DM_TEST(random_streams)
{
    enum { CPUS = 5, PER_CPU = 600 };
    static struct collect c;
    struct dm_reorder *ro = dm_reorder_create(CPUS, 300, 64);
    uint64_t next_ts[CPUS];
    unsigned done[CPUS] = {0}, total = 0, seed = 12345, out_of_order = 0;

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned k = 0; k < CPUS; k++)
        next_ts[k] = 1000 + k;
    while (total < CPUS * PER_CPU) {
        unsigned k, burst;
        seed = seed * 1103515245u + 12345u;
        k = (seed >> 16) % CPUS;
        burst = 1 + (seed >> 8) % 20;
        for (unsigned i = 0; i < burst && done[k] < PER_CPU; i++) {
            DM_ASSERT_EQ_INT(push(ro, k, next_ts[k], total & 0xff, &c), 0);
            next_ts[k] += 1 + (seed >> 4) % 7;
            done[k]++;
            total++;
        }
        DM_ASSERT_EQ_INT(dm_reorder_release(ro, next_ts[k], on_record, &c), 0);
        DM_ASSERT(dm_reorder_held(ro) <= 64);
    }
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, CPUS * PER_CPU);
    for (size_t i = 1; i < c.n; i++)
        if (c.ts[i] < c.ts[i - 1])
            out_of_order++;
    DM_ASSERT(out_of_order <= dm_reorder_late(ro));
    DM_ASSERT(c.payload_ok);
    dm_reorder_destroy(ro);
}

/* Records out of their stream's order (CPUs beyond n_cpus share one
 * stream; a CPU may misbehave) are held apart from the in-order lists, and
 * everything still comes out by timestamp, equal ones in arrival order:
 * checked against a stable sort of what went in. */
DM_TEST(out_of_order_within_stream)
{
    enum { N = 600 };
    static struct collect c;
    struct dm_reorder *ro = dm_reorder_create(2, 1000000, 1024);
    uint64_t ts_in[N];
    unsigned order[N], seed = 777;

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned i = 0; i < N; i++) {
        /* CPU 0 in order; CPUs 2..4 (the extra stream) in any order, from
         * a small range so that many timestamps repeat. */
        unsigned cpu = i % 4 == 0 ? 0 : 2 + i % 3;
        seed = seed * 1103515245u + 12345u;
        ts_in[i] = cpu == 0 ? 1000 + i : 1000 + (seed >> 16) % N;
        DM_ASSERT_EQ_INT(push(ro, cpu, ts_in[i], i & 0xff, &c), 0);
        order[i] = i;
    }
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, N);
    /* Insertion sort: stable. */
    for (unsigned i = 1; i < N; i++) {
        unsigned v = order[i], j = i;
        while (j > 0 && ts_in[order[j - 1]] > ts_in[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    for (unsigned i = 0; i < N; i++) {
        DM_ASSERT_EQ_U64(c.ts[i], ts_in[order[i]]);
        DM_ASSERT_EQ_INT(c.id[i], order[i] & 0xff);
    }
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 0);
    DM_ASSERT(c.payload_ok);
    dm_reorder_destroy(ro);
}

/* Buffers of four CPUs that overlap in time, delivered whole in a random
 * order, with timestamps that repeat across CPUs, released by the
 * watermark as they come: records join the lane or their CPU's list by
 * how they arrive (reorder.c), and what comes out is exactly a stable sort
 * of what went in (by timestamp, equal ones in arrival order), none late. */
DM_TEST(overlapping_buffers_stable)
{
    enum { CPUS = 4, N = 2000 };
    static struct collect c;
    struct dm_reorder *ro = dm_reorder_create(CPUS, UINT64_MAX / 2, N);
    uint64_t ts_in[N], next_ts[CPUS];
    unsigned order[N], seed = 4242, total = 0;

    DM_ASSERT(ro != NULL);
    collect_init(&c);
    for (unsigned k = 0; k < CPUS; k++)
        next_ts[k] = 1000;
    while (total < N) {
        unsigned k, burst;
        seed = seed * 1103515245u + 12345u;
        k = (seed >> 16) % CPUS;
        burst = 1 + (seed >> 8) % 30;
        for (unsigned i = 0; i < burst && total < N; i++) {
            seed = seed * 1103515245u + 12345u;
            next_ts[k] += (seed >> 16) % 3; /* 0: a repeat */
            ts_in[total] = next_ts[k];
            order[total] = total;
            DM_ASSERT_EQ_INT(push(ro, k, ts_in[total], total & 0xff, &c), 0);
            total++;
        }
        DM_ASSERT_EQ_INT(dm_reorder_release(ro, 0, on_record, &c), 0);
    }
    DM_ASSERT_EQ_INT(dm_reorder_flush(ro, on_record, &c), 0);
    DM_ASSERT_EQ_U64(c.n, N);
    for (unsigned i = 1; i < N; i++) { /* insertion sort: stable */
        unsigned v = order[i], j = i;
        while (j > 0 && ts_in[order[j - 1]] > ts_in[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    for (unsigned i = 0; i < N; i++) {
        DM_ASSERT_EQ_U64(c.ts[i], ts_in[order[i]]);
        DM_ASSERT_EQ_INT(c.id[i], order[i] & 0xff);
    }
    DM_ASSERT_EQ_U64(dm_reorder_late(ro), 0);
    DM_ASSERT(c.payload_ok);
    dm_reorder_destroy(ro);
}

DM_TEST(create_limits_and_window)
{
    DM_ASSERT(dm_reorder_create(1, 0, 0) == NULL);
    DM_ASSERT(dm_reorder_create(DM_REORDER_MAX_CPUS + 1, 0, 1) == NULL);
    /* 10 MHz QPC, FlushTimer 1 s: 1.5 s = 15,000,000 ticks. */
    DM_ASSERT_EQ_U64(dm_reorder_window_ticks(10000000u, 1), 15000000u);
    DM_ASSERT_EQ_U64(dm_reorder_window_ticks(10000000u, 0), 15000000u);
    /* 3,579,545 Hz (ACPI PM timer QPC), 2 s: 2.5 s = 8,948,862.5 -> 8948862. */
    DM_ASSERT_EQ_U64(dm_reorder_window_ticks(3579545u, 2), 8948862u);
}

const struct dmt_case dm_suite_reorder[] = {
    {"interleaved_cpus_sorted", interleaved_cpus_sorted},
    {"watermark_needs_every_cpu", watermark_needs_every_cpu},
    {"time_bound_quiet_cpu", time_bound_quiet_cpu},
    {"count_bound_releases_oldest", count_bound_releases_oldest},
    {"late_record_counted_and_delivered", late_record_counted_and_delivered},
    {"cpu_beyond_count", cpu_beyond_count},
    {"flush_releases_all", flush_releases_all},
    {"payload_bytes_survive", payload_bytes_survive},
    {"long_payload_byte_cap", long_payload_byte_cap},
    {"equal_timestamps_stable", equal_timestamps_stable},
    {"fn_error_propagates", fn_error_propagates},
    {"random_streams", random_streams},
    {"out_of_order_within_stream", out_of_order_within_stream},
    {"overlapping_buffers_stable", overlapping_buffers_stable},
    {"create_limits_and_window", create_limits_and_window},
    {NULL, NULL},
};
