/*
 * report.h - --report FILE.html: one self-contained page about the run,
 * readable on a phone and printable, that opens anywhere with no network:
 * no script, no style sheet, font or image from elsewhere; the pictures
 * are inline SVG (output/svg.h) and the style one inline <style>.
 *
 * It holds: the source and the time span, the lost counts; the -s table
 * (the text of views/stats.h, counts as -s prints them); the --hist
 * histograms as bars; both heat maps (latmap.h, offmap.h); reads/s,
 * writes/s and MB/s over time (the same doubling columns, heatgrid.h);
 * the top processes and files by bytes where the source names them
 * (tally.h).
 *
 * Memory, bounded like the maps': the two maps (pictures_view.c, about
 * 1.4 MiB at most), the -s statistics (stats.h: up to 512 KiB per disk and request), the
 * throughput columns (300 x 3 counts) and two name tallies (4096 names
 * each: about 1.1 MiB for file paths).
 */
#ifndef DM_REPORT_H
#define DM_REPORT_H

#include "diskmon.h"
#include "output/text.h"
#include "views/view.h"

struct dm_svg;

struct dm_report;

/* What the page says about the run besides the events. */
struct dm_report_run {
    const char *source;          /* the trace, or the live disks */
    const char *backend;         /* etw, tracefs, perf, replay */
    uint64_t start_wall_ns;      /* 0: unknown */
    uint64_t elapsed_ns;         /* the capture's length so far */
    struct dm_loss loss;
    int final;                   /* the run's end (else a live run's page so far) */
};

struct dm_heat_time;
struct dm_disk_index;

/* The page's own counts (the maps are the caller's: pictures_view.c),
 * on the time axis the caller owns and places requests on (heatgrid.h);
 * no_latency: the source has no response times (views/view.h), so the
 * table's latency columns and the histograms say so, as -s and --hist do.
 * NULL when out of memory. */
struct dm_report *dm_report_create(const struct dm_heat_time *time, int no_latency);
void dm_report_destroy(struct dm_report *r);

/* The axis' step doubled: the throughput columns merge. */
void dm_report_halve(struct dm_report *r);
/* ev in column col; disk its index in the caller's disks (views/disks.h,
 * DM_STATS_DISKS of them at most, as -s keeps: stats.h), -1 for none. */
void dm_report_count(struct dm_report *r, uint32_t col, const struct dm_disk_index *disks,
                     int disk, const struct dm_event *ev);

/* The maps a page holds inline, in the page's order. */
enum dm_report_map { DM_REPORT_LATENCY_MAP, DM_REPORT_OFFSET_MAP };

/* Draws one of the maps inline where the page wants it: an <svg> element
 * without the XML declaration, through s, a writer of its own on the
 * page's text. */
typedef void dm_report_draw_map(void *ctx, enum dm_report_map map, struct dm_svg *s);

/* The whole page through s (whose text may be handed on as it grows,
 * svg.h), each map drawn in its place by draw_map. */
void dm_report_render(const struct dm_report *r, const struct dm_report_run *run,
                      dm_report_draw_map *draw_map, void *ctx, struct dm_svg *s);

#endif /* DM_REPORT_H */
