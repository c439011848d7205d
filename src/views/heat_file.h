/*
 * heat_file.h - what the picture views (--heatmap, --offset-map) share:
 * the file rewritten live every cfg->heat_ns on the capture clock and
 * once at the end, through file_out.h (the --metrics rules: a new
 * temporary file with O_EXCL, renamed over the target, 0644; links,
 * devices, FIFOs and directories refused).
 */
#ifndef DM_HEAT_FILE_H
#define DM_HEAT_FILE_H

#include "output/svg.h"
#include "views/file_out.h"
#include "views/view.h"

/* Draw the whole file into t (emptied first by the caller). */
typedef void dm_heat_render_fn(void *state, struct dm_text *t);

struct dm_heat_file {
    struct dm_file_out file;
    struct dm_text text;         /* reused from write to write */
    const struct dm_view_config *cfg;
    uint64_t next_ns;            /* live: the next write, on the capture clock */
    dm_heat_render_fn *render;
    void *state;
};

void dm_heat_file_init(struct dm_heat_file *f, const struct dm_view_config *cfg,
                       const char *path, const char *what, dm_heat_render_fn *render,
                       void *state);

/* Draw and replace the file now. Returns 0 or a negative dm_err (said on errf). */
int dm_heat_file_write(struct dm_heat_file *f);

/* Live: write when the interval is up; the ns until the next write. */
uint64_t dm_heat_file_tick(struct dm_heat_file *f, uint64_t now_ns);

/* The last write: 0, or -1 when no write of the run succeeded (exit 1). */
int dm_heat_file_finish(struct dm_heat_file *f);

void dm_heat_file_free(struct dm_heat_file *f);

/*
 * A map view (--heatmap, --offset-map) is its kind of map and the ops
 * below: the view's file holds only its kind and its create.
 */
struct dm_map_kind {
    const char *what;            /* "the heat map", for the messages */
    const char *(*path)(const struct dm_view_config *cfg); /* NULL: not asked for */
    void *(*create)(uint64_t step_ms);                     /* NULL: out of memory */
    void (*add)(void *map, const struct dm_event *ev);
    void (*draw)(const void *map, struct dm_svg *s, int xml_decl, const char *source,
                 uint64_t start_wall_ns);
    void (*destroy)(void *map);
};

int dm_map_view_create(const struct dm_map_kind *kind, const struct dm_view_config *cfg,
                       void **view);
void dm_map_view_add(void *view, const struct dm_event *ev, size_t n);
uint64_t dm_map_view_tick(void *view, uint64_t now_ns);
int dm_map_view_finish(void *view, const struct dm_view_end *end);
void dm_map_view_destroy(void *view);

#endif /* DM_HEAT_FILE_H */
