/*
 * nt_kernel_need.c - replay's naming pass keeps only the rundown file
 * names some request will use (nt_kernel.h, dm_kdecode_rundown).
 *
 * The rundown file table (nt_kernel_file.c) holds the name of each
 * address's first FileDelete/FileRundown, and the decoding pass gives it
 * to a request on that address completed no later than that record, when
 * the forward table has no name for the address then (lookup_file in
 * nt_kernel_diskio.c). A trace that creates and deletes many files would
 * keep every deleted file's name that way (100,000 names, 20 MB, on the
 * benchmark's generated trace), though a request usually has its file
 * named forward by the FileCreate before it. So the naming pass also sees
 * the DiskIo completions, in the same order as the decoding pass, and
 * follows what the forward table will hold:
 *
 *   - live: the addresses the forward table names at this point of the
 *     trace (FileIo Name, FileCreate and FileRundown name one, FileDelete
 *     ends it: the forward rules of nt_kernel_file.c);
 *   - a request on an address not in live is an orphan: only a rundown
 *     name can name it. Before the address's first end-of-life record the
 *     address is remembered in orphans; at that record the name is kept
 *     (it names that request). At or after it, the request marks the
 *     entry needed when its time is within the entry's (time <= until);
 *   - a first end-of-life record with no orphan before it keeps its entry
 *     on probation while the pass is still at that record's time (a
 *     request of the same timestamp may come next); once the pass is past
 *     it (settled at the next such record and at the pass's end), an
 *     entry no request marked is dropped, and its address
 *     goes to dead, so that a later end-of-life record of the address is
 *     still known not to be the first (its name must stay unused, as
 *     before). dead costs 8 bytes an address, the dropped entry ~200.
 * The decoding pass thus finds the same rundown name for every request
 * that used one before: the names dropped are exactly those no request
 * would have been given. (Two limits, as before: at the forward table's
 * cap, where an entry it replaced would have left its requests to the
 * rundown table, and for a trace whose CPUs' clocks go backwards, where
 * the merge and the timestamps disagree, a name may be dropped that a
 * request would have used; the first is noted as "tables were full".)
 * All of it is freed when the decoding pass meets its first record other
 * than DiskIo (dm_kdecode), or with the decoder.
 */
#include <stdlib.h>
#include <string.h>

#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"

/* Initial sizes (slots; the tables grow, ktable.h). live holds the files
 * open at a time, orphans the few addresses with a request before their
 * name; dead grows with the files a trace deletes. */
#define LIVE_SLOTS 1024u
#define LIVE_MAX_SLOTS (2u * DM_KDECODER_FILES_MAX)
#define ORPHAN_SLOTS 256u
#define ORPHAN_MAX_SLOTS (1u << 20)
#define DEAD_SLOTS 1024u
/* dead grows when 7/8 full: linear probing stays short enough for its
 * lookups (one per end-of-life record and per orphan request), and 8 bytes
 * a key is what lets a trace delete 100,000 files in 1 MiB. */
#define DEAD_LOAD_NUM 7u
#define DEAD_LOAD_DEN 8u

struct orphan_slot {
    struct dm_kslot k; /* key: FILE_OBJECT address */
    uint64_t first;    /* time of the earliest orphan request on it */
};

/* A set of addresses: open addressing, linear probing, no removal. Key 0
 * marks a free slot; address 0 is kept in has_zero. */
struct addr_set {
    uint64_t *keys;
    size_t mask, count;
    int has_zero;
};

struct dm_kneed {
    struct dm_ktable live;    /* struct dm_kslot */
    struct dm_ktable orphans; /* struct orphan_slot */
    struct addr_set dead;
    uint64_t *probation;      /* addresses whose entries are on probation */
    size_t n_probation, cap_probation;
    uint64_t probation_until; /* the latest of their records' times */
};

static size_t addr_home(const struct addr_set *s, uint64_t key)
{
    /* splitmix64's finaliser, as dm_kt_home (ktable.h). */
    key ^= key >> 30;
    key *= UINT64_C(0xbf58476d1ce4e5b9);
    key ^= key >> 27;
    key *= UINT64_C(0x94d049bb133111eb);
    key ^= key >> 31;
    return (size_t)key & s->mask;
}

static int addr_has(const struct addr_set *s, uint64_t key)
{
    if (key == 0)
        return s->has_zero;
    for (size_t i = addr_home(s, key);; i = (i + 1) & s->mask) {
        if (s->keys[i] == key)
            return 1;
        if (s->keys[i] == 0)
            return 0;
    }
}

/* Returns 0 or DM_ENOMEM (the key is then not added). */
static int addr_add(struct addr_set *s, uint64_t key)
{
    size_t i;

    if (key == 0) {
        s->has_zero = 1;
        return 0;
    }
    if ((s->count + 1) * DEAD_LOAD_DEN > (s->mask + 1) * DEAD_LOAD_NUM) {
        size_t cap = (s->mask + 1) * 2;
        struct addr_set n = {calloc(cap, sizeof *n.keys), cap - 1, s->count, s->has_zero};

        if (n.keys == NULL)
            return DM_ENOMEM;
        for (size_t j = 0; j <= s->mask; j++) {
            if (s->keys[j] == 0)
                continue;
            for (i = addr_home(&n, s->keys[j]); n.keys[i] != 0; i = (i + 1) & n.mask)
                ;
            n.keys[i] = s->keys[j];
        }
        free(s->keys);
        *s = n;
    }
    for (i = addr_home(s, key); s->keys[i] != 0; i = (i + 1) & s->mask)
        if (s->keys[i] == key)
            return 0;
    s->keys[i] = key;
    s->count++;
    return 0;
}

