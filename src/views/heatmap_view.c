/*
 * heatmap_view.c - the --heatmap view: every event counted in the latency
 * map (views/latmap.h); the SVG file written live every cfg->heat_ns and
 * once at the end (views/heat_file.h).
 */
#include <stdlib.h>

#include "views/heat_file.h"
#include "views/latmap.h"
#include "views/view.h"

struct heatmap_view {
    struct dm_latmap *map;
    struct dm_heat_file file;
    const struct dm_view_config *cfg;
};

static void heatmap_render(void *state, struct dm_text *t)
{
    struct heatmap_view *hv = state;
    struct dm_svg s;

    dm_svg_init(&s, t);
    dm_latmap_draw(hv->map, &s, 1, hv->cfg->source_label, hv->cfg->start_wall_ns);
}

static int heatmap_create(const struct dm_view_config *cfg, void **view)
{
    struct heatmap_view *hv;

    *view = NULL;
    if (cfg->heatmap_path == NULL)
        return 0;
    hv = calloc(1, sizeof *hv);
    if (hv == NULL)
        return DM_ENOMEM;
    hv->map = dm_latmap_create(cfg->heatmap_step_ms);
    if (hv->map == NULL) {
        free(hv);
        return DM_ENOMEM;
    }
    hv->cfg = cfg;
    dm_heat_file_init(&hv->file, cfg, cfg->heatmap_path, "the heat map", heatmap_render, hv);
    *view = hv;
    return 0;
}

static void heatmap_add(void *view, const struct dm_event *ev, size_t n)
{
    struct heatmap_view *hv = view;

    for (size_t i = 0; i < n; i++)
        dm_latmap_add(hv->map, &ev[i]);
}

static uint64_t heatmap_tick(void *view, uint64_t now_ns)
{
    return dm_heat_file_tick(&((struct heatmap_view *)view)->file, now_ns);
}

static int heatmap_finish(void *view, const struct dm_view_end *end)
{
    (void)end;
    return dm_heat_file_finish(&((struct heatmap_view *)view)->file);
}

static void heatmap_destroy(void *view)
{
    struct heatmap_view *hv = view;

    dm_heat_file_free(&hv->file);
    dm_latmap_destroy(hv->map);
    free(hv);
}

const struct dm_view_ops dm_heatmap_view = {
    .name = "heatmap",
    .create = heatmap_create,
    .add = heatmap_add,
    .tick = heatmap_tick,
    .finish = heatmap_finish,
    .destroy = heatmap_destroy,
};
