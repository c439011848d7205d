/*
 * pictures_view.c - the picture view: --heatmap FILE.svg (latmap.h),
 * --offset-map FILE.svg (offmap.h) and --report FILE.html (report.h).
 *
 * One view for the three because they share their counts: one time axis
 * (heatgrid.h) on which each request is placed once, one latency map and
 * one offset map however many of the files ask for them, each map drawn
 * from them into its SVG file and again inline in the report. Every
 * request is counted once in each structure, so the three files cost
 * little more than the most expensive one alone (docs/benchmarks.md).
 *
 * Live, the files are rewritten every cfg->heat_ns on the capture clock
 * (10 s, or the --top/--metrics interval) and once at the end, through
 * file_out.h (the --metrics rules).
 */
#include <stdlib.h>

#include "output/svg.h"
#include "platform/platform.h"
#include "views/disks.h"
#include "views/file_out.h"
#include "views/heatgrid.h"
#include "views/latmap.h"
#include "views/offmap.h"
#include "views/report.h"
#include "views/stats.h"
#include "views/view.h"

/* The files, in the order they are written. */
enum { OUT_LATENCY, OUT_OFFSET, OUT_REPORT, OUTS };

struct pictures {
    const struct dm_view_config *cfg;
    struct dm_heat_time time;
    /* Which disk a request is on, found once for the offset map and the
     * report's -s figures (as many disks as -s keeps: stats.h). */
    struct dm_disk_index disks;
    struct dm_disk_id disk_ids[DM_STATS_DISKS];
    struct dm_latmap *lat;       /* NULL: neither --heatmap nor --report */
    struct dm_offmap *off;       /* NULL: neither --offset-map nor --report */
    struct dm_report *report;    /* NULL: no --report */
    struct dm_file_out out[OUTS];
    int wanted[OUTS];
    struct dm_text buf[OUTS];    /* each file's bytes on their way out (svg.h's spill) */
    struct dm_report_run run;
    uint64_t next_ns;            /* live: the next write, on the capture clock */
};

static void pictures_destroy(void *view)
{
    struct pictures *p = view;

    dm_latmap_destroy(p->lat);
    dm_offmap_destroy(p->off);
    dm_report_destroy(p->report);
    for (int i = 0; i < OUTS; i++)
        dm_text_free(&p->buf[i]);
    free(p);
}

static int pictures_create(const struct dm_view_config *cfg, void **view)
{
    static const char *const what[OUTS] = {"the heat map", "the offset map", "the report"};
    const char *path[OUTS] = {cfg->heatmap_path, cfg->offset_map_path, cfg->report_path};
    struct pictures *p;

    *view = NULL;
    if (path[OUT_LATENCY] == NULL && path[OUT_OFFSET] == NULL && path[OUT_REPORT] == NULL)
        return 0;
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return DM_ENOMEM;
    p->cfg = cfg;
    p->disks.ids = p->disk_ids;
    p->disks.max = DM_STATS_DISKS;
    dm_heat_time_init(&p->time, DM_HEAT_COLS,
                      cfg->heatmap_step_ms != 0 ? cfg->heatmap_step_ms : DM_HEAT_FIRST_STEP_MS);
    for (int i = 0; i < OUTS; i++) {
        p->wanted[i] = path[i] != NULL;
        dm_file_out_init(&p->out[i], path[i], what[i], cfg->live, cfg->errf);
    }
    if (path[OUT_LATENCY] != NULL || path[OUT_REPORT] != NULL)
        p->lat = dm_latmap_create(&p->time);
    if (path[OUT_OFFSET] != NULL || path[OUT_REPORT] != NULL)
        p->off = dm_offmap_create(&p->time, &p->disks, cfg->disk_size, cfg->disk_size_ctx);
    if (path[OUT_REPORT] != NULL)
        p->report = dm_report_create(&p->time, cfg->no_latency);
    if ((p->lat == NULL && (path[OUT_LATENCY] != NULL || path[OUT_REPORT] != NULL)) ||
        (p->off == NULL && (path[OUT_OFFSET] != NULL || path[OUT_REPORT] != NULL)) ||
        (p->report == NULL && path[OUT_REPORT] != NULL)) {
        pictures_destroy(p);
        return DM_ENOMEM;
    }
    p->run.source = cfg->source_label;
    p->run.backend = cfg->source_name;
    p->run.start_wall_ns = cfg->start_wall_ns;
    *view = p; /* next_ns 0: the first tick writes at once, so a live file
                * exists (valid, empty) from the start */
    return 0;
}

