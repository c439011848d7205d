/*
 * window.c - the time-order window (window.h): a binary min-heap on
 * (time, arrival), and the latest time seen.
 */
#include <stdlib.h>

#include "input/window.h"

struct dm_window {
    struct dm_window_row *heap;
    size_t n, cap;
    uint64_t span_ns;
    uint64_t newest_ns;     /* the latest time pushed */
    uint64_t last_out_ns;   /* the time of the last row given out */
    int any_out;
    uint32_t next_seq;
    uint64_t late;
};

struct dm_window *dm_window_create(size_t cap, uint64_t span_ns)
{
    struct dm_window *w = calloc(1, sizeof *w);

    if (w == NULL)
        return NULL;
    w->heap = malloc(cap * sizeof *w->heap);
    if (w->heap == NULL) {
        free(w);
        return NULL;
    }
    w->cap = cap;
    w->span_ns = span_ns;
    return w;
}

void dm_window_destroy(struct dm_window *w)
{
    if (w == NULL)
        return;
    free(w->heap);
    free(w);
}

/* a before b: the earlier time, then the earlier arrival (seq wraps after
 * 2^32 rows; the window holds far fewer, so the difference decides). */
static int before(const struct dm_window_row *a, const struct dm_window_row *b)
{
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns;
    return (int32_t)(a->seq - b->seq) < 0;
}

void dm_window_push(struct dm_window *w, const struct dm_window_row *row)
{
    struct dm_window_row r = *row;
    size_t i;

    if (w->n == w->cap)
        return; /* the caller broke the contract; never overrun */
    r.seq = w->next_seq++;
    i = w->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (!before(&r, &w->heap[parent]))
            break;
        w->heap[i] = w->heap[parent];
        i = parent;
    }
    w->heap[i] = r;
    if (r.time_ns > w->newest_ns)
        w->newest_ns = r.time_ns;
}

static void sift_down(struct dm_window *w)
{
    struct dm_window_row last = w->heap[w->n];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= w->n)
            break;
        if (c + 1 < w->n && before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    w->heap[i] = last;
}

int dm_window_pop(struct dm_window *w, struct dm_window_row *out, int flush)
{
    if (w->n == 0)
        return 0;
    if (!flush && w->n < w->cap && w->heap[0].time_ns + w->span_ns > w->newest_ns &&
        w->heap[0].time_ns <= UINT64_MAX - w->span_ns)
        return 0;
    *out = w->heap[0];
    w->n--;
    if (w->n > 0)
        sift_down(w);
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
