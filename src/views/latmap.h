/*
 * latmap.h - the latency heat map's counts (--heatmap, and the report's
 * copy): time columns (heatgrid.h) by latency rows on a log scale, drawn
 * by heat_draw.h.
 *
 * Rows, in whole microseconds: row 0 is [0, 10 us); then ten rows per
 * decade from 10 us to 10^10 us (about 2.8 hours), row k's lower edge
 * 10^(1 + (k - 1) / 10) us rounded to the microsecond (four significant
 * digits of the mantissa, then rounded: 10, 13, 16, 20, 25, 32, 40, 50, 63,
 * 79, 100, 126, ...); the last row holds everything from 10^10 us up to the
 * largest latency seen, which it includes. A request is in the row whose
 * edges hold its duration in ns (the json rows' duration_ms, exact):
 * lower * 1000 <= duration_ns < upper * 1000. The map draws the rows up
 * to the one of the largest latency.
 *
 * Memory: DM_HEAT_COLS (heatgrid.h) x DM_LAT_ROWS counts of 8 bytes (220,800 bytes),
 * whatever the run's length.
 */
#ifndef DM_LATMAP_H
#define DM_LATMAP_H

#include <stdint.h>

#include "diskmon.h"
#include "output/svg.h"

/* 1 row under 10 us, 9 decades of 10, 1 above: see above. */
#define DM_LAT_ROWS 92u

struct dm_latmap;
struct dm_heat_time;

/* The map on the time axis time (heatgrid.h), which the caller owns and
 * places each request on, for every map that shares it (pictures.h).
 * NULL when out of memory. */
struct dm_latmap *dm_latmap_create(const struct dm_heat_time *time);
void dm_latmap_destroy(struct dm_latmap *m);

/* The axis' step doubled: neighbouring columns merge. */
void dm_latmap_halve(struct dm_latmap *m);
/* Count ev in column col of the axis (a request without a duration is
 * only counted apart). */
void dm_latmap_count(struct dm_latmap *m, uint32_t col, const struct dm_event *ev);

/* The row of a duration in ns (latmap.c; for tests too). */
uint32_t dm_latmap_row(const struct dm_latmap *m, uint64_t duration_ns);

/* The map as SVG; source names the input for the title. */
void dm_latmap_draw(const struct dm_latmap *m, struct dm_svg *s, int xml_decl,
                    const char *source, uint64_t start_wall_ns);

/* Requests drawn, and requests left out for want of a duration. */
uint64_t dm_latmap_drawn(const struct dm_latmap *m);
uint64_t dm_latmap_no_duration(const struct dm_latmap *m);

#endif /* DM_LATMAP_H */
