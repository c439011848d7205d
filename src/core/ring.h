/*
 * ring.h - a bounded single-producer/single-consumer queue of dm_events,
 * each stored as a variable-length record: the event's names only as long
 * as they are, then its fixed numbers (DM_EVENT_FIXED_BYTES). A Linux
 * event takes 96 to 104 bytes (a short cgroup path: each byte of a longer
 * one adds a byte) and a Windows one with a file path about 150 to 170
 * (the sample traces' averages: 146 and 166), where a fixed slot with room
 * for the longest names takes 728; the same memory so holds 4.4 to 7.6
 * times the events of a burst.
 *
 * Threading contract:
 *   - Exactly one producer thread calls dm_ring_try_push / dm_ring_push_wait
 *     / dm_ring_close. Exactly one consumer thread calls dm_ring_peek /
 *     dm_ring_release / dm_ring_drained / dm_ring_wait. dm_ring_dropped and
 *     dm_ring_pushed may be read from any thread.
 *   - head (bytes ever written) is written only by the producer, tail (bytes
 *     ever freed) only by the consumer; both only grow (2^64 bytes do not
 *     wrap in any run). Each is a naturally aligned 64-bit atomic at the
 *     start of a cache line of its own (atomics.h, ring.c).
 *   - The events dm_ring_peek hands out point into the ring (their names
 *     too): they stay valid until the consumer's dm_ring_release, and the
 *     producer cannot reuse those bytes before it.
 *   - Each side caches the other's index and re-reads it only when the cache
 *     says full (producer) or empty (consumer), so the shared cache lines
 *     move only when needed. A cached index is older than the real one,
 *     never newer, so it only ever says less room or fewer records.
 *
 * What a name's reader may touch. A handed-out name is read with the C
 * library's string functions (strcmp, strlen, printf), which read past the
 * NUL: a word or a vector at a time, to the end of an aligned block of up
 * to 64 bytes. Some read the same bytes twice and trust them to be the
 * same: glibc 2.36's i386 strcmp (__strcmp_sse4_2) loads the first 16
 * bytes, and when they differ from the other string's after the NUL it
 * loads the first word again for a zero-byte test; if those bytes changed
 * in between, the test misses the NUL, the comparison runs on past it, and
 * two equal names compare unequal. So every name handed out is followed,
 * in its own record, by at least DM_RING_NAME_TAIL bytes that do not
 * change while it is handed out: the names come first and the numbers
 * last. (When the numbers came first, the last name could end on the
 * record's last byte, and the bytes after it were the next record's head,
 * which the producer may be writing at that moment: the 32-bit drop-mode
 * stress test saw such names compare unequal in 12 of 100 runs.)
 *
 * Memory orders: which release pairs with which acquire, and why the
 * hardware keeps them. "x86" is TSO (Intel SDM Vol. 3A 8.2.2): loads are
 * not reordered with loads, stores not with stores (the stores of a REP
 * MOVS/STOS that memcpy may use are ordered before a later store of
 * another location, 8.2.4), and a store is not reordered with an earlier
 * load; only a later load may pass an earlier store to another location
 * (8.2.3.4). There acquire loads and release stores are plain MOVs (or
 * FILD/FISTP and MOVQ for a 64-bit value on i386) that the compiler may
 * not move. "ARM64" is weakly ordered: a release store is STLR, which is
 * ordered after every earlier load and store of its thread, and an acquire
 * load is LDAR (or LDAPR), ordered before every later one (Arm ARM
 * B2.3, "Load-Acquire, Store-Release"); MSVC's Interlocked calls there
 * are full barriers (DMB ISH), stronger still.
 *   1. Publication. The producer writes a whole record, names included
 *      (plain stores, memcpy), then dm_atomic_store_release(head). The
 *      consumer's dm_atomic_load_acquire(head) (dm_ring_peek when its cache
 *      is used up, dm_ring_wait, dm_ring_drained) that reads that value, or
 *      a later one (head has one writer, so a later value was stored after
 *      the earlier record in the producer's order), synchronizes with it:
 *      every byte of every record below the value it read is the
 *      producer's. x86: the record's stores are not reordered with the
 *      later store of head, and the consumer's loads of the record are not
 *      reordered with its earlier load of head. ARM64: STLR makes the
 *      record's stores visible first; LDAR keeps the record's loads after.
 *   2. Freeing. The consumer reads the records it was handed (plain loads,
 *      its string functions), then dm_ring_release stores tail with
 *      release. The producer's dm_atomic_load_acquire(tail), made when its
 *      cached tail says full, pairs with it: its stores into the freed
 *      bytes come after the consumer's loads of them. x86: a store is not
 *      reordered with an earlier load (8.2.3.3 on the consumer's side), nor
 *      a later store with an earlier load (the producer's). ARM64: STLR
 *      orders the consumer's earlier loads before the store of tail; LDAR
 *      orders the producer's later stores after its load of tail.
 *   3. The counters. pushed and dropped have one writer, the producer
 *      (relaxed load, add, release store: no read-modify-write needed);
 *      any thread reads them with acquire and sees a value they had.
 *   4. The end. dm_ring_close stores closed with release after the last
 *      push's release store of head; dm_ring_drained loads closed with
 *      acquire and then head with acquire, so once it sees closed it sees
 *      the final head. x86: two stores, two loads, each pair in order.
 *      ARM64: STLR after STLR and LDAR before LDAR keep program order.
 *   5. The wake-up (below): a store of one location followed by a load of
 *      another, on each side, which release and acquire do not order (x86
 *      8.2.3.4; on ARM64 a later plain or LDAPR load may pass an earlier
 *      STLR to another location; only LDAR may not, and nothing here
 *      relies on the compiler choosing LDAR). The full fences: the consumer's
 *      dm_atomic_fence (MFENCE or a locked instruction on x86, DMB ISH on
 *      ARM64) pairs with either the producer's dm_atomic_fence (where there
 *      is no heavy fence) or the barrier that dm_fence_all_threads runs in
 *      the producer's thread (membarrier's IPI runs smp_mb on each CPU
 *      running a thread of the process, FlushProcessWriteBuffers likewise:
 *      a locked instruction on x86, DMB ISH on ARM64). The argument below
 *      only uses "a full barrier at some point of the producer's program",
 *      so it holds on both.
 *
 * Memory: allocated once at creation (dm_aligned_alloc: the ring's cache
 * lines need more alignment than malloc promises), nothing per event.
 */
