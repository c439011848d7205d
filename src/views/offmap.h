/*
 * offmap.h - the offset map's counts (--offset-map, and the report's
 * copy): time columns (heatgrid.h, shared by every disk) by byte-offset
 * rows, one panel per disk, drawn by heat_draw.h. Reads, writes, flushes
 * and discards alike (--op draws one kind: the filter runs before the
 * views, as for the event lines).
 *
 * Rows are linear, DM_OFF_ROWS of them per disk, each a power of two of
 * bytes high: [r * h, (r + 1) * h) in whole bytes. A request is in the
 * row of its byte offset (the json rows' "offset"). Where the source knows
 * the disk's size (dm_source.disk_size, diskmon.h: sysfs on Linux, the
 * PhyDisk record of a trace; not yet Windows live), h is the least
 * power of two (and at least 2^DM_OFF_MIN_ROW_SHIFT) whose DM_OFF_ROWS rows
 * cover the disk, and the panel draws the rows from 0 to the disk's end,
 * its heading naming the size and where it came from. Where not (csv,
 * json and the other inputs), h starts at 2^DM_OFF_FIRST_ROW_SHIFT and the
 * rows end at the largest offset seen. Either way h doubles (neighbouring
 * rows merge) when a request starts past the last row; a request at or
 * past the size the source gave makes the panel one of the largest
 * offset seen (the size was wrong, and the map does not repeat it).
 *
 * Memory: DM_HEAT_COLS x DM_OFF_ROWS counts of 8 bytes per disk (153,600
 * bytes), for at most DM_OFF_DISKS disks (1.2 MiB); requests on further
 * disks are counted and said in the title, not drawn.
 */
#ifndef DM_OFFMAP_H
#define DM_OFFMAP_H

#include <stdint.h>

#include "diskmon.h"
#include "output/svg.h"

#define DM_OFF_ROWS 64u
#define DM_OFF_DISKS 8
#define DM_OFF_FIRST_ROW_SHIFT 20 /* 1 MiB: 64 MiB before the first doubling */
#define DM_OFF_MIN_ROW_SHIFT 12   /* 4 KiB rows at least: a page, a sector of 4Kn disks */

struct dm_disk_index;

struct dm_offmap;
struct dm_heat_time;

/* The map on a time axis the caller owns and places requests on (as
 * latmap.h), of the disks of the caller's index (views/disks.h), their
 * sizes from disk_size (NULL: never known; struct dm_view_config). NULL
 * when out of memory. */
struct dm_offmap *dm_offmap_create(const struct dm_heat_time *time,
                                   const struct dm_disk_index *index,
                                   uint64_t (*disk_size)(const void *, uint32_t, const char **),
                                   const void *disk_size_ctx);
void dm_offmap_destroy(struct dm_offmap *m);

/* The axis' step doubled: neighbouring columns merge. */
void dm_offmap_halve(struct dm_offmap *m);
/* Count ev in column col; disk is its index in the caller's index (-1:
 * none). A disk past DM_OFF_DISKS, or whose grid could not be made, is
 * counted as not drawn. */
void dm_offmap_count(struct dm_offmap *m, uint32_t col, int disk, const struct dm_event *ev);

void dm_offmap_draw(const struct dm_offmap *m, struct dm_svg *s, int xml_decl,
                    const char *source, uint64_t start_wall_ns);

uint64_t dm_offmap_drawn(const struct dm_offmap *m);

#endif /* DM_OFFMAP_H */