/* Each request placed once on the axis, then counted in each structure. */
static void pictures_add(void *view, const struct dm_event *ev, size_t n)
{
    struct pictures *p = view;

    for (size_t i = 0; i < n; i++) {
        uint32_t col;
        int disk = p->off != NULL || p->report != NULL ? dm_disk_index_fast(&p->disks, &ev[i]) : -1;

        for (unsigned k = dm_heat_time_place(&p->time, ev[i].time_ns, &col); k > 0; k--) {
            if (p->lat != NULL)
                dm_latmap_halve(p->lat);
            if (p->off != NULL)
                dm_offmap_halve(p->off);
            if (p->report != NULL)
                dm_report_halve(p->report);
        }
        if (p->lat != NULL)
            dm_latmap_count(p->lat, col, &ev[i]);
        if (p->off != NULL)
            dm_offmap_count(p->off, col, disk, &ev[i]);
        if (p->report != NULL)
            dm_report_count(p->report, col, &p->disks, disk, &ev[i]);
    }
}

static void spill(void *ctx, struct dm_text *t)
{
    dm_file_out_spill(ctx, t);
}

/* The report's maps, drawn inline. */
static void draw_map(void *ctx, enum dm_report_map map, struct dm_svg *s)
{
    struct pictures *p = ctx;

    if (map == DM_REPORT_LATENCY_MAP)
        dm_latmap_draw(p->lat, s, 0, p->cfg->source_label, p->cfg->start_wall_ns);
    else
        dm_offmap_draw(p->off, s, 0, p->cfg->source_label, p->cfg->start_wall_ns);
}

/* One file drawn anew, its bytes going out as they are made: a map of
 * megabytes never whole in memory, and a map in the report drawn again
 * rather than kept (drawing is cheap, docs/benchmarks.md). */
static void write_file(struct pictures *p, int which)
{
    const char *source = p->cfg->source_label;
    uint64_t wall = p->cfg->start_wall_ns;
    struct dm_file_out *f = &p->out[which];
    struct dm_text *buf = &p->buf[which];
    struct dm_svg s;

    if (dm_file_out_begin(f) != 0)
        return;
    buf->failed = 0;
    dm_text_empty(buf);
    dm_svg_init(&s, buf);
    dm_svg_spill_to(&s, spill, f);
    if (which == OUT_LATENCY)
        dm_latmap_draw(p->lat, &s, 1, source, wall);
    else if (which == OUT_OFFSET)
        dm_offmap_draw(p->off, &s, 1, source, wall);
    else
        dm_report_render(p->report, &p->run, draw_map, p, &s);
    dm_file_out_end(f, buf);
}

static void write_offset_map(void *p)
{
    write_file(p, OUT_OFFSET);
}

/* The files asked for, each drawn from the counts so far (read only: the
 * counting waits for this). The offset map, the largest file, is drawn
 * and written on a thread of its own while this one does the others: the
 * run's end waits for the slower of the two, not for the sum
 * (docs/benchmarks.md). Without a thread, one after the other. */
static void write_all(struct pictures *p)
{
    dm_thread *helper = NULL;

    if (p->wanted[OUT_OFFSET] && (p->wanted[OUT_LATENCY] || p->wanted[OUT_REPORT]) &&
        dm_thread_start(&helper, write_offset_map, p) != 0)
        helper = NULL;
    for (int i = 0; i < OUTS; i++)
        if (p->wanted[i] && (i != OUT_OFFSET || helper == NULL))
            write_file(p, i);
    if (helper != NULL)
        dm_thread_join(helper);
}

/* Live: the files so far, with the losses known now; the next write on
 * the interval's grid, past now after a long stall. */
static uint64_t pictures_tick(void *view, uint64_t now_ns)
{
    struct pictures *p = view;
    const struct dm_view_config *cfg = p->cfg;

    if (now_ns < p->next_ns)
        return p->next_ns - now_ns;
    p->run.elapsed_ns = now_ns;
    p->run.loss.ring_dropped = cfg->ring_dropped(cfg->ring_ctx);
    p->run.loss.source_lost = cfg->lost_base;
    write_all(p);
    p->next_ns += cfg->heat_ns;
    if (p->next_ns <= now_ns)
        p->next_ns = now_ns + cfg->heat_ns;
    return p->next_ns - now_ns;
}

/* The last write, with the run's whole account. A file never written in
 * the whole run ends it with exit 1 (the failure was said on errf). */
static int pictures_finish(void *view, const struct dm_view_end *end)
{
    struct pictures *p = view;
    int rc = 0;

    p->run.elapsed_ns = end->elapsed_ns;
    p->run.loss = *end->loss;
    p->run.final = 1;
    write_all(p);
    for (int i = 0; i < OUTS; i++) {
        if (!p->wanted[i] || p->out[i].written != 0)
            continue;
        if (p->cfg->live)
            dm_writef(p->cfg->errf, "diskmon: %s %s was not written once in this run\n",
                      p->out[i].what, p->out[i].path);
        rc = -1;
    }
    return rc;
}

const struct dm_view_ops dm_pictures_view = {
    .name = "pictures",
    .create = pictures_create,
    .add = pictures_add,
    .tick = pictures_tick,
    .finish = pictures_finish,
    .destroy = pictures_destroy,
};
