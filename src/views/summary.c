/*
 * summary.c - the summary view: -s and --hist, printed at the end of the
 * run from the statistics of views/stats.h.
 */
#include <stdlib.h>

#include "views/stats.h"
#include "views/view.h"

struct summary {
    struct dm_stats *stats;
    int summary, hist;
};

static int summary_create(const struct dm_view_config *cfg, void **view)
{
    struct summary *s;

    *view = NULL;
    if (!cfg->summary && !cfg->hist)
        return 0;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return DM_ENOMEM;
    s->stats = dm_stats_create(1);
    if (s->stats == NULL) {
        free(s);
        return DM_ENOMEM;
    }
    s->summary = cfg->summary;
    s->hist = cfg->hist;
    if (cfg->no_latency)
        dm_stats_no_latency(s->stats);
    *view = s;
    return 0;
}

static void summary_add(void *view, const struct dm_event *ev, size_t n)
{
    struct summary *s = view;

    for (size_t i = 0; i < n; i++)
        dm_stats_add(s->stats, &ev[i]);
}

/* The -s table, then (after an empty line when both) the histograms. */
static int summary_finish(void *view, const struct dm_view_end *end)
{
    struct summary *s = view;

    if (s->summary)
        dm_stats_summary(s->stats, end->report, end->elapsed_ns, end->loss);
    if (s->hist) {
        if (s->summary)
            dm_text_putc(end->report, '\n');
        dm_stats_hist(s->stats, end->report);
    }
    return 0;
}

static void summary_destroy(void *view)
{
    struct summary *s = view;

    dm_stats_destroy(s->stats);
    free(s);
}

const struct dm_view_ops dm_summary_view = {
    .name = "summary",
    .create = summary_create,
    .add = summary_add,
    .finish = summary_finish,
    .destroy = summary_destroy,
};
