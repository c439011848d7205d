/*
 * top_view.c - the --top view: the events summed per interval (views/top.h)
 * and each closed interval drawn (views/top_render.h) into the text the
 * printer writes out in place of the event lines.
 */
#include <stdio.h>
#include <stdlib.h>

#include "output/text.h"
#include "platform/platform.h"
#include "views/top.h"
#include "views/top_cache.h"
#include "views/top_render.h"
#include "views/view.h"

/* Live: how often an idle printer looks whether an interval ended. */
#define TOP_TICK_NS 100000000u
/* Live: an interval is drawn this long after its end on the capture
 * clock, so that its last events, still in the kernel's buffers or the
 * ring, are counted in it. */
#define TOP_GRACE_NS 300000000u

struct top_view {
    struct dm_top *top;
    struct dm_top_view draw;     /* draws into its own text, moved to drawn */
    const struct dm_view_config *cfg;
    int live;
    struct dm_top_cache *cache;  /* the Cache-W column; NULL: none */
};

/* What the renderer drew, appended to the printer's text (an interval
 * is rare next to events: the copy is cheap), a lost byte included. */
static void move_drawn(struct top_view *t)
{
    struct dm_text *d = t->cfg->drawn;

    if (t->draw.out.len > 0)
        dm_text_put(d, t->draw.out.data, t->draw.out.len);
    if (t->draw.out.failed)
        d->failed = 1;
    t->draw.out.len = 0;
    t->draw.out.failed = 0;
}

/* dm_top's emit: draw one interval, for the printer to send out after the
 * call that closed it. */
static void top_emit(void *ctx, const struct dm_top_interval *iv)
{
    struct top_view *t = ctx;
    const struct dm_view_config *cfg = t->cfg;

    if (t->draw.mode == DM_TOP_SCREEN &&
        dm_terminal_size(cfg->out, &t->draw.rows, &t->draw.cols) != 0)
        t->draw.rows = t->draw.cols = 0;
    if (cfg->unknown != NULL)
        cfg->unknown(cfg->unknown_ctx, t->draw.unknown);
    dm_top_render(&t->draw, iv, cfg->lost_base + cfg->ring_dropped(cfg->ring_ctx));
    move_drawn(t);
}

/* Linux live --by process: the Cache-W column, when the kernel counts each
 * process's writes (top_cache.h); where it does not, one note says so
 * instead of a column of zeros. 0, or DM_ENOMEM. */
static int cache_column(struct top_view *t, const struct dm_view_config *cfg)
{
    char why[256];
    int rc;

    if (cfg->task_io == NULL || !cfg->live || cfg->top_by != DM_TOP_BY_PROCESS)
        return 0;
    rc = cfg->task_io->probe(why, sizeof why);
    if (rc == DM_ENOMEM)
        return rc;
    if (rc == 0) {
        t->cache = dm_top_cache_create(cfg->task_io);
        if (t->cache == NULL)
            snprintf(why, sizeof why, "the first scan of every process failed");
    }
    if (t->cache == NULL) {
        dm_writef(cfg->errf, "diskmon: note: --top shows no Cache-W column (bytes each "
                             "process wrote into the page cache): %s\n", why);
        return 0;
    }
    dm_top_set_fill(t->top, dm_top_cache_fill, t->cache);
    t->draw.cache_writes = 1;
    /* A page-cache write has no disk yet (linux-live.md): the filters pick
     * block requests, and Cache-W stays the whole machine's. Said once
     * here, for csv and json too, and under each time line. */
    if (cfg->requests_filtered) {
        t->draw.cache_whole_machine = 1;
        dm_writef(cfg->errf, "diskmon: note: --top's Cache-W column counts every "
                             "process on this machine: a write into the page cache has "
                             "no disk yet, and the filters pick block requests\n");
    }
    return 0;
}

/* csv/json as asked; text redrawn in place on a terminal that takes VT
 * sequences, else plain blocks (a pipe, -o, an old console). */
static int top_create(const struct dm_view_config *cfg, void **view)
{
    struct top_view *t;

    *view = NULL;
    if (cfg->top_ns == 0)
        return 0;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return DM_ENOMEM;
    t->top = dm_top_create(cfg->top_by, cfg->top_ns, top_emit, t);
    if (t->top == NULL) {
        free(t);
        return DM_ENOMEM;
    }
    t->cfg = cfg;
    t->live = cfg->live;
    t->draw.by = cfg->top_by;
    t->draw.no_header = cfg->no_header;
    t->draw.no_latency = cfg->no_latency;
    if (cache_column(t, cfg) != 0) {
        dm_top_destroy(t->top);
        free(t);
        return DM_ENOMEM;
    }
    if (cfg->format == DM_FMT_JSON)
        t->draw.mode = DM_TOP_JSON;
    else if (cfg->format == DM_FMT_CSV)
        t->draw.mode = DM_TOP_CSV;
    else if (dm_is_terminal(cfg->out) && dm_terminal_enable_vt(cfg->out))
        t->draw.mode = DM_TOP_SCREEN;
    else
        t->draw.mode = DM_TOP_BLOCKS;
    dm_top_render_begin(&t->draw);
    move_drawn(t);
    *view = t;
    return 0;
}

static void top_add(void *view, const struct dm_event *ev, size_t n)
{
    struct top_view *t = view;

    for (size_t i = 0; i < n; i++)
        dm_top_add(t->top, &ev[i], t->live);
}

/* Live: close the intervals the capture clock has passed, TOP_GRACE_NS
 * late. */
static uint64_t top_tick(void *view, uint64_t now_ns)
{
    struct top_view *t = view;

    if (now_ns > TOP_GRACE_NS)
        dm_top_tick(t->top, now_ns - TOP_GRACE_NS);
    return TOP_TICK_NS;
}

/* The last interval, cut where the run stopped: live, now on the capture
 * clock; replay, the -t the trace went past. A replay that ran to its end
 * has no later end than its last event. */
static void top_close(void *view, const struct dm_view_close *c)
{
    struct top_view *t = view;

    if (t->live)
        dm_top_finish_at(t->top, c->now_ns, 1);
    else if (c->time_limit_hit)
        dm_top_finish_at(t->top, c->time_limit_ns, 0);
    else
        dm_top_finish(t->top);
    dm_top_render_end(&t->draw);
    move_drawn(t);
}

/* The console's mode goes back as it was (platform.h) only here, after the
 * printer wrote the last screen. */
static void top_destroy(void *view)
{
    struct top_view *t = view;

    if (t->draw.mode == DM_TOP_SCREEN)
        dm_terminal_restore(t->cfg->out);
    dm_top_destroy(t->top);
    dm_top_cache_destroy(t->cache);
    dm_text_free(&t->draw.out);
    free(t);
}

const struct dm_view_ops dm_top_view = {
    .name = "top",
    .draws = 1,
    .create = top_create,
    .add = top_add,
    .tick = top_tick,
    .close = top_close,
    .destroy = top_destroy,
};
