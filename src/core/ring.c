/*
 * ring.c - the single-producer/single-consumer event ring. The contract and
 * the memory orders are explained in ring.h.
 *
 * A record is a rec_head, the disk name, the process, the file, the
 * partition and the cgroup, each NUL-terminated, padding to 8 bytes, and
 * last the event's DM_EVENT_FIXED_BYTES. The numbers go last so that the
 * bytes after every name's NUL, as far as a C library's string functions
 * read (ring.h, "What a name's reader may touch"), belong to the same
 * record, which does not change while it is handed out.
 * A record never wraps: when it does not fit before the end of the buffer,
 * the producer fills the rest with a skip record and starts at offset 0.
 * The skip and the record after it are published together, so the consumer
 * never sees a skip alone.
 */
#include <string.h>

#include "core/ring.h"
#include "platform/platform.h"

/* 64 bytes: the cache line size of every x86 and most ARM cores. */
#define DM_CACHE_LINE 64
#define REC_ALIGN 8u
/* rec_head.file_len of a skip record: longer than any file name. */
#define REC_SKIP 0xFFFFu

_Static_assert(offsetof(struct dm_event, disk_name) == DM_EVENT_FIXED_BYTES,
               "dm_event: the numbers must come first, in DM_EVENT_FIXED_BYTES");
_Static_assert(DM_EVENT_FIXED_BYTES % REC_ALIGN == 0 &&
                   DM_EVENT_FIXED_BYTES >= DM_RING_NAME_TAIL,
               "the numbers end a record on its alignment and cover a name's tail");
_Static_assert(DM_FILE_MAX < REC_SKIP && DM_PROCESS_MAX <= 256 &&
                   DM_DISK_NAME_MAX <= 256 && DM_PARTITION_MAX <= 256 &&
                   DM_CGROUP_MAX <= 256,
               "name lengths must fit rec_head");

/* Eight bytes. bytes is 16 bits: a record is at most DM_RING_RECORD_MAX,
 * and a skip is shorter than the record that did not fit after it. */
struct rec_head {
    uint16_t bytes;        /* the whole record, padded */
    uint16_t file_len;     /* without the NUL; REC_SKIP: a skip record */
    uint8_t process_len;
    uint8_t disk_name_len;
    uint8_t partition_len;
    uint8_t cgroup_len;
};

/* What every record has besides its names: its head and, at its end, the
 * numbers. */
#define REC_FIXED (sizeof(struct rec_head) + DM_EVENT_FIXED_BYTES)
_Static_assert(((REC_FIXED + DM_DISK_NAME_MAX + DM_PROCESS_MAX + DM_FILE_MAX +
                 DM_PARTITION_MAX + DM_CGROUP_MAX + REC_ALIGN - 1) &
                ~(REC_ALIGN - 1)) == DM_RING_RECORD_MAX,
               "DM_RING_RECORD_MAX is the largest record");
_Static_assert(DM_RING_RECORD_MAX <= 0xFFFFu, "a record's size fits rec_head.bytes");

/*
 * Each side's shared index starts a cache line of its own, with what only
 * that side writes, so that the two lines move between the processors only
 * when a side must look at the other's index (ring.h). Every index, counter
 * and flag is a naturally aligned atomic (atomics.h): the alignment holds
 * because the ring is allocated at _Alignof(struct dm_ring)
 * (dm_aligned_alloc), and is checked below.
 */
struct dm_ring {
    /* Set at creation, before either thread starts; read-only after. */
    uint8_t *data;
    uint64_t mask;         /* bytes - 1 */
    dm_waiter *waiter;
    /* No heavy fence on this system (ring.h): every push fences. */
    int fence_each_push;
    /* Producer's line: its index, its cached copy of tail, its counters. */
    _Alignas(DM_CACHE_LINE) dm_atomic_u64 head;
    uint64_t tail_cache;
    dm_atomic_u64 pushed;
    dm_atomic_u64 dropped;
    volatile int closed;
    /* Consumer's line. */
    _Alignas(DM_CACHE_LINE) dm_atomic_u64 tail;
    uint64_t head_cache;
    uint64_t read_pos;     /* end of the records the last peek handed out */
    /* The consumer sleeps on waiter (ring.h): read by every push, written
     * only when the consumer goes to sleep, so it stays in the producer's
     * cache while events flow. */
    _Alignas(DM_CACHE_LINE) volatile int consumer_asleep;
};

_Static_assert(_Alignof(struct dm_ring) == DM_CACHE_LINE &&
                   offsetof(struct dm_ring, head) % DM_CACHE_LINE == 0 &&
                   offsetof(struct dm_ring, tail) % DM_CACHE_LINE == 0 &&
                   offsetof(struct dm_ring, consumer_asleep) % DM_CACHE_LINE == 0 &&
                   offsetof(struct dm_ring, closed) < offsetof(struct dm_ring, tail) &&
                   offsetof(struct dm_ring, read_pos) + sizeof(uint64_t) <=
                       offsetof(struct dm_ring, consumer_asleep),
               "dm_ring: each side's fields on cache lines of their own");