#ifndef DM_RING_H
#define DM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "platform/platform.h"

/* The largest record: its 8-byte head, the five longest names with their
 * NULs (32 + 32 + 264 + 64 + 256) padded to 8, and DM_EVENT_FIXED_BYTES. A
 * ring of n * DM_RING_RECORD_MAX bytes holds at least n events. */
#define DM_RING_RECORD_MAX 728u
/* The smallest ring: room for five of the largest records, and for forty
 * of the common ones without a file (ring.h's sizes above). */
#define DM_RING_MIN_BYTES 4096u
/* Bytes after a handed-out name's NUL that belong to its record and do not
 * change while it is handed out (above): the longest aligned block a C
 * library's string function reads, a 64-byte AVX-512 vector. The numbers
 * at a record's end (DM_EVENT_FIXED_BYTES, 72) give at least this. */
#define DM_RING_NAME_TAIL 64u
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

/* Producer. Copies ev and its names in: with DM_EV_NAME_LENS the lengths
 * ev gives (each held below its DM_*_MAX), else each name measured.
 * Returns 1 if queued, 0 if the ring was full (the event is dropped and
 * counted). Never blocks. */
int dm_ring_try_push(struct dm_ring *ring, const struct dm_event *ev);

/* Producer. Waits for room unless *stop becomes nonzero (then returns 0
 * without queuing or counting). Returns 1 if queued. */
int dm_ring_push_wait(struct dm_ring *ring, const struct dm_event *ev,
                      volatile int *stop);

/* Producer: no more events will come. */
void dm_ring_close(struct dm_ring *ring);

/* Consumer. Fills out[0..] with up to max of the next events, in order, and
 * returns their count (0 if none yet). Their names point into the ring:
 * valid until dm_ring_release; each carries its names' lengths
 * (DM_EV_NAME_LENS). Call dm_ring_release before the next peek. */
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
