/*
 * ktable.h - the kernel decoder's tables: integer keys (thread ids,
 * process ids, FILE_OBJECT and IRP addresses), open addressing, growing up
 * to a cap, the oldest entry replaced only when the cap leaves no room.
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
 * A key is never more than probe_len - 1 slots past its home.
 * A growing table (dm_kt_init_growing) doubles, up to its cap, when it is
 * half full or when a key's probe window is full of other live keys, so a
 * busy machine's entries (a start rundown names tens of thousands of files,
 * docs/etw.md §8) are kept, not replaced. Entries whose age is at most
 * spare_age (the decoder's ended threads and processes, marked with
 * dm_kt_mark_spare) make room before the table grows: when a table is half
 * full and an eighth of it is spare, a sweep drops the spare entries its
 * keep_spare hook no longer needs, and the table grows only if that freed
 * less than an eighth. Without the sweep, a machine where threads come and
 * go would grow its tables with ids that ended long ago, up to the cap, in
 * a session of days. Only at the cap is a live entry replaced: the one written longest
 * ago (smallest age) in the window, counted in replaced, so the user can be
 * told. Losing an entry only costs attribution (a missing name), never the
 * disk request itself. A fixed table (dm_kt_init) is a growing one whose
 * cap is its size.
 * Growing moves every entry: slot numbers and pointers into the table are
 * good only until the next claim or put on it.
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

/* Slots a key may be away from its home, counting the home: 8 in a fixed
 * table; 32 in a growing one, whose half-full tables would otherwise fill
 * some windows of 8 (linear probing's clusters: 0.4% of 1,000,000 strided
 * keys found their window of 8 full at a load under one half). Lookups stop
 * at the first free slot, so the longer window costs only in long
 * clusters. */
#define DM_KT_PROBE_LEN 8u
#define DM_KT_PROBE_LEN_GROWING 32u
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
    size_t probe_len;   /* DM_KT_PROBE_LEN or DM_KT_PROBE_LEN_GROWING */
    size_t count;       /* live entries */
    size_t max_capacity; /* the cap: never more slots than this */
    uint64_t spare_age; /* entries this old or older go before growing */
    size_t spares;      /* entries with 0 < age <= spare_age */
    size_t spares_kept; /* spares the last sweep kept: the next sweep waits
                         * for an eighth of the table more */
    /* NULL: a sweep drops every spare entry. Else it keeps those for which
     * keep_spare(slot, keep_ctx) is nonzero (the decoder: ended within
     * their grace period). */
    int (*keep_spare)(const void *slot, const void *ctx);
    const void *keep_ctx;
    uint64_t replaced;  /* live entries replaced for want of room at the cap */
};

static inline unsigned dm_kt_log2(size_t capacity)
{
    unsigned bits = 0;

    while (((size_t)1 << bits) < capacity)
        bits++;
    return bits;
}

/* capacity and max_capacity: powers of two, capacity <= max_capacity, at
 * least DM_KT_PROBE_LEN_GROWING for a growing table (DM_KT_PROBE_LEN for a
 * fixed one); stride: sizeof the caller's slot struct.
 * Returns 0 or DM_ENOMEM. */
static inline int dm_kt_init_growing(struct dm_ktable *t, size_t capacity,
                                     size_t max_capacity, size_t stride)
{
    memset(t, 0, sizeof *t);
    t->mem = calloc(capacity, stride);
    t->stride = stride;
    t->mask = capacity - 1;
    t->shift = 64u - dm_kt_log2(capacity);
    t->max_capacity = max_capacity > capacity ? max_capacity : capacity;
    t->probe_len = t->max_capacity > capacity ? DM_KT_PROBE_LEN_GROWING : DM_KT_PROBE_LEN;
    return t->mem != NULL ? 0 : DM_ENOMEM;
}

