/*
 * heatmap_view.c - the --heatmap view: every event counted in the latency
 * map (views/latmap.h); the SVG file written live every cfg->heat_ns and
 * once at the end (views/heat_file.h, the map views' shared ops).
 */
#include "views/heat_file.h"
#include "views/latmap.h"
#include "views/view.h"

static const char *heatmap_path(const struct dm_view_config *cfg)
{
    return cfg->heatmap_path;
}

static void *heatmap_new(uint64_t step_ms)
{
    return dm_latmap_create(step_ms);
}

static void heatmap_add(void *map, const struct dm_event *ev)
{
    dm_latmap_add(map, ev);
}

static void heatmap_draw(const void *map, struct dm_svg *s, int xml_decl, const char *source,
                         uint64_t start_wall_ns)
{
    dm_latmap_draw(map, s, xml_decl, source, start_wall_ns);
}

static void heatmap_free(void *map)
{
    dm_latmap_destroy(map);
}

static const struct dm_map_kind heatmap_kind = {
    "the heat map", heatmap_path, heatmap_new, heatmap_add, heatmap_draw, heatmap_free,
};

static int heatmap_create(const struct dm_view_config *cfg, void **view)
{
    return dm_map_view_create(&heatmap_kind, cfg, view);
}

const struct dm_view_ops dm_heatmap_view = {
    .name = "heatmap",
    .create = heatmap_create,
    .add = dm_map_view_add,
    .tick = dm_map_view_tick,
    .finish = dm_map_view_finish,
    .destroy = dm_map_view_destroy,
};
