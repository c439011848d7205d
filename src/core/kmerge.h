/*
 * kmerge.h - the k-way merge of time-ordered streams: a binary min-heap of
 * stream indexes. The .etl reader merges its per-CPU buffer streams with
 * it, the Linux source its per-CPU sample streams.
 *
 * The heap holds indexes only; the caller keeps each stream's current item
 * and says which of two streams comes first (before), or gives a 64-bit
 * key per stream that the heap compares itself, asking before() only on
 * equal keys (dm_kmerge_use_keys): no call per comparison. Typical use: push
 * every stream that has an item; then repeatedly take dm_kmerge_top(),
 * consume its item, and either advance that stream and call
 * dm_kmerge_top_changed(), or call dm_kmerge_pop() when it has no more.
 * Ties come out in an order fixed by the pushes and the before() answers,
 * so a total before() (the .etl reader's: timestamp, then file position)
 * gives one order whatever the run. Single-threaded; no allocation after
 * dm_kmerge_init.
 */
#ifndef DM_KMERGE_H
#define DM_KMERGE_H

#include <stdint.h>

/* Nonzero when stream a's current item comes before stream b's. */
typedef int (*dm_kmerge_before_fn)(const void *ctx, unsigned a, unsigned b);

struct dm_kmerge {
    unsigned *heap;
    unsigned n;
    dm_kmerge_before_fn before;
    const void *ctx;
    const uint64_t *keys;    /* dm_kmerge_use_keys, or NULL */
};

/* Room for max streams (at least 1). Returns 0 or DM_ENOMEM. */
int dm_kmerge_init(struct dm_kmerge *m, unsigned max, dm_kmerge_before_fn before,
                   const void *ctx);
/*
 * Optional, for a merge that runs once per item: keys[stream] is the
 * primary order (smaller first), compared inline; before() is called only
 * for equal keys, so it need only break ties (it must still agree with the
 * keys: the order is keys first, then before). The caller keeps
 * keys[stream] current for every stream in the heap (set it before
 * dm_kmerge_push and before dm_kmerge_top_changed). NULL: before() alone.
 */
void dm_kmerge_use_keys(struct dm_kmerge *m, const uint64_t *keys);
void dm_kmerge_free(struct dm_kmerge *m);

/* Forget every stream (the heap's memory is kept). */
void dm_kmerge_clear(struct dm_kmerge *m);
/* Add a stream that has a current item. */
void dm_kmerge_push(struct dm_kmerge *m, unsigned stream);
/* How many streams are in; the first of them (only when n > 0). Inline:
 * a merge asks for them once per item. */
static inline unsigned dm_kmerge_count(const struct dm_kmerge *m)
{
    return m->n;
}

static inline unsigned dm_kmerge_top(const struct dm_kmerge *m)
{
    return m->heap[0];
}

/* The top stream advanced to its next item: restore the order. */
void dm_kmerge_top_changed(struct dm_kmerge *m);
/* The top stream has no more items: remove it. */
void dm_kmerge_pop(struct dm_kmerge *m);

#endif /* DM_KMERGE_H */
