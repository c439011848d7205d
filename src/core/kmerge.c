/*
 * kmerge.c - the k-way merge heap (kmerge.h). Sifts move a hole rather than
 * swapping, so each level costs one comparison against the moving index.
 */
#include <stdlib.h>

#include "core/kmerge.h"
#include "diskmon.h"

int dm_kmerge_init(struct dm_kmerge *m, unsigned max, dm_kmerge_before_fn before,
                   const void *ctx)
{
    m->heap = calloc(max > 0 ? max : 1, sizeof *m->heap);
    m->n = 0;
    m->before = before;
    m->ctx = ctx;
    m->keys = NULL;
    return m->heap != NULL ? 0 : DM_ENOMEM;
}

void dm_kmerge_use_keys(struct dm_kmerge *m, const uint64_t *keys)
{
    m->keys = keys;
}

/* The merge order: the keys when there are, before() for ties. */
static inline int first(const struct dm_kmerge *m, unsigned a, unsigned b)
{
    if (m->keys != NULL && m->keys[a] != m->keys[b])
        return m->keys[a] < m->keys[b];
    return m->before(m->ctx, a, b);
}

void dm_kmerge_free(struct dm_kmerge *m)
{
    free(m->heap);
    m->heap = NULL;
    m->n = 0;
}

void dm_kmerge_clear(struct dm_kmerge *m)
{
    m->n = 0;
}

static void sift_down(struct dm_kmerge *m, unsigned i)
{
    unsigned *h = m->heap, n = m->n, v = h[i];

    for (;;) {
        unsigned c = 2 * i + 1;

        if (c >= n)
            break;
        if (c + 1 < n && first(m, h[c + 1], h[c]))
            c++;
        if (!first(m, h[c], v))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

void dm_kmerge_push(struct dm_kmerge *m, unsigned stream)
{
    unsigned *h = m->heap, i = m->n++;

    while (i > 0) {
        unsigned p = (i - 1) / 2;

        if (!first(m, stream, h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = stream;
}

void dm_kmerge_top_changed(struct dm_kmerge *m)
{
    if (m->n > 1)
        sift_down(m, 0);
}

void dm_kmerge_pop(struct dm_kmerge *m)
{
    if (m->n == 0)
        return;
    m->heap[0] = m->heap[--m->n];
    if (m->n > 0)
        sift_down(m, 0);
}