int dm_kdecoder__need_init(struct dm_kdecoder *kd)
{
    struct dm_kneed *n = calloc(1, sizeof *n);
    int a, b;

    if (n == NULL)
        return DM_ENOMEM;
    a = dm_kt_init_growing(&n->live, LIVE_SLOTS, LIVE_MAX_SLOTS, sizeof(struct dm_kslot));
    b = dm_kt_init_growing(&n->orphans, ORPHAN_SLOTS, ORPHAN_MAX_SLOTS,
                           sizeof(struct orphan_slot));
    n->dead.keys = calloc(DEAD_SLOTS, sizeof *n->dead.keys);
    n->dead.mask = DEAD_SLOTS - 1;
    kd->need = n;
    if (a < 0 || b < 0 || n->dead.keys == NULL) {
        dm_kdecoder__need_free(kd);
        return DM_ENOMEM;
    }
    return 0;
}

void dm_kdecoder__need_free(struct dm_kdecoder *kd)
{
    struct dm_kneed *n = kd->need;

    if (n == NULL)
        return;
    dm_kt_free(&n->live);
    dm_kt_free(&n->orphans);
    free(n->dead.keys);
    free(n->probation);
    free(n);
    kd->need = NULL;
}

/* The entry of file_object in the rundown table, or NULL. */
static struct file_slot *rundown_entry(const struct dm_kdecoder *kd, uint64_t file_object)
{
    size_t s = dm_kt_find(&kd->rundown->files, file_object);

    return s != DM_KT_NONE ? file_at(&kd->rundown->files, s) : NULL;
}

void dm_kdecoder__need_at(struct dm_kdecoder *kd, uint64_t ts)
{
    struct dm_kneed *n = kd->need;

    if (n == NULL || n->n_probation == 0 || ts <= n->probation_until)
        return;
    for (size_t i = 0; i < n->n_probation; i++) {
        uint64_t fo = n->probation[i];
        size_t s = dm_kt_find(&kd->rundown->files, fo);

        if (s == DM_KT_NONE || file_at(&kd->rundown->files, s)->needed)
            continue;
        /* No memory for the address in dead: keep the name (as before). */
        if (addr_add(&n->dead, fo) < 0)
            continue;
        free(file_at(&kd->rundown->files, s)->name);
        dm_kt_remove(&kd->rundown->files, s);
    }
    n->n_probation = 0;
}

void dm_kdecoder__need_request(struct dm_kdecoder *kd, uint64_t file_object, uint64_t ts)
{
    struct dm_kneed *n = kd->need;
    struct file_slot *f;
    struct orphan_slot *o;
    size_t s;
    int had;

    if (n == NULL || dm_kt_find(&n->live, file_object) != DM_KT_NONE)
        return; /* the forward table will name it */
    if ((f = rundown_entry(kd, file_object)) != NULL) {
        if (ts <= f->until)
            f->needed = 1;
        return;
    }
    if (addr_has(&n->dead, file_object))
        return; /* after its first end: no rundown name, as before */
    s = dm_kt_claim(&n->orphans, file_object, ++kd->clock, &had);
    o = (struct orphan_slot *)(void *)dm_kt_slot(&n->orphans, s);
    if (!had || ts < o->first)
        o->first = ts;
}

int dm_kdecoder__need_is_dead(const struct dm_kdecoder *kd, uint64_t file_object)
{
    return kd->need != NULL && addr_has(&kd->need->dead, file_object);
}

/* f is the slot just stored: nothing may touch the rundown file table
 * between that and this call (a removal moves slots). */
void dm_kdecoder__need_first_end(struct dm_kdecoder *kd, uint64_t file_object,
                                 uint64_t ts, struct file_slot *f)
{
    struct dm_kneed *n = kd->need;
    size_t s;

    f->needed = 1;
    if (n == NULL)
        return;
    s = dm_kt_find(&n->orphans, file_object);
    if (s != DM_KT_NONE) {
        int used = ((struct orphan_slot *)(void *)dm_kt_slot(&n->orphans, s))->first <= ts;

        dm_kt_remove(&n->orphans, s);
        if (used)
            return;
    }
    if (n->n_probation == n->cap_probation) {
        size_t cap = n->cap_probation ? 2 * n->cap_probation : 64;
        uint64_t *p = realloc(n->probation, cap * sizeof *p);

        if (p == NULL)
            return; /* kept, as before */
        n->probation = p;
        n->cap_probation = cap;
    }
    f->needed = 0;
    n->probation[n->n_probation++] = file_object;
    if (ts > n->probation_until)
        n->probation_until = ts;
}

void dm_kdecoder__need_named(struct dm_kdecoder *kd, uint64_t file_object, int named)
{
    struct dm_kneed *n = kd->need;
    size_t s;

    if (n == NULL)
        return;
    if (named) {
        (void)dm_kt_put(&n->live, file_object, ++kd->clock);
    } else if ((s = dm_kt_find(&n->live, file_object)) != DM_KT_NONE) {
        dm_kt_remove(&n->live, s);
    }
}
