/*
 * kmerge.h - the k-way merge of time-ordered streams: a tournament tree of
 * stream indexes. The .etl reader merges its per-CPU buffer streams with
 * it, the Linux source its per-CPU sample streams.
 *
 * The tree holds indexes only; the caller keeps each stream's current item
 * and says which of two streams comes first (before), or gives a 64-bit
 * key per stream that the tree compares itself, asking before() only on
 * equal keys (dm_kmerge_use_keys): no call per comparison. Typical use: push
 * every stream that has an item; then repeatedly take dm_kmerge_top(),
 * consume its item, and either advance that stream and call
 * dm_kmerge_top_changed(), or call dm_kmerge_pop() when it has no more.
 * Each of these costs one comparison per level of the tree (log2 of the
 * streams, rounded up), where a binary heap's sift costs up to two: the
 * merge runs once per item, and in a trace whose CPUs interleave record
 * by record the top changes at nearly every one. Ties come out in an
 * order fixed by the pushes and the before() answers, so a total before()
 * (the .etl reader's: timestamp, then file position) gives one order
 * whatever the run: the smallest stream. Single-threaded; no allocation
 * after dm_kmerge_init.
 */
#ifndef DM_KMERGE_H
#define DM_KMERGE_H

#include <stdint.h>

/* Nonzero when stream a's current item comes before stream b's. */
typedef int (*dm_kmerge_before_fn)(const void *ctx, unsigned a, unsigned b);

/*
 * The tree: leaves slots at the bottom, one per possible stream (stream s
 * at node leaves + s, DM_KMERGE_NONE when it is not in); every node above
 * holds the first of the streams below it, node 1 the first of all. With
 * keys, key[node] is that stream's key, copied when its leaf was last
 * replayed, so a level compares two loads from the tree.
 */
#define DM_KMERGE_NONE UINT32_MAX

struct dm_kmerge {
    uint32_t *node;          /* 2 * leaves */
    uint64_t *key;           /* 2 * leaves; UINT64_MAX where NONE */
    unsigned leaves;         /* a power of two >= max */
    unsigned n;
    dm_kmerge_before_fn before;
    const void *ctx;
    const uint64_t *keys;    /* dm_kmerge_use_keys, or NULL */
};

/* Room for streams 0 .. max - 1 (max at least 1, at most 2^24). Returns 0
 * or DM_ENOMEM. */
int dm_kmerge_init(struct dm_kmerge *m, unsigned max, dm_kmerge_before_fn before,
                   const void *ctx);
/*
 * Optional, for a merge that runs once per item: keys[stream] is the
 * primary order (smaller first), compared inline; before() is called only
 * for equal keys, so it need only break ties (it must still agree with the
 * keys: the order is keys first, then before). The caller keeps
 * keys[stream] current for every stream in the tree (set it before
 * dm_kmerge_push and before dm_kmerge_top_changed, and change no other
 * stream's). NULL: before() alone. Call it before the first push.
 */
void dm_kmerge_use_keys(struct dm_kmerge *m, const uint64_t *keys);
void dm_kmerge_free(struct dm_kmerge *m);

/* Forget every stream (the tree's memory is kept). */
void dm_kmerge_clear(struct dm_kmerge *m);
/* Add a stream (< max, not in already) that has a current item. */
void dm_kmerge_push(struct dm_kmerge *m, unsigned stream);
/* How many streams are in; the first of them (only when n > 0). Inline:
 * a merge asks for them once per item. */
static inline unsigned dm_kmerge_count(const struct dm_kmerge *m)
{
    return m->n;
}

static inline unsigned dm_kmerge_top(const struct dm_kmerge *m)
{
    return m->node[1];
}

/* Not for callers: the out-of-line half of dm_kmerge_top_changed. */
void dm_kmerge__replay(struct dm_kmerge *m, unsigned stream, uint32_t w);

/*
 * The top stream advanced to its next item: restore the order. Inline for
 * keyed merges, which run it once per item: one key comparison per level.
 * Equal keys, which need before(), are left to the out-of-line replay
 * (node[1], the stream replayed, is written only at the last level), so
 * the loop makes no call and keeps its values in registers.
 */
static inline void dm_kmerge_top_changed(struct dm_kmerge *m)
{
    uint32_t *node = m->node, w = node[1];
    uint64_t *key = m->key, wk;
    unsigned i;

    if (m->n == 0)
        return;
    if (m->keys == NULL) {
        dm_kmerge__replay(m, w, w);
        return;
    }
    i = m->leaves + w;
    wk = m->keys[w];
    key[i] = wk; /* node[i] is w already */
    while (i > 1) {
        uint32_t o = node[i ^ 1];
        uint64_t ok = key[i ^ 1];

        if (ok <= wk) {
            if (ok == wk) { /* before() decides: the path again, out of line */
                dm_kmerge__replay(m, node[1], node[1]);
                return;
            }
            w = o;
            wk = ok;
        }
        i >>= 1;
        node[i] = w;
        key[i] = wk;
    }
}
/* The top stream has no more items: remove it. */
void dm_kmerge_pop(struct dm_kmerge *m);

#endif /* DM_KMERGE_H */
