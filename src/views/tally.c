/*
 * tally.c - requests and bytes per name, bounded (tally.h).
 */
#include <stdlib.h>
#include <string.h>

#include "views/tally.h"

#define SLOTS (2u * DM_TALLY_NAMES) /* load at most one half: short probes */

int dm_tally_init(struct dm_tally *t, size_t name_max)
{
    memset(t, 0, sizeof *t);
    t->name_max = name_max;
    t->table = calloc(SLOTS, sizeof *t->table);
    t->store = malloc(DM_TALLY_NAMES * name_max);
    return t->table != NULL && t->store != NULL ? 0 : -1;
}

void dm_tally_free(struct dm_tally *t)
{
    free(t->table);
    free(t->store);
    t->table = NULL;
    t->store = NULL;
}

/* A hash of a name from its length and its first and last 8 bytes (all of
 * it when shorter): paths share long folders and differ at their ends, and
 * every request is counted, so two words are mixed, not every byte; equal
 * hashes are told apart by comparing the names. Each word is mixed in by a
 * multiplication by 2^64 / phi (Knuth's multiplicative hashing). */
static uint32_t hash_of(const char *s, size_t n)
{
    uint64_t h = n, head = 0, tail = 0;

    if (n >= 8) {
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
    } else {
        memcpy(&head, s, n);
    }
    h = (h ^ head) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ tail) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* The first empty slot or the key's from slot i on; NULL and the request
 * counted apart when the key is new and the table full. A new key's
 * entry has its name stored. */
static struct dm_tally_entry *new_key(struct dm_tally *t, struct dm_tally_entry *e, uint32_t h,
                                      uint32_t id, const char *name, size_t n, uint64_t bytes)
{
    if (t->used == DM_TALLY_NAMES) {
        t->other_requests++;
        t->other_bytes += bytes;
        return NULL;
    }
    e->used = 1;
    e->hash = h;
    e->id = id;
    e->len = (uint32_t)n;
    e->name = t->store + (size_t)t->used++ * t->name_max;
    memcpy(e->name, name, n);
    e->name[n] = '\0';
    return e;
}

void dm_tally_add(struct dm_tally *t, const char *name, uint64_t bytes)
{
    /* strlen, cut after: an event's names end within their maximum
     * (diskmon.h), and strlen is the cheaper of the two */
    size_t n = strlen(name);
    uint32_t h, i;
    struct dm_tally_entry *e;

    if (n > t->name_max - 1)
        n = t->name_max - 1;
    h = hash_of(name, n);
    for (i = h & (SLOTS - 1);; i = (i + 1) & (SLOTS - 1)) {
        e = &t->table[i];
        if (!e->used)
            break;
        if (e->hash == h && e->len == n && memcmp(e->name, name, n) == 0)
            goto count;
    }
    if ((e = new_key(t, e, h, 0, name, n, bytes)) == NULL)
        return;
count:
    e->requests++;
    e->bytes += bytes;
}

void dm_tally_add_id(struct dm_tally *t, uint32_t id, const char *name, uint64_t bytes)
{
    /* Knuth's multiplicative hashing of the id (see hash_of). */
    uint32_t h = (uint32_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32), i = h & (SLOTS - 1);
    struct dm_tally_entry *e;

    for (;; i = (i + 1) & (SLOTS - 1)) {
        e = &t->table[i];
        if (!e->used)
            break;
        /* a name as stored: cut to name_max - 1 bytes */
        if (e->id == id && strncmp(e->name, name, t->name_max - 1) == 0)
            goto count;
    }
    if ((e = new_key(t, e, h, id, name, strnlen(name, t->name_max - 1), bytes)) == NULL)
        return;
count:
    e->requests++;
    e->bytes += bytes;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct dm_tally_entry *const *)a)->name,
                  (*(const struct dm_tally_entry *const *)b)->name);
}

static int by_bytes(const void *a, const void *b)
{
    const struct dm_tally_entry *x = a, *y = b;

    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->requests != y->requests)
        return x->requests > y->requests ? -1 : 1;
    return strcmp(x->name, y->name);
}

size_t dm_tally_top(const struct dm_tally *t, struct dm_tally_entry *out, size_t n)
{
    const struct dm_tally_entry **all;
    struct dm_tally_entry *sum;
    size_t k = 0, m = 0;

    if (t->used == 0 || n == 0)
        return 0;
    all = malloc(t->used * sizeof *all);
    sum = malloc(t->used * sizeof *sum);
    if (all == NULL || sum == NULL) {
        free(all);
        free(sum);
        return 0;
    }
    for (uint32_t i = 0; i < SLOTS; i++)
        if (t->table[i].used)
            all[k++] = &t->table[i];
    /* the keys of one name side by side, added up */
    qsort(all, k, sizeof *all, by_name);
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && strcmp(sum[m - 1].name, all[i]->name) == 0) {
            sum[m - 1].requests += all[i]->requests;
            sum[m - 1].bytes += all[i]->bytes;
        } else {
            sum[m++] = *all[i];
        }
    }
    qsort(sum, m, sizeof *sum, by_bytes);
    if (m > n)
        m = n;
    memcpy(out, sum, m * sizeof *sum);
    free(all);
    free(sum);
    return m;
}