_Static_assert(offsetof(struct dm_ring, pushed) % 8 == 0 &&
                   offsetof(struct dm_ring, dropped) % 8 == 0 &&
                   offsetof(struct dm_ring, closed) % _Alignof(int) == 0 &&
                   offsetof(struct dm_ring, consumer_asleep) % _Alignof(int) == 0,
               "dm_ring: every shared value naturally aligned");

struct dm_ring *dm_ring_create(size_t bytes)
{
    struct dm_ring *ring;
    size_t n = DM_RING_MIN_BYTES;

    while (n < bytes)
        n <<= 1;
    /* malloc promises 16 bytes of alignment at most (8 on 32-bit Windows):
     * the cache lines above need the ring's own. */
    ring = dm_aligned_alloc(_Alignof(struct dm_ring), sizeof *ring);
    if (ring == NULL)
        return NULL;
    memset(ring, 0, sizeof *ring);
    ring->data = dm_aligned_alloc(DM_CACHE_LINE, n);
    if (ring->data == NULL) {
        dm_aligned_free(ring);
        return NULL;
    }
    ring->mask = n - 1;
    ring->fence_each_push = dm_fence_all_threads() != 0;
    return ring;
}

void dm_ring_destroy(struct dm_ring *ring)
{
    if (ring == NULL)
        return;
    dm_aligned_free(ring->data);
    dm_aligned_free(ring);
}

size_t dm_ring_capacity(const struct dm_ring *ring)
{
    return (size_t)ring->mask + 1;
}

/* A name's length held below its maximum, whether the source gave it
 * (DM_EV_NAME_LENS) or the ring measured it: the source's contract says it
 * never is that long, and the record must not outgrow DM_RING_RECORD_MAX. */
static inline size_t given_len(size_t n, size_t max)
{
    return n < max ? n : max - 1;
}

/* A name's length without its NUL. Empty names are common (no disk name on
 * Windows, no file on Linux): no call for those. */
static inline size_t name_len(const char *s, size_t max)
{
    return s[0] == '\0' ? 0 : given_len(strlen(s), max);
}

/* Copy a name and its NUL; returns where the next one goes. */
static inline uint8_t *put_name(uint8_t *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    p[n] = '\0';
    return p + n + 1;
}

/*
 * The producer's one way in. Measures the record, waits for room (wait) or
 * counts a drop, then writes the record, names included, and publishes it.
 */
static inline int push(struct dm_ring *ring, const struct dm_event *ev,
                       int wait, volatile int *stop)
{
    uint64_t head = dm_atomic_load_relaxed(&ring->head), size = ring->mask + 1;
    uint64_t offset = head & ring->mask, skip, need;
    struct rec_head h;
    unsigned spins = 0;
    uint8_t *p;

    if (ev->flags & DM_EV_NAME_LENS) {
        h.disk_name_len = (uint8_t)given_len(ev->disk_name_len, DM_DISK_NAME_MAX);
        h.process_len = (uint8_t)given_len(ev->process_len, DM_PROCESS_MAX);
        h.file_len = (uint16_t)given_len(ev->file_len, DM_FILE_MAX);
        h.partition_len = (uint8_t)given_len(ev->partition_len, DM_PARTITION_MAX);
        h.cgroup_len = (uint8_t)given_len(ev->cgroup_len, DM_CGROUP_MAX);
    } else {
        h.disk_name_len = (uint8_t)name_len(ev->disk_name, DM_DISK_NAME_MAX);
        h.process_len = (uint8_t)name_len(ev->process, DM_PROCESS_MAX);
        h.file_len = (uint16_t)name_len(ev->file, DM_FILE_MAX);
        h.partition_len = (uint8_t)name_len(ev->partition, DM_PARTITION_MAX);
        h.cgroup_len = (uint8_t)name_len(ev->cgroup, DM_CGROUP_MAX);
    }
    h.bytes = (uint16_t)((REC_FIXED + h.disk_name_len + h.process_len + h.file_len +
                          h.partition_len + h.cgroup_len + 5u + REC_ALIGN - 1) &
                         ~(size_t)(REC_ALIGN - 1));
    /* A record never wraps: what is left before the end becomes a skip. */
    skip = h.bytes > size - offset ? size - offset : 0;
    need = head + skip + h.bytes;
    /* Re-read tail only when the cached value says the ring is full. */
    while (need - ring->tail_cache > size) {
        ring->tail_cache = dm_atomic_load_acquire(&ring->tail);
        if (need - ring->tail_cache <= size)
            break;
        if (!wait) {
            dm_atomic_store_release(&ring->dropped,
                                    dm_atomic_load_relaxed(&ring->dropped) + 1);
            return 0;
        }
        if (stop != NULL && dm_atomic_load_int(stop))
            return 0;
        /* Spin briefly (the consumer is usually mid-batch), then sleep so a
         * stalled reader such as `| less` costs no CPU. */
        if (++spins < 64)
            dm_yield();
        else
            dm_sleep_ms(1);
    }
    if (skip != 0) {
        struct rec_head sh = {(uint16_t)skip, REC_SKIP, 0, 0, 0, 0};

        memcpy(ring->data + offset, &sh, sizeof sh);
        offset = 0;
    }
    p = ring->data + offset;
    memcpy(p, &h, sizeof h);
    memcpy(p + h.bytes - DM_EVENT_FIXED_BYTES, ev, DM_EVENT_FIXED_BYTES);
    p = put_name(p + sizeof h, ev->disk_name, h.disk_name_len);
    p = put_name(p, ev->process, h.process_len);
    p = put_name(p, ev->file, h.file_len);
    p = put_name(p, ev->partition, h.partition_len);
    put_name(p, ev->cgroup, h.cgroup_len);
    dm_atomic_store_release(&ring->pushed, dm_atomic_load_relaxed(&ring->pushed) + 1);
    dm_atomic_store_release(&ring->head, need);
    /* Between the store of head and the load of the flag: the light side
     * of the asymmetric fence (ring.h), or a full one where there is none. */
    if (ring->fence_each_push)
        dm_atomic_fence();
    else
        dm_compiler_fence();
    if (dm_atomic_load_int(&ring->consumer_asleep) &&
        dm_atomic_exchange_int(&ring->consumer_asleep, 0))
        dm_waiter_wake(ring->waiter);
    return 1;
}

