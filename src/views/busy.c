/*
 * busy.c - the union of busy spans (busy.h).
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "views/busy.h"

/* The first window an empty dm_busy allocates (it doubles up to max). */
#define FIRST_CAP 64u

/* Fold the older half of the (full) window into folded_ns. */
static void fold_half(struct dm_busy *b)
{
    uint32_t half = b->n_spans / 2;

    for (uint32_t i = 0; i < half; i++)
        b->folded_ns += b->spans[i].end_ns - b->spans[i].start_ns;
    b->folded_end_ns = b->spans[half - 1].end_ns;
    memmove(&b->spans[0], &b->spans[half], (b->n_spans - half) * sizeof b->spans[0]);
    b->n_spans -= half;
}

int dm_busy_add(struct dm_busy *b, uint64_t s, uint64_t e)
{
    uint32_t lo, hi, first, last;

    for (;;) {
        if (s < b->folded_end_ns)
            s = b->folded_end_ns;
        if (e <= s)
            return 0;
        /* the first span ending at or after s: it may touch or overlap */
        lo = 0;
        hi = b->n_spans;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;

            if (b->spans[mid].end_ns < s)
                lo = mid + 1;
            else
                hi = mid;
        }
        first = last = lo;
        while (last < b->n_spans && b->spans[last].start_ns <= e)
            last++;
        if (last > first) {
            /* spans[first..last) merge with [s, e) into spans[first] */
            if (b->spans[first].start_ns < s)
                s = b->spans[first].start_ns;
            if (b->spans[last - 1].end_ns > e)
                e = b->spans[last - 1].end_ns;
            b->spans[first].start_ns = s;
            b->spans[first].end_ns = e;
            memmove(&b->spans[first + 1], &b->spans[last],
                    (b->n_spans - last) * sizeof b->spans[0]);
            b->n_spans -= last - first - 1;
            return 0;
        }
        if (b->n_spans < b->max)
            break;
        /* Full: fold, then place [s, e) again, cut at the new fold point. */
        fold_half(b);
    }
    if (b->n_spans == b->cap) {
        uint32_t cap = b->cap != 0 ? b->cap * 2 : FIRST_CAP;
        struct dm_busy_span *p;

        if (cap > b->max)
            cap = b->max;
        p = realloc(b->spans, cap * sizeof *p);
        if (p == NULL)
            return DM_ENOMEM;
        b->spans = p;
        b->cap = cap;
    }
    memmove(&b->spans[first + 1], &b->spans[first], (b->n_spans - first) * sizeof b->spans[0]);
    b->spans[first].start_ns = s;
    b->spans[first].end_ns = e;
    b->n_spans++;
    return 0;
}

uint64_t dm_busy_ns(const struct dm_busy *b)
{
    uint64_t sum = b->folded_ns;

    for (uint32_t i = 0; i < b->n_spans; i++)
        sum += b->spans[i].end_ns - b->spans[i].start_ns;
    return sum;
}

void dm_busy_reset(struct dm_busy *b)
{
    b->folded_ns = 0;
    b->folded_end_ns = 0;
    b->n_spans = 0;
}
