/*
 * heat_file.c - a picture view's file, live and at the end (heat_file.h).
 */
#include <stdlib.h>
#include <string.h>

#include "views/heat_file.h"

void dm_heat_file_init(struct dm_heat_file *f, const struct dm_view_config *cfg,
                       const char *path, const char *what, dm_heat_render_fn *render,
                       void *state)
{
    memset(f, 0, sizeof *f);
    dm_file_out_init(&f->file, path, what, cfg->live, cfg->errf);
    f->cfg = cfg;
    f->render = render;
    f->state = state;
    /* next_ns 0: the first tick writes at once, so a live file exists
     * (valid, empty) from the start */
}

int dm_heat_file_write(struct dm_heat_file *f)
{
    f->text.len = 0;
    f->text.failed = 0;
    f->render(f->state, &f->text);
    return dm_file_out_write(&f->file, f->text.data, f->text.len, f->text.failed);
}

uint64_t dm_heat_file_tick(struct dm_heat_file *f, uint64_t now_ns)
{
    uint64_t every = f->cfg->heat_ns;

    if (now_ns < f->next_ns)
        return f->next_ns - now_ns;
    dm_heat_file_write(f);
    f->next_ns += every;
    if (f->next_ns <= now_ns)
        f->next_ns = now_ns + every;
    return f->next_ns - now_ns;
}

int dm_heat_file_finish(struct dm_heat_file *f)
{
    if (dm_heat_file_write(f) == 0 || f->file.written != 0)
        return 0;
    if (f->cfg->live)
        dm_writef(f->cfg->errf, "diskmon: %s %s was not written once in this run\n",
                  f->file.what, f->file.path);
    return -1;
}

void dm_heat_file_free(struct dm_heat_file *f)
{
    dm_text_free(&f->text);
}

/* ---- the map views ------------------------------------------------------------ */

struct map_view {
    const struct dm_map_kind *kind;
    void *map;
    struct dm_heat_file file;
    const struct dm_view_config *cfg;
};

static void map_render(void *state, struct dm_text *t)
{
    struct map_view *mv = state;
    struct dm_svg s;

    dm_svg_init(&s, t);
    mv->kind->draw(mv->map, &s, 1, mv->cfg->source_label, mv->cfg->start_wall_ns);
}

int dm_map_view_create(const struct dm_map_kind *kind, const struct dm_view_config *cfg,
                       void **view)
{
    const char *path = kind->path(cfg);
    struct map_view *mv;

    *view = NULL;
    if (path == NULL)
        return 0;
    mv = calloc(1, sizeof *mv);
    if (mv == NULL)
        return DM_ENOMEM;
    mv->map = kind->create(cfg->heatmap_step_ms);
    if (mv->map == NULL) {
        free(mv);
        return DM_ENOMEM;
    }
    mv->kind = kind;
    mv->cfg = cfg;
    dm_heat_file_init(&mv->file, cfg, path, kind->what, map_render, mv);
    *view = mv;
    return 0;
}

void dm_map_view_add(void *view, const struct dm_event *ev, size_t n)
{
    struct map_view *mv = view;

    for (size_t i = 0; i < n; i++)
        mv->kind->add(mv->map, &ev[i]);
}

uint64_t dm_map_view_tick(void *view, uint64_t now_ns)
{
    return dm_heat_file_tick(&((struct map_view *)view)->file, now_ns);
}

int dm_map_view_finish(void *view, const struct dm_view_end *end)
{
    (void)end;
    return dm_heat_file_finish(&((struct map_view *)view)->file);
}

void dm_map_view_destroy(void *view)
{
    struct map_view *mv = view;

    dm_heat_file_free(&mv->file);
    mv->kind->destroy(mv->map);
    free(mv);
}
