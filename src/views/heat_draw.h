/*
 * heat_draw.h - a heat map's panels drawn as SVG (output/svg.h): the
 * cells, the axes, the colour legend and the title, for --heatmap and
 * --offset-map (and their copies inside --report). The counts come from
 * heatgrid.h; what the rows mean comes from the map (latency buckets,
 * byte-offset buckets) through struct dm_heat_rows.
 *
 * Colour: the count of a cell on viridis (matplotlib's perceptually
 * uniform sequential colour map, by Stefan van der Walt and Nathaniel
 * Smith, CC0: its 256-entry table, entries 0, 32, ..., 224 and 255 as the
 * nine stops), on a log scale of the counts from 1 to the largest, so a
 * cell of one request stays visible beside one of thousands. Empty cells
 * are not drawn.
 */
#ifndef DM_HEAT_DRAW_H
#define DM_HEAT_DRAW_H

#include <stddef.h>
#include <stdint.h>

#include "output/svg.h"
#include "views/heatgrid.h"

/* What the rows of a panel are. */
struct dm_heat_rows {
    uint32_t drawn;              /* rows 0 .. drawn - 1, bottom up */
    /* Row r's edges in the unit of the attributes: [*lo, *hi). */
    void (*edges)(const void *ctx, uint32_t row, uint64_t *lo, uint64_t *hi);
    const void *ctx;
    const char *attr_lo, *attr_hi; /* "data-lat0", "data-lat1" */
    unsigned decimals;           /* the attribute is the edge / 10^decimals */
    const char *unit;            /* the tooltip's unit: "ms", "bytes" */
    /* 1 with the text of row r's lower edge in buf (cap bytes) when it
     * gets an axis label, else 0 */
    int (*label)(const void *ctx, uint32_t row, char *buf, size_t cap);
    const char *axis;            /* the vertical axis title */
};

/* A panel: one grid, its rows, and (offset map) its disk. */
struct dm_heat_panel {
    const struct dm_heat_grid *grid;
    struct dm_heat_rows rows;
    const char *disk;            /* data-disk and the panel's heading; NULL: none */
    const char *note;            /* after the disk in the heading; NULL: none */
    uint64_t disk_size;          /* the cells' group's data-disk-size; 0: none */
};

/* The whole picture. */
struct dm_heat_map {
    const char *title;           /* first title line */
    const char *subtitle;        /* second line (what was drawn); dm_heat_draw
                                  * adds what the time axis did to fit */
    const struct dm_heat_time *time;
    const struct dm_heat_panel *panels;
    int n_panels;
    uint64_t start_wall_ns;      /* wall clock at time 0; 0: unknown */
    uint32_t cell_h;             /* pixels per row */
};

/* Draw the map as one <svg> into s; xml_decl: a file of its own. */
void dm_heat_draw(struct dm_svg *s, const struct dm_heat_map *map, int xml_decl);

#endif /* DM_HEAT_DRAW_H */
