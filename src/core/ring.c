/*
 * ring.c - the single-producer/single-consumer event ring. The contract and
 * the memory orders are explained in ring.h.
 */
#include <stdlib.h>
#include <string.h>

#include "core/ring.h"
#include "platform/platform.h"

/* 64 bytes: the cache line size of every x86 and most ARM cores. */
#define DM_CACHE_LINE 64

struct dm_ring {
    struct dm_event *slots;
    uint64_t mask;
    /* Producer's line: its index, its cached copy of tail, its counters. */
    volatile uint64_t head;
    uint64_t tail_cache;
    volatile uint64_t dropped;
    volatile int closed;
    char pad1[DM_CACHE_LINE];
    /* Consumer's line. */
    volatile uint64_t tail;
    uint64_t head_cache;
    char pad2[DM_CACHE_LINE];
};

struct dm_ring *dm_ring_create(size_t capacity)
{
    struct dm_ring *ring;
    size_t n = 2;

    while (n < capacity)
        n <<= 1;
    ring = calloc(1, sizeof *ring);
    if (ring == NULL)
        return NULL;
    ring->slots = malloc(n * sizeof *ring->slots);
    if (ring->slots == NULL) {
        free(ring);
        return NULL;
    }
    ring->mask = n - 1;
    return ring;
}

void dm_ring_destroy(struct dm_ring *ring)
{
    if (ring == NULL)
        return;
    free(ring->slots);
    free(ring);
}

size_t dm_ring_capacity(const struct dm_ring *ring)
{
    return (size_t)ring->mask + 1;
}

/* Producer: is there room for one more? Re-reads tail only when the cached
 * value says the ring is full. */
static int has_room(struct dm_ring *ring, uint64_t head)
{
    if (head - ring->tail_cache <= ring->mask)
        return 1;
    ring->tail_cache = dm_atomic_load_acquire(&ring->tail);
    return head - ring->tail_cache <= ring->mask;
}

static void publish(struct dm_ring *ring, uint64_t head, const struct dm_event *ev)
{
    memcpy(&ring->slots[head & ring->mask], ev, sizeof *ev);
    dm_atomic_store_release(&ring->head, head + 1);
}

int dm_ring_try_push(struct dm_ring *ring, const struct dm_event *ev)
{
    uint64_t head = dm_atomic_load_relaxed(&ring->head);

    if (!has_room(ring, head)) {
        dm_atomic_store_release(&ring->dropped,
                                dm_atomic_load_relaxed(&ring->dropped) + 1);
        return 0;
    }
    publish(ring, head, ev);
    return 1;
}

int dm_ring_push_wait(struct dm_ring *ring, const struct dm_event *ev,
                      volatile int *stop)
{
    uint64_t head = dm_atomic_load_relaxed(&ring->head);
    unsigned spins = 0;

    while (!has_room(ring, head)) {
        if (stop != NULL && dm_atomic_load_int(stop))
            return 0;
        /* Spin briefly (the consumer is usually mid-batch), then sleep so a
         * stalled reader such as `| less` costs no CPU. */
        if (++spins < 64)
            dm_yield();
        else
            dm_sleep_ms(1);
    }
    publish(ring, head, ev);
    return 1;
}

void dm_ring_close(struct dm_ring *ring)
{
    dm_atomic_store_int(&ring->closed, 1);
}

size_t dm_ring_peek(struct dm_ring *ring, const struct dm_event **first,
                    size_t max)
{
    uint64_t tail = dm_atomic_load_relaxed(&ring->tail);
    uint64_t ready, to_end;

    if (ring->head_cache == tail)
        ring->head_cache = dm_atomic_load_acquire(&ring->head);
    ready = ring->head_cache - tail;
    if (ready == 0)
        return 0;
    /* Contiguous slots only: the caller comes back for the wrapped part. */
    to_end = ring->mask + 1 - (tail & ring->mask);
    if (ready > to_end)
        ready = to_end;
    if (ready > max)
        ready = max;
    *first = &ring->slots[tail & ring->mask];
    return (size_t)ready;
}

void dm_ring_release(struct dm_ring *ring, size_t n)
{
    dm_atomic_store_release(&ring->tail, dm_atomic_load_relaxed(&ring->tail) + n);
}

int dm_ring_drained(struct dm_ring *ring)
{
    /* Read closed before head: once closed is seen, head is final. */
    if (!dm_atomic_load_int(&ring->closed))
        return 0;
    return dm_atomic_load_acquire(&ring->head) == dm_atomic_load_relaxed(&ring->tail);
}

uint64_t dm_ring_dropped(const struct dm_ring *ring)
{
    return dm_atomic_load_acquire(&ring->dropped);
}

/* head is the count of events ever published: it only grows. */
uint64_t dm_ring_pushed(const struct dm_ring *ring)
{
    return dm_atomic_load_acquire(&ring->head);
}
