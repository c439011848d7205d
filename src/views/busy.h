/*
 * busy.h - busy time of a disk: the length of the union of its requests'
 * spans [completion - duration, completion), for --top's %util
 * (views/top.h) and --metrics' busy_seconds_total (views/metrics_state.h).
 *
 * The rule. Requests come in completion order, so a new span nearly always
 * joins or follows the last few. The union is kept as at most max disjoint
 * spans sorted by start (touching spans merge). When a span that merges
 * with none must be added to a full window, the older half of the window
 * is folded: its length added to folded_ns, and folded_end_ns (the end of
 * the last folded span) becomes the point before which nothing counts
 * again; the new span is then cut at that point. So busy time never counts
 * a moment twice and never goes down; it undercounts only the part of a
 * request that reaches back before the fold point, which takes a request
 * in flight across max / 2 separate busy periods of its own disk. Memory
 * is the window: max spans per disk.
 *
 * Storage: spans has room for cap spans and grows (realloc) while cap <
 * max; a caller with a fixed array of its own gives cap == max and is
 * never reallocated.
 */
#ifndef DM_BUSY_H
#define DM_BUSY_H

#include <stdint.h>

/* A busy period: [start_ns, end_ns). */
struct dm_busy_span {
    uint64_t start_ns;
    uint64_t end_ns;
};

struct dm_busy {
    uint64_t folded_ns;          /* the folded spans' busy time, summed */
    uint64_t folded_end_ns;      /* nothing before this counts again */
    struct dm_busy_span *spans;  /* sorted, disjoint; room for cap */
    uint32_t n_spans, cap, max;
};

/* Add [s, e) to the union. Returns 0, or DM_ENOMEM when the window could
 * not grow (the span is not counted: busy time is then low). */
int dm_busy_add(struct dm_busy *b, uint64_t s, uint64_t e);

/* The busy time so far, in ns. */
uint64_t dm_busy_ns(const struct dm_busy *b);

/* Start again at zero, keeping the storage. */
void dm_busy_reset(struct dm_busy *b);

#endif /* DM_BUSY_H */
