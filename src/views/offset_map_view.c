/*
 * offset_map_view.c - the --offset-map view: every event counted in the offset
 * map (views/offmap.h); the SVG file written live every cfg->heat_ns and
 * once at the end (views/heat_file.h, the map views' shared ops).
 */
#include "views/heat_file.h"
#include "views/offmap.h"
#include "views/view.h"

static const char *offset_map_path(const struct dm_view_config *cfg)
{
    return cfg->offset_map_path;
}

static void *offset_map_new(uint64_t step_ms)
{
    return dm_offmap_create(step_ms);
}

static void offset_map_add(void *map, const struct dm_event *ev)
{
    dm_offmap_add(map, ev);
}

static void offset_map_draw(const void *map, struct dm_svg *s, int xml_decl, const char *source,
                         uint64_t start_wall_ns)
{
    dm_offmap_draw(map, s, xml_decl, source, start_wall_ns);
}

static void offset_map_free(void *map)
{
    dm_offmap_destroy(map);
}

static const struct dm_map_kind offset_map_kind = {
    "the offset map", offset_map_path, offset_map_new, offset_map_add, offset_map_draw, offset_map_free,
};

static int offset_map_create(const struct dm_view_config *cfg, void **view)
{
    return dm_map_view_create(&offset_map_kind, cfg, view);
}

const struct dm_view_ops dm_offset_map_view = {
    .name = "offset_map",
    .create = offset_map_create,
    .add = dm_map_view_add,
    .tick = dm_map_view_tick,
    .finish = dm_map_view_finish,
    .destroy = dm_map_view_destroy,
};
