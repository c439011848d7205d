/*
 * heat_file.c - a picture view's file, live and at the end (heat_file.h).
 */
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