/* A table of fixed capacity (see the file comment). */
static inline int dm_kt_init(struct dm_ktable *t, size_t capacity, size_t stride)
{
    return dm_kt_init_growing(t, capacity, capacity, stride);
}

static inline void dm_kt_free(struct dm_ktable *t)
{
    free(t->mem);
    t->mem = NULL;
    t->count = 0;
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

    for (size_t i = 0; i < t->probe_len; i++) {
        size_t s = (h + i) & t->mask;
        const struct dm_kslot *k = dm_kt_slot(t, s);

        if (k->age == 0)
            return DM_KT_NONE; /* no hole before a key: it is not here */
        if (k->key == key)
            return s;
    }
    return DM_KT_NONE;
}

/* Move every entry of t into a table of capacity slots (mem, zeroed).
 * Returns 0, or -1 when some key found no free slot in its window there
 * (mem is then left to the caller to free; t is unchanged). */
static inline int dm_kt_rehash(struct dm_ktable *t, unsigned char *mem, size_t capacity)
{
    struct dm_ktable n = *t;

    n.mem = mem;
    n.mask = capacity - 1;
    n.shift = 64u - dm_kt_log2(capacity);
    for (size_t s = 0; s <= t->mask; s++) {
        const struct dm_kslot *k = dm_kt_slot(t, s);
        size_t h, i;

        if (k->age == 0)
            continue;
        h = dm_kt_home(&n, k->key);
        for (i = 0; i < t->probe_len; i++)
            if (dm_kt_slot(&n, (h + i) & n.mask)->age == 0)
                break;
        if (i == t->probe_len)
            return -1;
        memcpy(dm_kt_slot(&n, (h + i) & n.mask), k, t->stride);
    }
    *t = n;
    return 0;
}

/* Double t (more when the doubled table cannot place every key in its
 * window), within the cap. Returns 0, or -1 (at the cap, or no memory:
 * t is unchanged and still works). */
static inline int dm_kt_grow(struct dm_ktable *t)
{
    unsigned char *old = t->mem;

    /* capacity > t->mask + 1: stops should the doubling overflow. */
    for (size_t capacity = (t->mask + 1) * 2;
         capacity <= t->max_capacity && capacity > t->mask + 1; capacity *= 2) {
        unsigned char *mem = calloc(capacity, t->stride);

        if (mem == NULL)
            return -1;
        if (dm_kt_rehash(t, mem, capacity) == 0) {
            free(old);
            return 0;
        }
        free(mem);
    }
    return -1;
}

/* A spare entry was used again, replaced or removed. */
static inline void dm_kt_spare_gone(struct dm_ktable *t)
{
    t->spares--;
    if (t->spares_kept > t->spares)
        t->spares_kept = t->spares;
}

/* Mark the entry in slot s spare (see the file comment): the first to make
 * room. */
static inline void dm_kt_mark_spare(struct dm_ktable *t, size_t s)
{
    struct dm_kslot *k = dm_kt_slot(t, s);

    if (k->age > t->spare_age) {
        k->age = t->spare_age;
        t->spares++;
    }
}

/*
 * Drop the spare entries keep_spare does not keep, by moving every other
 * entry into a new table of the same capacity. The walk starts just after a
 * free slot, so each cluster is walked from its start and every key lands
 * at or before its old slot: no key leaves its window. Spare entries must
 * own nothing (their slots are not handed back). Returns how many were
 * dropped: 0 when there was no memory for the new table (t is unchanged).
 */
