/*
 * heatgrid.c - time columns that double, counts that merge (heatgrid.h).
 */
#include <stdlib.h>
#include <string.h>

#include "views/heatgrid.h"

void dm_heat_time_init(struct dm_heat_time *tm, uint32_t cols, uint64_t step_ms)
{
    tm->step_ms = step_ms;
    tm->cols = cols;
    tm->used = 0;
    tm->doublings = 0;
    tm->last_lo_ns = tm->last_hi_ns = 0; /* empty: the first request divides */
    tm->last_col = 0;
}

unsigned dm_heat_time_place(struct dm_heat_time *tm, uint64_t t_ns, uint32_t *col)
{
    unsigned doubled = 0;
    uint64_t step_ns, c;

    if (t_ns >= tm->last_lo_ns && t_ns < tm->last_hi_ns) {
        *col = tm->last_col;
        return 0;
    }
    step_ns = tm->step_ms * NS_PER_MS_U64;
    c = t_ns / step_ns;

    /* Past the last column (its upper edge too: a request there would
     * land outside its cell once the columns merged). */
    while (c >= tm->cols) {
        tm->step_ms *= 2;
        tm->used = (tm->used + 1) / 2;
        tm->doublings++;
        doubled++;
        step_ns = tm->step_ms * NS_PER_MS_U64;
        c = t_ns / step_ns;
    }
    if (c + 1 > tm->used)
        tm->used = (uint32_t)c + 1;
    *col = (uint32_t)c;
    tm->last_col = (uint32_t)c;
    tm->last_lo_ns = c * step_ns;
    tm->last_hi_ns = tm->last_lo_ns + step_ns;
    return doubled;
}

int dm_heat_grid_init(struct dm_heat_grid *g, uint32_t cols, uint32_t rows)
{
    g->rows = rows;
    g->total = 0;
    g->counts = calloc((size_t)cols * rows, sizeof *g->counts);
    return g->counts != NULL ? 0 : -1;
}

void dm_heat_grid_free(struct dm_heat_grid *g)
{
    free(g->counts);
    g->counts = NULL;
}

void dm_heat_grid_halve(struct dm_heat_grid *g, uint32_t cols)
{
    uint64_t *c = g->counts;

    for (uint32_t k = 0; k < cols / 2; k++)
        for (uint32_t r = 0; r < g->rows; r++)
            c[(uint64_t)k * g->rows + r] =
                c[(uint64_t)2 * k * g->rows + r] + c[(uint64_t)(2 * k + 1) * g->rows + r];
    /* an odd last column has no neighbour: it stands alone */
    if (cols % 2 != 0)
        memmove(c + (uint64_t)(cols / 2) * g->rows, c + (uint64_t)(cols - 1) * g->rows,
                g->rows * sizeof *c);
    memset(c + (uint64_t)((cols + 1) / 2) * g->rows, 0,
           (uint64_t)(cols - (cols + 1) / 2) * g->rows * sizeof *c);
}

void dm_heat_grid_halve_rows(struct dm_heat_grid *g, uint32_t cols)
{
    for (uint32_t k = 0; k < cols; k++) {
        uint64_t *c = g->counts + (uint64_t)k * g->rows;

        for (uint32_t r = 0; r < g->rows / 2; r++)
            c[r] = c[2 * r] + c[2 * r + 1];
        if (g->rows % 2 != 0)
            c[g->rows / 2] = c[g->rows - 1];
        memset(c + (g->rows + 1) / 2, 0, (g->rows - (g->rows + 1) / 2) * sizeof *c);
    }
}
