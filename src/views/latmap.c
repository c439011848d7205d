/*
 * latmap.c - the latency heat map (latmap.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "views/heat_draw.h"
#include "views/heatgrid.h"
#include "views/latmap.h"

#define NS_PER_US 1000u
#define FIRST_EDGE_US 10u     /* row 0 is [0, 10 us) */
#define ROWS_PER_DECADE 10u
#define DECADES 9u            /* 10 us .. 10^10 us */

/* 10^(k/10) for k = 0..9, to four significant digits (times 1000). */
static const uint32_t mantissa[ROWS_PER_DECADE] = {
    1000, 1259, 1585, 1995, 2512, 3162, 3981, 5012, 6310, 7943,
};

struct dm_latmap {
    const struct dm_heat_time *time;
    struct dm_heat_grid grid;
    uint64_t lower_us[DM_LAT_ROWS]; /* each row's lower edge */
    uint64_t lower_ns[DM_LAT_ROWS]; /* the same in ns */
    uint8_t row_of_pow2[64];      /* the row of 2^b ns */
    uint64_t max_ns;              /* the largest duration drawn */
    uint64_t no_duration;
};

static void lower_edges(uint64_t *lower)
{
    uint64_t decade = FIRST_EDGE_US; /* 10^(d + 1) us */

    lower[0] = 0;
    for (uint32_t d = 0; d <= DECADES; d++, decade *= 10)
        for (uint32_t k = 0; k < ROWS_PER_DECADE && 1 + d * ROWS_PER_DECADE + k < DM_LAT_ROWS; k++)
            lower[1 + d * ROWS_PER_DECADE + k] = (mantissa[k] * decade + 500) / 1000;
}

/* The leading zero bits of v != 0. */
static unsigned count_leading_zeros(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_clzll(v);
#else
    unsigned n = 0;

    while (!(v & (1ull << 63))) {
        v <<= 1;
        n++;
    }
    return n;
#endif
}

struct dm_latmap *dm_latmap_create(const struct dm_heat_time *time)
{
    struct dm_latmap *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    if (dm_heat_grid_init(&m->grid, DM_HEAT_COLS, DM_LAT_ROWS) != 0) {
        free(m);
        return NULL;
    }
    m->time = time;
    lower_edges(m->lower_us);
    for (uint32_t r = 0; r < DM_LAT_ROWS; r++)
        m->lower_ns[r] = m->lower_us[r] * NS_PER_US;
    for (uint32_t b = 0, r = 0; b < 64; b++) {
        while (r + 1 < DM_LAT_ROWS && m->lower_ns[r + 1] <= (1ull << b))
            r++;
        m->row_of_pow2[b] = (uint8_t)r;
    }
    return m;
}

void dm_latmap_destroy(struct dm_latmap *m)
{
    if (m == NULL)
        return;
    dm_heat_grid_free(&m->grid);
    free(m);
}

/* The row of a duration: from the row of its power of two, up at most a
 * few rows (ten rows a decade are about three a doubling). */
uint32_t dm_latmap_row(const struct dm_latmap *m, uint64_t d)
{
    uint32_t r = d == 0 ? 0 : m->row_of_pow2[63 - count_leading_zeros(d)];

    while (r + 1 < DM_LAT_ROWS && m->lower_ns[r + 1] <= d)
        r++;
    return r;
}

void dm_latmap_halve(struct dm_latmap *m)
{
    dm_heat_grid_halve(&m->grid, m->time->cols);
}

void dm_latmap_count(struct dm_latmap *m, uint32_t col, const struct dm_event *ev)
{
    if (ev->flags & DM_EV_NO_DURATION) {
        m->no_duration++;
        return;
    }
    dm_heat_grid_add(&m->grid, col, dm_latmap_row(m, ev->duration_ns));
    if (ev->duration_ns > m->max_ns)
        m->max_ns = ev->duration_ns;
}

uint64_t dm_latmap_drawn(const struct dm_latmap *m)
{
    return m->grid.total;
}

uint64_t dm_latmap_no_duration(const struct dm_latmap *m)
{
    return m->no_duration;
}

static void edges(const void *ctx, uint32_t row, uint64_t *lo, uint64_t *hi)
{
    const struct dm_latmap *m = ctx;

    *lo = m->lower_us[row];
    if (row + 1 < DM_LAT_ROWS)
        *hi = m->lower_us[row + 1];
    else /* the top row: up to the largest latency, which it includes */
        *hi = (m->max_ns + NS_PER_US - 1) / NS_PER_US;
}

/* The decades (0.01 ms, 0.1 ms, 1 ms, ...) get a label, in ms; row 0's
 * lower edge (0) would sit on 0.01's, so the axis title says it. */
static int label(const void *ctx, uint32_t row, char *buf, size_t cap)
{
    const struct dm_latmap *m = ctx;

    if (row == 0 || (row - 1) % ROWS_PER_DECADE != 0)
        return 0;
    if (cap >= 32 + DM_SVG_NUMBER_SLACK)
        dm_fixed_text_short(buf, m->lower_us[row], 3);
    return 1;
}

void dm_latmap_draw(const struct dm_latmap *m, struct dm_svg *s, int xml_decl,
                    const char *source, uint64_t start_wall_ns)
{
    char title[512], sub[512];
    struct dm_heat_panel panel;
    struct dm_heat_map map;
    uint32_t top = m->grid.total > 0 ? dm_latmap_row(m, m->max_ns) + 1 : 1;
    int n;

    snprintf(title, sizeof title, "diskmon latency heat map: %s", source);
    n = snprintf(sub, sizeof sub, "%llu request%s drawn; 10 latency rows per decade, the "
                 "bottom one from 0", (unsigned long long)m->grid.total,
                 m->grid.total == 1 ? "" : "s");
    if (m->no_duration > 0 && n > 0 && (size_t)n < sizeof sub)
        snprintf(sub + n, sizeof sub - (size_t)n, "; %llu without a duration not drawn",
                 (unsigned long long)m->no_duration);
    panel.grid = &m->grid;
    panel.disk = NULL;
    panel.note = NULL;
    panel.disk_size = 0;
    panel.rows.drawn = top;
    panel.rows.edges = edges;
    panel.rows.ctx = m;
    panel.rows.attr_lo = "data-lat0";
    panel.rows.attr_hi = "data-lat1";
    panel.rows.decimals = 3;
    panel.rows.unit = "ms";
    panel.rows.label = label;
    panel.rows.axis = "Latency (ms, log scale)";
    map.title = title;
    map.subtitle = sub;
    map.time = m->time;
    map.panels = &panel;
    map.n_panels = 1;
    map.start_wall_ns = start_wall_ns;
    map.cell_h = 6;
    dm_heat_draw(s, &map, xml_decl);
}
