/*
 * heatgrid.h - the counts behind a heat map (--heatmap, --offset-map):
 * columns of time by rows of buckets, bounded whatever the run's length.
 *
 * Time: column c holds the requests whose Time column value t (ns since
 * the start, the json rows' "time") has c * step <= t < (c + 1) * step,
 * step a whole number of milliseconds. When a request falls past the last
 * column the step doubles and each pair of neighbouring columns becomes
 * one (an exact merge: the doubled columns' edges are edges of the old
 * ones), as often as needed. No request lies on the upper edge of the
 * last column drawn (it would have made a column after it), so the map
 * may call that column closed and still agree with the rows. So a grid
 * holds at most cols * rows counts however long the run is, and a run
 * longer than cols steps ends with between cols / 2 and cols columns.
 *
 * The counts are 64-bit: a week-long run at a million requests a second
 * puts 2e9 requests in one column of 2,000 s.
 */
#ifndef DM_HEATGRID_H
#define DM_HEATGRID_H

#include <stdint.h>

#define NS_PER_MS_U64 1000000ull

/* Columns at most: between 150 and 300 are drawn once the run is longer
 * than 300 steps (the issue asks for about 150 to 300). */
#define DM_HEAT_COLS 300u
/* The first step without --heatmap-step, doubled to fit. */
#define DM_HEAT_FIRST_STEP_MS 1u

/* The time axis, shared by the grids of one map (an offset map's panels). */
struct dm_heat_time {
    uint64_t step_ms;            /* column width, whole milliseconds */
    uint32_t cols;               /* the bound */
    uint32_t used;               /* highest column with a request, + 1 */
    unsigned doublings;          /* how often step_ms doubled */
    /* The last column placed, [last_lo_ns, last_hi_ns): requests come in
     * time order mostly, and most fall in the column of the one before. */
    uint64_t last_lo_ns, last_hi_ns;
    uint32_t last_col;
};

struct dm_heat_grid {
    uint32_t rows;
    uint64_t *counts;            /* [col * rows + row], cols * rows of them */
    uint64_t total;
};

void dm_heat_time_init(struct dm_heat_time *tm, uint32_t cols, uint64_t step_ms);

/* The column of time t_ns. Returns the number of doublings this needed
 * first (0 mostly): the caller merges its grids' columns that many times
 * (dm_heat_grid_halve) before it counts. */
unsigned dm_heat_time_place(struct dm_heat_time *tm, uint64_t t_ns, uint32_t *col);

/* 0, or -1 when out of memory. */
int dm_heat_grid_init(struct dm_heat_grid *g, uint32_t cols, uint32_t rows);
void dm_heat_grid_free(struct dm_heat_grid *g);

/* Each pair of columns (2k, 2k+1) into column k: the step doubled. */
void dm_heat_grid_halve(struct dm_heat_grid *g, uint32_t cols);

/* Each pair of rows (2k, 2k+1) into row k (linear rows whose height doubled). */
void dm_heat_grid_halve_rows(struct dm_heat_grid *g, uint32_t cols);

static inline void dm_heat_grid_add(struct dm_heat_grid *g, uint32_t col, uint32_t row)
{
    g->counts[(uint64_t)col * g->rows + row]++;
    g->total++;
}

static inline uint64_t dm_heat_grid_at(const struct dm_heat_grid *g, uint32_t col, uint32_t row)
{
    return g->counts[(uint64_t)col * g->rows + row];
}

#endif /* DM_HEATGRID_H */
