/*
 * metrics_view.c - the --metrics view: every event counted in the
 * counters of views/metrics.h; live, the file rewritten at the start and
 * every --interval; at the end, the last write with the run's whole
 * account of losses (a replay's only one).
 */
#include <stdlib.h>

#include "views/metrics.h"
#include "views/view.h"

struct metrics_view {
    struct dm_metrics *m;
    const struct dm_view_config *cfg;
    uint64_t next_ns;            /* live: the next write, on the capture clock */
};

static int metrics_create(const struct dm_view_config *cfg, void **view)
{
    struct metrics_view *mv;

    *view = NULL;
    if (cfg->metrics_path == NULL)
        return 0;
    mv = calloc(1, sizeof *mv);
    if (mv == NULL)
        return DM_ENOMEM;
    mv->m = dm_metrics_create(cfg->metrics_path, cfg->metrics_top, cfg->live, cfg->errf);
    if (mv->m == NULL) {
        free(mv);
        return DM_ENOMEM;
    }
    if (cfg->no_latency)
        dm_metrics_no_latency(mv->m);
    mv->cfg = cfg;
    *view = mv; /* next_ns 0: the first tick writes at once, so the series
                 * exist from the start */
    return 0;
}

static void metrics_add(void *view, const struct dm_event *ev, size_t n)
{
    struct metrics_view *mv = view;

    for (size_t i = 0; i < n; i++)
        dm_metrics_add(mv->m, &ev[i]);
}

/* Live: rewrite the file when the interval is up; the next one on the
 * interval's grid, past now after a long stall. */
static uint64_t metrics_tick(void *view, uint64_t now_ns)
{
    struct metrics_view *mv = view;
    const struct dm_view_config *cfg = mv->cfg;
    struct dm_metrics_run run;

    if (now_ns < mv->next_ns)
        return mv->next_ns - now_ns;
    run.source = cfg->source_name;
    run.ring_dropped = cfg->ring_dropped(cfg->ring_ctx);
    run.source_lost = cfg->lost_base;
    dm_metrics_write(mv->m, &run);
    mv->next_ns += cfg->metrics_ns;
    if (mv->next_ns <= now_ns)
        mv->next_ns = now_ns + cfg->metrics_ns;
    return mv->next_ns - now_ns;
}

/* The last write. A failure was said on errf; it ends the run with exit 1
 * when no write of the run succeeded (a live run that had the file for a
 * while keeps its status). */
static int metrics_finish(void *view, const struct dm_view_end *end)
{
    struct metrics_view *mv = view;
    const struct dm_view_config *cfg = mv->cfg;
    struct dm_metrics_run run;

    run.source = cfg->source_name;
    run.ring_dropped = end->loss->ring_dropped;
    run.source_lost = end->loss->source_lost;
    if (dm_metrics_write(mv->m, &run) == 0 || dm_metrics_written(mv->m) != 0)
        return 0;
    if (cfg->live)
        dm_writef(cfg->errf, "diskmon: the metrics file %s was not written once in "
                             "this run\n", cfg->metrics_path);
    return -1;
}

static void metrics_destroy(void *view)
{
    struct metrics_view *mv = view;

    dm_metrics_destroy(mv->m);
    free(mv);
}

const struct dm_view_ops dm_metrics_view = {
    .name = "metrics",
    .create = metrics_create,
    .add = metrics_add,
    .tick = metrics_tick,
    .finish = metrics_finish,
    .destroy = metrics_destroy,
};
