/*
 * ring.h - a bounded single-producer/single-consumer queue of dm_events,
 * each stored as a variable-length record: the event's fixed numbers
 * (DM_EVENT_FIXED_BYTES) and its names only as long as they are. A Linux
 * event takes 96 to 104 bytes (a short cgroup path: each byte of a longer
 * one adds a byte) and a Windows one with a file path about 150 to 170
 * (the sample traces' averages: 146 and 166), where a fixed slot with room
 * for the longest names takes 728; the same memory so holds 4.4 to 7.6
 * times the events of a burst.
 *
 * Threading contract:
 *   - Exactly one producer thread calls dm_ring_try_push / dm_ring_push_wait
 *     / dm_ring_close. Exactly one consumer thread calls dm_ring_peek /
 *     dm_ring_release / dm_ring_drained. dm_ring_dropped and dm_ring_pushed
 *     may be read from any thread.
 *   - head (bytes ever written) is written only by the producer, tail (bytes
 *     ever freed) only by the consumer. The producer writes a whole record,
 *     names included, then publishes head with a release store; the consumer
 *     reads head with an acquire load, so every byte of a record it sees is
 *     the producer's. The consumer frees records by a release store of tail;
 *     the producer's acquire load of tail means it never overwrites a record
 *     still being read.
 *   - The events dm_ring_peek hands out point into the ring (their names
 *     too): they stay valid until the consumer's dm_ring_release, and the
 *     producer cannot reuse those bytes before it.
 *   - Each side caches the other's index and re-reads it only when the cache
 *     says full (producer) or empty (consumer), so the shared cache lines
 *     move only when needed.
 *   - head and tail live on separate cache lines to avoid false sharing.
 *
 * Memory: allocated once at creation, nothing per event.
 */
#ifndef DM_RING_H
#define DM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "platform/platform.h"

/* The largest record: its 8-byte head, DM_EVENT_FIXED_BYTES and the five
 * longest names with their NULs (32 + 32 + 264 + 64 + 256), padded to 8. A
 * ring of n * DM_RING_RECORD_MAX bytes holds at least n events. */
#define DM_RING_RECORD_MAX 728u
/* The smallest ring: room for five of the largest records, and for forty
 * of the common ones without a file (ring.h's sizes above). */
#define DM_RING_MIN_BYTES 4096u
/* The pipeline's rings. Live: 16 MiB holds about 100,000 to 115,000
 * Windows events with a file path (146 to 166 bytes each) or 160,000 to
 * 175,000 Linux ones (96 to 104 bytes), so at 250k events/s a live source
 * can run 0.4 to 0.7 s ahead of a stalled printer before anything is
 * dropped. Replay never drops (the sink waits),
 * so its ring only has to let the two threads work in parallel: 1 MiB,
 * several thousand events. bench_callback times the live path with the
 * live ring: a ring twice as large measured 3x slower per record on this
 * shared host, run to run, as its cold lines left the host's cache. */
#define DM_RING_LIVE_BYTES (16u * 1024u * 1024u)
#define DM_RING_REPLAY_BYTES (1024u * 1024u)

struct dm_ring;

/* bytes is rounded up to a power of two, at least DM_RING_MIN_BYTES;
 * returns NULL when out of memory. */
struct dm_ring *dm_ring_create(size_t bytes);
void dm_ring_destroy(struct dm_ring *ring);
/* Bytes of record space. */
size_t dm_ring_capacity(const struct dm_ring *ring);

/* Producer. Copies ev and its names in. Returns 1 if queued, 0 if the ring
 * was full (the event is dropped and counted). Never blocks. */
int dm_ring_try_push(struct dm_ring *ring, const struct dm_event *ev);

/* Producer. Waits for room unless *stop becomes nonzero (then returns 0
 * without queuing or counting). Returns 1 if queued. */
int dm_ring_push_wait(struct dm_ring *ring, const struct dm_event *ev,
                      volatile int *stop);

/* Producer: no more events will come. */
void dm_ring_close(struct dm_ring *ring);

/* Consumer. Fills out[0..] with up to max of the next events, in order, and
 * returns their count (0 if none yet). Their names point into the ring:
 * valid until dm_ring_release. Call dm_ring_release before the next peek. */
size_t dm_ring_peek(struct dm_ring *ring, struct dm_event *out, size_t max);
/* Consumer: frees the events the last dm_ring_peek returned. */
void dm_ring_release(struct dm_ring *ring);

/* Consumer: nonzero when the producer closed the ring and it is empty. */
int dm_ring_drained(struct dm_ring *ring);

/*
 * Sleeping while the ring is empty, on a waiter (platform.h) given before
 * either thread starts. The consumer says it sleeps (a flag on a cache line
 * of its own), looks at head once more, and waits; a push that finds the
 * flag set clears it and wakes the waiter, and dm_ring_close always does.
 *
 * Why no wake-up is lost. Each side stores one location and then loads the
 * other's: the push stores head and loads the flag, the consumer stores the
 * flag and loads head. Without a full barrier between the store and the
 * load on both sides, both loads may see the old values (x86 lets a load
 * go before an earlier store to another location: Intel SDM Vol. 3A
 * 8.2.3.4), and the consumer would sleep its whole wait with an event in
 * the ring (ring test wake_up_never_missed). A full barrier per push would
 * cost the live path a drained store buffer per event, and a barrier only
 * for the push that finds the ring empty is not enough: its view of tail
 * can be as old as its view of the flag, and the consumer can empty the
 * ring and go to sleep between the push's loads and its store reaching
 * memory. So the fence is asymmetric: the push has only a compiler fence
 * between its store of head and its load of the flag; the consumer, after
 * its store of the flag, calls dm_fence_all_threads, which makes every
 * other thread pass a full barrier. That barrier falls at some point of
 * the producer's program. If that point is before a push's store of head,
 * the push's load of the flag comes after it too and sees the flag set
 * (stored before the call), so the push wakes the consumer. If it is after
 * the store, the store reached memory before the call returned, and the
 * consumer's load of head that follows the call sees the event. Either
 * way the event is taken at once.
 *
 * The heavy fence costs a system call and an interrupt per processor
 * running the producer, so it is made only for a wait longer than
 * DM_RING_SHORT_WAIT_MS: a shorter one (the printer's wait for its next
 * flush) may miss a wake-up, which then costs at most that wait, well
 * inside the line bound. The printer waits long only after a flush, and
 * flushes at most 100 times a second (printer.c), so the heavy fence runs
 * at most about that often. Where the system has no such fence
 * (dm_fence_all_threads fails when the ring is made), every push uses
 * dm_atomic_fence instead. Without a waiter, dm_ring_wait sleeps 1 ms.
 */
#define DM_RING_SHORT_WAIT_MS 10u
void dm_ring_set_waiter(struct dm_ring *ring, dm_waiter *w);
/* Consumer: sleep until the ring may hold events or was closed, or ms
 * passed; watch as dm_waiter_wait. Returns what dm_waiter_wait does (1
 * also when events were already there). */
int dm_ring_wait(struct dm_ring *ring, unsigned ms, FILE *watch);

/* Events the producer dropped because the ring was full. Any thread. */
uint64_t dm_ring_dropped(const struct dm_ring *ring);
/* Events ever pushed. Any thread. */
uint64_t dm_ring_pushed(const struct dm_ring *ring);

#endif /* DM_RING_H */