int dm_ring_try_push(struct dm_ring *ring, const struct dm_event *ev)
{
    return push(ring, ev, 0, NULL);
}

int dm_ring_push_wait(struct dm_ring *ring, const struct dm_event *ev,
                      volatile int *stop)
{
    return push(ring, ev, 1, stop);
}

void dm_ring_close(struct dm_ring *ring)
{
    dm_atomic_store_int(&ring->closed, 1);
    if (ring->waiter != NULL)
        dm_waiter_wake(ring->waiter);
}

void dm_ring_set_waiter(struct dm_ring *ring, dm_waiter *w)
{
    ring->waiter = w;
}

int dm_ring_wait(struct dm_ring *ring, unsigned ms, FILE *watch)
{
    int rc;

    if (ring->waiter == NULL) {
        dm_sleep_ms(1);
        return 1;
    }
    /* Between the store of the flag and the load of head: a full fence on
     * this side, and the heavy one for the producer's side unless it
     * fences every push or the wait is short (ring.h). */
    dm_atomic_exchange_int(&ring->consumer_asleep, 1);
    dm_atomic_fence();
    if (!ring->fence_each_push && ms > DM_RING_SHORT_WAIT_MS)
        dm_fence_all_threads();
    if (dm_atomic_load_acquire(&ring->head) != dm_atomic_load_relaxed(&ring->tail) ||
        dm_atomic_load_int(&ring->closed)) {
        dm_atomic_store_int(&ring->consumer_asleep, 0);
        return 1;
    }
    rc = dm_waiter_wait(ring->waiter, ms, watch);
    dm_atomic_store_int(&ring->consumer_asleep, 0);
    return rc;
}

size_t dm_ring_peek(struct dm_ring *ring, struct dm_event *out, size_t max)
{
    uint64_t pos = dm_atomic_load_relaxed(&ring->tail);
    size_t n = 0;

    if (ring->head_cache == pos)
        ring->head_cache = dm_atomic_load_acquire(&ring->head);
    while (n < max && pos != ring->head_cache) {
        const uint8_t *p = ring->data + (pos & ring->mask);
        const char *names;
        struct rec_head h;

        memcpy(&h, p, sizeof h);
        pos += h.bytes;
        if (h.file_len == REC_SKIP)
            continue; /* a record follows: they were published together */
        memcpy(&out[n], p + h.bytes - DM_EVENT_FIXED_BYTES, DM_EVENT_FIXED_BYTES);
        /* The lengths are in the head: the printer need not measure. */
        out[n].flags |= DM_EV_NAME_LENS;
        out[n].disk_name_len = h.disk_name_len;
        out[n].process_len = h.process_len;
        out[n].file_len = h.file_len;
        out[n].partition_len = h.partition_len;
        out[n].cgroup_len = h.cgroup_len;
        names = (const char *)p + sizeof h;
        out[n].disk_name = names;
        names += h.disk_name_len + 1u;
        out[n].process = names;
        names += h.process_len + 1u;
        out[n].file = names;
        names += h.file_len + 1u;
        out[n].partition = names;
        out[n].cgroup = names + h.partition_len + 1u;
        n++;
    }
    ring->read_pos = pos;
    return n;
}

void dm_ring_release(struct dm_ring *ring)
{
    dm_atomic_store_release(&ring->tail, ring->read_pos);
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

uint64_t dm_ring_pushed(const struct dm_ring *ring)
{
    return dm_atomic_load_acquire(&ring->pushed);
}
