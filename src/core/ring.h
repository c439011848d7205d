/*
 * ring.h - a bounded single-producer/single-consumer queue of dm_event.
 *
 * Threading contract:
 *   - Exactly one producer thread calls dm_ring_try_push / dm_ring_push_wait
 *     / dm_ring_close. Exactly one consumer thread calls dm_ring_peek /
 *     dm_ring_release / dm_ring_drained. dm_ring_dropped and dm_ring_pushed
 *     may be read from any thread.
 *   - head (next slot to write) is written only by the producer, tail (next
 *     slot to read) only by the consumer. The producer stores the event, then
 *     publishes head with a release store; the consumer reads head with an
 *     acquire load, so every byte of a slot it sees is the producer's. The
 *     consumer frees slots by a release store of tail; the producer's
 *     acquire load of tail means it never overwrites a slot still being read.
 *   - Each side caches the other's index and re-reads it only when the cache
 *     says full (producer) or empty (consumer), so the shared cache lines
 *     move only when needed.
 *   - head and tail live on separate cache lines to avoid false sharing.
 * Slots are allocated once at creation; nothing allocates per event.
 */
#ifndef DM_RING_H
#define DM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

struct dm_ring;

/* capacity is rounded up to a power of two; returns NULL when out of memory. */
struct dm_ring *dm_ring_create(size_t capacity);
void dm_ring_destroy(struct dm_ring *ring);
size_t dm_ring_capacity(const struct dm_ring *ring);

/* Producer. Returns 1 if queued, 0 if the ring was full (the event is
 * dropped and counted). Never blocks. */
int dm_ring_try_push(struct dm_ring *ring, const struct dm_event *ev);

/* Producer. Waits for room unless *stop becomes nonzero (then returns 0
 * without queuing or counting). Returns 1 if queued. */
int dm_ring_push_wait(struct dm_ring *ring, const struct dm_event *ev,
                      volatile int *stop);

/* Producer: no more events will come. */
void dm_ring_close(struct dm_ring *ring);

/* Consumer. Points *first at up to max contiguous ready events and returns
 * their count (0 if none yet). The slots stay owned by the consumer until
 * dm_ring_release(n). */
size_t dm_ring_peek(struct dm_ring *ring, const struct dm_event **first,
                    size_t max);
void dm_ring_release(struct dm_ring *ring, size_t n);

/* Consumer: nonzero when the producer closed the ring and it is empty. */
int dm_ring_drained(struct dm_ring *ring);

/* Events the producer dropped because the ring was full. Any thread. */
uint64_t dm_ring_dropped(const struct dm_ring *ring);
/* Events ever pushed. Any thread. */
uint64_t dm_ring_pushed(const struct dm_ring *ring);

#endif /* DM_RING_H */