static inline size_t dm_kt_sweep(struct dm_ktable *t)
{
    size_t capacity = t->mask + 1, start = 0, dropped = 0;
    unsigned char *mem;

    while (start < capacity && dm_kt_slot(t, start)->age != 0)
        start++;
    if (start == capacity || (mem = calloc(capacity, t->stride)) == NULL)
        return 0; /* full (never at half load) or no memory */
    for (size_t i = 1; i <= capacity; i++) {
        const struct dm_kslot *k = dm_kt_slot(t, (start + i) & t->mask);
        size_t h;

        if (k->age == 0)
            continue;
        if (k->age <= t->spare_age &&
            (t->keep_spare == NULL || !t->keep_spare(k, t->keep_ctx))) {
            dropped++;
            continue;
        }
        h = dm_kt_home(t, k->key);
        while (((const struct dm_kslot *)(const void *)(mem + h * t->stride))->age != 0)
            h = (h + 1) & t->mask;
        memcpy(mem + h * t->stride, k, t->stride);
    }
    free(t->mem);
    t->mem = mem;
    t->count -= dropped;
    t->spares -= dropped;
    t->spares_kept = t->spares;
    return dropped;
}

/*
 * The slot for key, with its age set to clock: the key's own slot, else the
 * first free one (growing the table first when it is half full), else, when
 * the window is full of other keys, a spare entry (age <= spare_age), else
 * the table grows and tries again, else (at the cap) the oldest entry of
 * the window is dropped and counted in replaced. The caller fills in the
 * value. Never fails. *had_entry (when not NULL) says whether the slot held
 * an entry, the key's own or the dropped one, whose value the caller may
 * have to release.
 */
static inline size_t dm_kt_claim(struct dm_ktable *t, uint64_t key, uint64_t clock,
                                 int *had_entry)
{
    struct dm_kslot *k;

    if (had_entry != NULL)
        *had_entry = 1;
    if (t->count + 1 > (t->mask + 1) / 2 && dm_kt_find(t, key) == DM_KT_NONE) {
        size_t eighth = (t->mask + 1) / 8;

        if (!(t->spares >= t->spares_kept + eighth && dm_kt_sweep(t) >= eighth) &&
            t->mask + 1 < t->max_capacity)
            (void)dm_kt_grow(t); /* no memory: the table works on as it is */
    }
    for (;;) {
        size_t h = dm_kt_home(t, key), oldest = DM_KT_NONE;
        uint64_t oldest_age = UINT64_MAX;

        for (size_t i = 0; i < t->probe_len; i++) {
            size_t s = (h + i) & t->mask;

            k = dm_kt_slot(t, s);
            if (k->age == 0 || k->key == key) {
                if (k->age == 0)
                    t->count++;
                else if (k->age <= t->spare_age)
                    dm_kt_spare_gone(t); /* an ended id used again */
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
        /* The window is full of other keys: replace a spare entry, or grow
         * and look again, or, at the cap, replace the oldest. Replacing
         * leaves no hole. */
        if (oldest_age > t->spare_age && dm_kt_grow(t) == 0)
            continue;
        if (oldest_age > t->spare_age)
            t->replaced++;
        else
            dm_kt_spare_gone(t);
        k = dm_kt_slot(t, oldest);
        k->key = key;
        k->age = clock;
        return oldest;
    }
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

    if (dm_kt_slot(t, s)->age <= t->spare_age)
        dm_kt_spare_gone(t);
    for (size_t d = 1; d < t->probe_len; d++) {
        size_t j = (hole + d) & t->mask;
        struct dm_kslot *next = dm_kt_slot(t, j);

        if (next->age == 0)
            break;
        /* A key may fill the hole when its home is not after the hole.
         * Keys probe_len or more past the hole have their home after
         * it, so the search ends there. */
        if (((j - dm_kt_home(t, next->key)) & t->mask) >= d) {
            memcpy(dm_kt_slot(t, hole), next, t->stride);
            hole = j;
            d = 0;
        }
    }
    dm_kt_slot(t, hole)->age = 0;
    t->count--;
}

/* Slots from the home of the key in slot s to s, counting both (1: the
 * key is at home). */
static inline size_t dm_kt_probe_len(const struct dm_ktable *t, size_t s)
{
    return ((s - dm_kt_home(t, dm_kt_slot(t, s)->key)) & t->mask) + 1;
}

#endif /* DM_KTABLE_H */
