/*
 * window.c - the time-order window (window.h): a binary min-heap of
 * 16-byte keys (time, arrival, slot) over a table of the rows themselves,
 * so that a sift moves keys, not rows; and the latest time seen.
 *
 * A pop sifts bottom-up (Floyd's variant): the hole left at the root is
 * walked down to a leaf along the smaller children, then the heap's last
 * key is sifted up from there. The last key is one of the latest rows (the
 * heap's bottom holds them), so it seldom climbs: about one compare per
 * level instead of two. Measured with callgrind on 300,000 MSR rows: the
 * window's part of a row went from about 580 instructions to about 390.
 */
#include <stdlib.h>

#include "input/window.h"

struct key {
    uint64_t time_ns;
    uint32_t seq;        /* arrival order, for rows of the same time */
    uint32_t slot;       /* the row's place in rows[] */
};

struct dm_window {
    struct key *heap;
    struct dm_window_row *rows;
    uint32_t *free_slots;    /* a stack of the slots not in use */
    size_t n, cap, n_free;
    uint64_t span_ns;
    uint64_t newest_ns;      /* the latest time pushed */
    uint64_t last_out_ns;    /* the time of the last row given out */
    int any_out;
    uint32_t next_seq;
    uint64_t late;
};

struct dm_window *dm_window_create(size_t cap, uint64_t span_ns)
{
    struct dm_window *w = calloc(1, sizeof *w);

    if (w == NULL || cap == 0 || cap > UINT32_MAX)
        goto fail;
    w->heap = malloc(cap * sizeof *w->heap);
    w->rows = malloc(cap * sizeof *w->rows);
    w->free_slots = malloc(cap * sizeof *w->free_slots);
    if (w->heap == NULL || w->rows == NULL || w->free_slots == NULL)
        goto fail;
    for (size_t i = 0; i < cap; i++)
        w->free_slots[i] = (uint32_t)(cap - 1 - i);
    w->n_free = cap;
    w->cap = cap;
    w->span_ns = span_ns;
    return w;
fail:
    dm_window_destroy(w);
    return NULL;
}

void dm_window_destroy(struct dm_window *w)
{
    if (w == NULL)
        return;
    free(w->heap);
    free(w->rows);
    free(w->free_slots);
    free(w);
}

/* a before b: the earlier time, then the earlier arrival (seq wraps after
 * 2^32 rows; the window holds far fewer, so the difference decides). */
static int before(const struct key *a, const struct key *b)
{
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns;
    return (int32_t)(a->seq - b->seq) < 0;
}

/* Put k at hole i and move it up to its place. */
static void sift_up(struct dm_window *w, size_t i, struct key k)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (!before(&k, &w->heap[parent]))
            break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = k;
}

void dm_window_push(struct dm_window *w, const struct dm_window_row *row)
{
    struct key k;

    if (w->n == w->cap || w->n_free == 0)
        return; /* the caller broke the contract; never overrun */
    k.time_ns = row->time_ns;
    k.seq = w->next_seq++;
    k.slot = w->free_slots[--w->n_free];
    w->rows[k.slot] = *row;
    w->rows[k.slot].seq = k.seq;
    sift_up(w, w->n++, k);
    if (k.time_ns > w->newest_ns)
        w->newest_ns = k.time_ns;
}

/* Remove the root: the hole goes down to a leaf along the smaller
 * children, and the last key comes up from there. */
static void remove_root(struct dm_window *w)
{
    struct key last = w->heap[--w->n];
    size_t i = 0;

    if (w->n == 0)
        return;
    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= w->n)
            break;
        if (c + 1 < w->n && before(&w->heap[c + 1], &w->heap[c]))
            c++;
        w->heap[i] = w->heap[c];
        i = c;
    }
    sift_up(w, i, last);
}

int dm_window_pop(struct dm_window *w, struct dm_window_row *out, int flush)
{
    const struct key *top;

    if (w->n == 0)
        return 0;
    top = &w->heap[0];
    if (!flush && w->n < w->cap && top->time_ns <= UINT64_MAX - w->span_ns &&
        top->time_ns + w->span_ns > w->newest_ns)
        return 0;
    *out = w->rows[top->slot];
    w->free_slots[w->n_free++] = top->slot;
    remove_root(w);
    if (w->any_out && out->time_ns < w->last_out_ns)
        w->late++;
    else
        w->last_out_ns = out->time_ns;
    w->any_out = 1;
    return 1;
}

uint64_t dm_window_late(const struct dm_window *w)
{
    return w->late;
}
