/*
 * test_ring.c - the SPSC ring: order, wrap-around, drops when full, waiting
 * when full, and a two-thread stress test in which every event arrives once,
 * in order, or is counted as dropped.
 */
#include <stdlib.h>

#include "core/ring.h"
#include "dmtest.h"
#include "platform/platform.h"

static struct dm_event ev_with(uint64_t n)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.byte_offset = n;
    return ev;
}

/* Pop everything ready, appending byte_offsets to out. */
static size_t drain(struct dm_ring *ring, uint64_t *out, size_t max)
{
    size_t got = 0, n;
    const struct dm_event *batch;

    while ((n = dm_ring_peek(ring, &batch, 1000)) > 0) {
        for (size_t i = 0; i < n && got < max; i++)
            out[got++] = batch[i].byte_offset;
        dm_ring_release(ring, n);
    }
    return got;
}

DM_TEST(capacity_rounds_up)
{
    struct dm_ring *ring = dm_ring_create(1000);

    DM_ASSERT(ring != NULL);
    DM_ASSERT_EQ_U64(dm_ring_capacity(ring), 1024);
    dm_ring_destroy(ring);
}

DM_TEST(fifo_and_wraparound)
{
    struct dm_ring *ring = dm_ring_create(8);
    uint64_t got[16];
    uint64_t next = 0, expect = 0;

    /* Push 5 / pop 5 repeatedly so indices wrap the 8 slots many times. */
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 5; i++) {
            struct dm_event ev = ev_with(next++);
            DM_ASSERT(dm_ring_try_push(ring, &ev) == 1);
        }
        size_t n = drain(ring, got, 16);
        DM_ASSERT_EQ_U64(n, 5);
        for (size_t i = 0; i < n; i++)
            DM_ASSERT_EQ_U64(got[i], expect++);
    }
    DM_ASSERT_EQ_U64(dm_ring_dropped(ring), 0);
    DM_ASSERT_EQ_U64(dm_ring_pushed(ring), 100);
    dm_ring_destroy(ring);
}

DM_TEST(full_ring_drops_and_counts)
{
    struct dm_ring *ring = dm_ring_create(4);
    uint64_t got[8];

    for (uint64_t i = 0; i < 4; i++) {
        struct dm_event ev = ev_with(i);
        DM_ASSERT(dm_ring_try_push(ring, &ev) == 1);
    }
    struct dm_event extra = ev_with(99);
    DM_ASSERT(dm_ring_try_push(ring, &extra) == 0);
    DM_ASSERT(dm_ring_try_push(ring, &extra) == 0);
    DM_ASSERT_EQ_U64(dm_ring_dropped(ring), 2);
    DM_ASSERT_EQ_U64(drain(ring, got, 8), 4);
    DM_ASSERT_EQ_U64(got[3], 3);
    dm_ring_destroy(ring);
}

DM_TEST(peek_is_contiguous_at_wrap)
{
    struct dm_ring *ring = dm_ring_create(4);
    const struct dm_event *batch;
    uint64_t got[8];

    for (uint64_t i = 0; i < 3; i++) {
        struct dm_event ev = ev_with(i);
        dm_ring_try_push(ring, &ev);
    }
    DM_ASSERT_EQ_U64(drain(ring, got, 8), 3);
    for (uint64_t i = 3; i < 6; i++) {
        struct dm_event ev = ev_with(i);
        dm_ring_try_push(ring, &ev);
    }
    /* Slot 3 holds event 3; events 4 and 5 wrapped to slots 0 and 1. */
    DM_ASSERT_EQ_U64(dm_ring_peek(ring, &batch, 100), 1);
    DM_ASSERT_EQ_U64(batch[0].byte_offset, 3);
    dm_ring_release(ring, 1);
    DM_ASSERT_EQ_U64(dm_ring_peek(ring, &batch, 100), 2);
    DM_ASSERT_EQ_U64(batch[1].byte_offset, 5);
    dm_ring_release(ring, 2);
    dm_ring_destroy(ring);
}

