/*
 * ktable.h - the kernel decoder's tables: fixed capacity, integer keys
 * (thread ids, process ids, FILE_OBJECT and IRP addresses), open
 * addressing, the oldest entry replaced when there is no room.
 *
 * Built for the live callback, which does up to four lookups per DiskIo
 * completion and must stay within a few dozen nanoseconds:
 *   - each slot holds its key, its age and its value together (the caller's
 *     slot struct begins with struct dm_kslot), so a hit touches one slot
 *     and usually one cache line;
 *   - the hash is splitmix64's finaliser (two multiplications, three
 *     shifts; see dm_kt_home), which spreads small sequential ids and
 *     kernel addresses allocated at a fixed stride alike;
 *   - linear probing with no hole between a key's home slot and the key,
 *     kept by removing with backward shift (Knuth vol. 3, 6.4, Algorithm R).
 *     A lookup therefore stops at the first free slot: a miss in a sparse
 *     table costs one probe, not a scan of the whole probe window.
 *
 * A key is never more than DM_KT_PROBE_LEN - 1 slots past its home. When
 * those slots are all taken by other keys, the one written longest ago
 * (smallest age) is replaced. Memory therefore stays constant however long
 * a session runs, and losing an old entry only costs attribution (a missing
 * name), never the disk request itself.
 *
 * Slots are named by index; a slot's contents stay put until the next put
 * or remove on the same table (remove moves later slots back, and leaves
 * the freed slot's value bytes behind, a copy of a moved entry's: a value
 * is live only in a slot whose age is not 0). Single-threaded, like the
 * decoder.
 * Header-only so that the decoder's hot path inlines it and the unit tests
 * (test_diskio.c) reach it.
 */
#ifndef DM_KTABLE_H
#define DM_KTABLE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"

/* Slots a key may be away from its home, counting the home. */
#define DM_KT_PROBE_LEN 8u
#define DM_KT_NONE ((size_t)-1)

/* The head of every slot. age 0 marks a free slot; the decoder's write
 * clock starts above 0. */
struct dm_kslot {
    uint64_t key;
    uint64_t age;
};

struct dm_ktable {
    unsigned char *mem; /* capacity slots of stride bytes */
    size_t stride;      /* the caller's slot size, a multiple of 8 */
    size_t mask;        /* capacity - 1 */
    unsigned shift;     /* 64 - log2(capacity) */
};

/* capacity: a power of two, at least DM_KT_PROBE_LEN; stride:
 * sizeof the caller's slot struct. Returns 0 or DM_ENOMEM. */
static inline int dm_kt_init(struct dm_ktable *t, size_t capacity, size_t stride)
{
    unsigned bits = 0;

    while (((size_t)1 << bits) < capacity)
        bits++;
    t->mem = calloc(capacity, stride);
    t->stride = stride;
    t->mask = capacity - 1;
    t->shift = 64u - bits;
    return t->mem != NULL ? 0 : DM_ENOMEM;
}

static inline void dm_kt_free(struct dm_ktable *t)
{
    free(t->mem);
    t->mem = NULL;
}

static inline struct dm_kslot *dm_kt_slot(const struct dm_ktable *t, size_t s)
{
    return (struct dm_kslot *)(void *)(t->mem + s * t->stride);
}

/*
 * The home slot of key: splitmix64's finaliser (Steele, Lea, Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014; the
 * constants are its published ones), then the top bits. One multiplication
 * alone (Fibonacci hashing) is not enough for addresses at a fixed stride,
 * as objects of one size allocated from one pool are: with the generated
 * traces' FILE_OBJECTs 0x150 apart, every 138th object landed within a few
 * slots of the last, clusters filled probe windows at a twentieth of the
 * table's capacity and live names were dropped (found by the benchmark's
 * request-by-request check).
 */
static inline size_t dm_kt_home(const struct dm_ktable *t, uint64_t key)
{
    key ^= key >> 30;
    key *= UINT64_C(0xbf58476d1ce4e5b9);
    key ^= key >> 27;
    key *= UINT64_C(0x94d049bb133111eb);
    key ^= key >> 31;
    return (size_t)(key >> t->shift);
}

/* The slot holding key, or DM_KT_NONE. */
static inline size_t dm_kt_find(const struct dm_ktable *t, uint64_t key)
{
    size_t h = dm_kt_home(t, key);

    for (size_t i = 0; i < DM_KT_PROBE_LEN; i++) {
        size_t s = (h + i) & t->mask;
        const struct dm_kslot *k = dm_kt_slot(t, s);

        if (k->age == 0)
            return DM_KT_NONE; /* no hole before a key: it is not here */
        if (k->key == key)
            return s;
    }
    return DM_KT_NONE;
}

/*
 * The slot for key, with its age set to clock: the key's own slot, else the
 * first free one, else the oldest of the probe window (whose entry is
 * dropped). The caller fills in the value. Never fails. *had_entry (when
 * not NULL) says whether the slot held an entry, the key's own or the
 * dropped one, whose value the caller may have to release.
 */
static inline size_t dm_kt_claim(struct dm_ktable *t, uint64_t key, uint64_t clock,
                                 int *had_entry)
{
    size_t h = dm_kt_home(t, key), oldest = DM_KT_NONE;
    uint64_t oldest_age = UINT64_MAX;
    struct dm_kslot *k;

    if (had_entry != NULL)
        *had_entry = 1;
    for (size_t i = 0; i < DM_KT_PROBE_LEN; i++) {
        size_t s = (h + i) & t->mask;

        k = dm_kt_slot(t, s);
        if (k->age == 0 || k->key == key) {
            if (had_entry != NULL)
                *had_entry = k->age != 0;
            k->key = key;
            k->age = clock;
            return s;
        }
        if (oldest == DM_KT_NONE || k->age < oldest_age) {
            oldest = s;
            oldest_age = k->age;
        }
    }
    /* The window is full of other keys: replacing one leaves no hole. */
    k = dm_kt_slot(t, oldest);
    k->key = key;
    k->age = clock;
    return oldest;
}

/* dm_kt_claim, for values that own nothing. */
static inline size_t dm_kt_put(struct dm_ktable *t, uint64_t key, uint64_t clock)
{
    return dm_kt_claim(t, key, clock, NULL);
}

/* Free slot s (from find or put), moving later keys of its cluster back so
 * that no key has a hole before it. */
static inline void dm_kt_remove(struct dm_ktable *t, size_t s)
{
    size_t hole = s;

    for (size_t d = 1; d < DM_KT_PROBE_LEN; d++) {
        size_t j = (hole + d) & t->mask;
        struct dm_kslot *next = dm_kt_slot(t, j);

        if (next->age == 0)
            break;
        /* A key may fill the hole when its home is not after the hole.
         * Keys DM_KT_PROBE_LEN or more past the hole have their home after
         * it, so the search ends there. */
        if (((j - dm_kt_home(t, next->key)) & t->mask) >= d) {
            memcpy(dm_kt_slot(t, hole), next, t->stride);
            hole = j;
            d = 0;
        }
    }
    dm_kt_slot(t, hole)->age = 0;
}

/* Slots from the home of the key in slot s to s, counting both (1: the
 * key is at home). */
static inline size_t dm_kt_probe_len(const struct dm_ktable *t, size_t s)
{
    return ((s - dm_kt_home(t, dm_kt_slot(t, s)->key)) & t->mask) + 1;
}

#endif /* DM_KTABLE_H */
