/*
 * report_view.c - the --report view: every event counted in the report
 * (views/report.h); the page written live every cfg->heat_ns and once at
 * the end with the run's whole account (views/heat_file.h).
 */
#include <stdlib.h>

#include "views/heat_file.h"
#include "views/report.h"
#include "views/view.h"

struct report_view {
    struct dm_report *report;
    struct dm_heat_file file;
    const struct dm_view_config *cfg;
    struct dm_report_run run;    /* what the next write says about the run */
};

static void report_render(void *state, struct dm_text *t)
{
    struct report_view *rv = state;

    dm_report_render(rv->report, &rv->run, t);
}

static int report_create(const struct dm_view_config *cfg, void **view)
{
    struct report_view *rv;

    *view = NULL;
    if (cfg->report_path == NULL)
        return 0;
    rv = calloc(1, sizeof *rv);
    if (rv == NULL)
        return DM_ENOMEM;
    rv->report = dm_report_create(cfg->heatmap_step_ms);
    if (rv->report == NULL) {
        free(rv);
        return DM_ENOMEM;
    }
    rv->cfg = cfg;
    rv->run.source = cfg->source_label;
    rv->run.backend = cfg->source_name;
    rv->run.start_wall_ns = cfg->start_wall_ns;
    dm_heat_file_init(&rv->file, cfg, cfg->report_path, "the report", report_render, rv);
    *view = rv;
    return 0;
}

static void report_add(void *view, const struct dm_event *ev, size_t n)
{
    struct report_view *rv = view;

    for (size_t i = 0; i < n; i++)
        dm_report_add(rv->report, &ev[i]);
}

/* Live: the page so far, with the losses known now. */
static uint64_t report_tick(void *view, uint64_t now_ns)
{
    struct report_view *rv = view;
    const struct dm_view_config *cfg = rv->cfg;

    rv->run.elapsed_ns = now_ns;
    rv->run.loss.ring_dropped = cfg->ring_dropped(cfg->ring_ctx);
    rv->run.loss.source_lost = cfg->lost_base;
    return dm_heat_file_tick(&rv->file, now_ns);
}

static int report_finish(void *view, const struct dm_view_end *end)
{
    struct report_view *rv = view;

    rv->run.elapsed_ns = end->elapsed_ns;
    rv->run.loss = *end->loss;
    rv->run.final = 1;
    return dm_heat_file_finish(&rv->file);
}

static void report_destroy(void *view)
{
    struct report_view *rv = view;

    dm_heat_file_free(&rv->file);
    dm_report_destroy(rv->report);
    free(rv);
}

const struct dm_view_ops dm_report_view = {
    .name = "report",
    .create = report_create,
    .add = report_add,
    .tick = report_tick,
    .finish = report_finish,
    .destroy = report_destroy,
};
