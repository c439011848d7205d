/*
 * kmerge.h - the k-way merge of time-ordered streams: a binary min-heap of
 * stream indexes. The .etl reader merges its per-CPU buffer streams with
 * it, the Linux source its per-CPU sample streams.
 *
 * The heap holds indexes only; the caller keeps each stream's current item
 * and says which of two streams comes first (before). Typical use: push
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

/* Nonzero when stream a's current item comes before stream b's. */
typedef int (*dm_kmerge_before_fn)(const void *ctx, unsigned a, unsigned b);

struct dm_kmerge {
    unsigned *heap;
    unsigned n;
    dm_kmerge_before_fn before;
    const void *ctx;
};

/* Room for max streams (at least 1). Returns 0 or DM_ENOMEM. */
int dm_kmerge_init(struct dm_kmerge *m, unsigned max, dm_kmerge_before_fn before,
                   const void *ctx);
void dm_kmerge_free(struct dm_kmerge *m);

/* Forget every stream (the heap's memory is kept). */
void dm_kmerge_clear(struct dm_kmerge *m);
/* Add a stream that has a current item. */
void dm_kmerge_push(struct dm_kmerge *m, unsigned stream);
/* How many streams are in; the first of them (only when n > 0). */
unsigned dm_kmerge_count(const struct dm_kmerge *m);
unsigned dm_kmerge_top(const struct dm_kmerge *m);
/* The top stream advanced to its next item: restore the order. */
void dm_kmerge_top_changed(struct dm_kmerge *m);
/* The top stream has no more items: remove it. */
void dm_kmerge_pop(struct dm_kmerge *m);

#endif /* DM_KMERGE_H */
