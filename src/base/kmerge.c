/*
 * kmerge.c - the k-way merge tournament tree (kmerge.h). A stream whose
 * item changed (or that came in or left) is replayed from its leaf to the
 * root: at each level the climbing stream meets the first stream of the
 * sibling subtree, and the first of the two climbs on. Any leaf may be
 * replayed so, as every node on its path is recomputed from its two
 * children; the other nodes keep their first streams, whose items did not
 * change.
 */
#include <stdlib.h>

#include "base/kmerge.h"
#include "diskmon.h"

#define MAX_STREAMS (1u << 24)

int dm_kmerge_init(struct dm_kmerge *m, unsigned max, dm_kmerge_before_fn before,
                   const void *ctx)
{
    unsigned leaves = 1;

    m->node = NULL;
    m->key = NULL;
    m->n = 0;
    m->before = before;
    m->ctx = ctx;
    m->keys = NULL;
    /* Far more streams than CPUs exist (the reader's cap is 2048); the
     * bound keeps 2 * leaves * 8 bytes within a 32-bit size_t. */
    if (max > MAX_STREAMS)
        return DM_ENOMEM;
    while (leaves < max)
        leaves *= 2;
    m->leaves = leaves;
    m->node = malloc(2 * (size_t)leaves * sizeof *m->node);
    m->key = malloc(2 * (size_t)leaves * sizeof *m->key);
    if (m->node == NULL || m->key == NULL) {
        dm_kmerge_free(m);
        return DM_ENOMEM;
    }
    dm_kmerge_clear(m);
    return 0;
}

void dm_kmerge_use_keys(struct dm_kmerge *m, const uint64_t *keys)
{
    m->keys = keys;
}

void dm_kmerge_free(struct dm_kmerge *m)
{
    free(m->node);
    free(m->key);
    m->node = NULL;
    m->key = NULL;
    m->n = 0;
}

void dm_kmerge_clear(struct dm_kmerge *m)
{
    m->n = 0;
    if (m->node == NULL || m->key == NULL)
        return;
    for (size_t i = 0; i < 2 * (size_t)m->leaves; i++) {
        m->node[i] = DM_KMERGE_NONE;
        m->key[i] = UINT64_MAX;
    }
}

/* Whether stream a comes before stream b, either of them perhaps NONE
 * (which comes after every stream), their keys being equal or unused. */
static int tie_first(const struct dm_kmerge *m, uint32_t a, uint32_t b)
{
    if (a == DM_KMERGE_NONE)
        return 0;
    if (b == DM_KMERGE_NONE)
        return 1;
    return m->before(m->ctx, a, b) != 0;
}

/* Put w (a stream or NONE) in the leaf of stream s and replay it up (the
 * keyed loop is dm_kmerge_top_changed's, kmerge.h). */
void dm_kmerge__replay(struct dm_kmerge *m, unsigned s, uint32_t w)
{
    uint32_t *node = m->node;
    unsigned i = m->leaves + s;

    if (m->keys != NULL) {
        uint64_t *key = m->key;
        uint64_t wk = w != DM_KMERGE_NONE ? m->keys[w] : UINT64_MAX;

        node[i] = w;
        key[i] = wk;
        while (i > 1) {
            uint32_t o = node[i ^ 1];
            uint64_t ok = key[i ^ 1];

            if (ok < wk || (ok == wk && tie_first(m, o, w))) {
                w = o;
                wk = ok;
            }
            i >>= 1;
            node[i] = w;
            key[i] = wk;
        }
        return;
    }
    node[i] = w;
    while (i > 1) {
        uint32_t o = node[i ^ 1];

        if (tie_first(m, o, w))
            w = o;
        i >>= 1;
        node[i] = w;
    }
}

void dm_kmerge_push(struct dm_kmerge *m, unsigned stream)
{
    m->n++;
    dm_kmerge__replay(m, stream, stream);
}

void dm_kmerge_pop(struct dm_kmerge *m)
{
    if (m->n == 0)
        return;
    m->n--;
    dm_kmerge__replay(m, m->node[1], DM_KMERGE_NONE);
}