DM_TEST(drained_only_after_close)
{
    struct dm_ring *ring = dm_ring_create(4);
    struct dm_event ev = ev_with(1);
    uint64_t got[4];

    DM_ASSERT(!dm_ring_drained(ring));
    dm_ring_try_push(ring, &ev);
    dm_ring_close(ring);
    DM_ASSERT(!dm_ring_drained(ring));
    DM_ASSERT_EQ_U64(drain(ring, got, 4), 1);
    DM_ASSERT(dm_ring_drained(ring));
    dm_ring_destroy(ring);
}

DM_TEST(push_wait_gives_up_on_stop)
{
    struct dm_ring *ring = dm_ring_create(2);
    struct dm_event ev = ev_with(1);
    volatile int stop = 1;

    DM_ASSERT(dm_ring_push_wait(ring, &ev, &stop) == 1);
    DM_ASSERT(dm_ring_push_wait(ring, &ev, &stop) == 1);
    /* Full, and stop is set: returns without queuing or counting a drop. */
    DM_ASSERT(dm_ring_push_wait(ring, &ev, &stop) == 0);
    DM_ASSERT_EQ_U64(dm_ring_dropped(ring), 0);
    dm_ring_destroy(ring);
}

/* ---- two threads -------------------------------------------------------- */

#define STRESS_EVENTS 2000000u

struct stress {
    struct dm_ring *ring;
    int wait;            /* 1: push_wait (replay), 0: try_push (live) */
    uint64_t accepted;
};

static void producer(void *arg)
{
    struct stress *s = arg;

    for (uint64_t i = 0; i < STRESS_EVENTS; i++) {
        struct dm_event ev = ev_with(i);

        ev.time_ns = i * 7;        /* a second field to catch torn slots */
        ev.pid = (uint32_t)(i ^ 0x5a5a5a5au);
        if (s->wait)
            s->accepted += (uint64_t)dm_ring_push_wait(s->ring, &ev, NULL);
        else
            s->accepted += (uint64_t)dm_ring_try_push(s->ring, &ev);
        if ((i & 0xFFFF) == 0)
            dm_yield();
    }
    dm_ring_close(s->ring);
}

/* Consumer on this thread: every event in increasing order, intact; the
 * count seen plus the drops equals what was produced. */
static void run_stress(int wait)
{
    struct stress s = {dm_ring_create(1024), wait, 0};
    dm_thread *t;
    uint64_t seen = 0, last = 0;
    int first = 1, bad = 0;

    DM_ASSERT(s.ring != NULL);
    DM_ASSERT(dm_thread_start(&t, producer, &s) == 0);
    while (!dm_ring_drained(s.ring)) {
        const struct dm_event *b;
        size_t n = dm_ring_peek(s.ring, &b, 64);

        for (size_t i = 0; i < n; i++) {
            uint64_t v = b[i].byte_offset;
            if ((!first && v <= last) || b[i].time_ns != v * 7 ||
                b[i].pid != (uint32_t)(v ^ 0x5a5a5a5au))
                bad++;
            first = 0;
            last = v;
        }
        seen += n;
        dm_ring_release(s.ring, n);
        if (n == 0)
            dm_yield();
    }
    dm_thread_join(t);
    DM_ASSERT_EQ_INT(bad, 0);
    DM_ASSERT_EQ_U64(seen, s.accepted);
    DM_ASSERT_EQ_U64(seen + dm_ring_dropped(s.ring), STRESS_EVENTS);
    if (wait)
        DM_ASSERT_EQ_U64(dm_ring_dropped(s.ring), 0);
    dm_ring_destroy(s.ring);
}

DM_TEST(stress_two_threads_drop_mode)
{
    run_stress(0);
}

DM_TEST(stress_two_threads_wait_mode)
{
    run_stress(1);
}

const struct dmt_case dm_suite_ring[] = {
    {"capacity_rounds_up", capacity_rounds_up},
    {"fifo_and_wraparound", fifo_and_wraparound},
    {"full_ring_drops_and_counts", full_ring_drops_and_counts},
    {"peek_is_contiguous_at_wrap", peek_is_contiguous_at_wrap},
    {"drained_only_after_close", drained_only_after_close},
    {"push_wait_gives_up_on_stop", push_wait_gives_up_on_stop},
    {"stress_two_threads_drop_mode", stress_two_threads_drop_mode},
    {"stress_two_threads_wait_mode", stress_two_threads_wait_mode},
    {NULL, NULL},
};
