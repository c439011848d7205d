/*
 * file_out.c - a view's file, replaced whole each time (file_out.h).
 */
#include <string.h>

#include "output/text.h"
#include "platform/platform.h"
#include "views/file_out.h"

void dm_file_out_init(struct dm_file_out *f, const char *path, const char *what, int live,
                      FILE *errf)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->what = what;
    f->live = live;
    f->errf = errf;
}

/* A failure said once per reason: a daemon retrying every 15 s says it
 * once, and says again when the reason changes (the file became a
 * symbolic link). Returns rc. */
static int failed(struct dm_file_out *f, int rc, const char *why)
{
    if (strcmp(why, f->reported) != 0) {
        snprintf(f->reported, sizeof f->reported, "%s", why);
        dm_writef(f->errf, "diskmon: cannot write %s %s: %s%s\n", f->what, f->path, why,
                  f->live ? " (trying again each interval; reported once)" : "");
    }
    return rc;
}

int dm_file_out_begin(struct dm_file_out *f)
{
    char why[sizeof f->reported];
    int rc = dm_replace_open(&f->writing, f->path, why, sizeof why);

    return rc == 0 ? 0 : failed(f, rc, why);
}

void dm_file_out_spill(struct dm_file_out *f, struct dm_text *t)
{
    if (!t->failed && t->len > 0)
        dm_replace_write(f->writing, t->data, t->len);
    dm_text_empty(t);
}

int dm_file_out_end(struct dm_file_out *f, struct dm_text *t)
{
    char why[sizeof f->reported];
    struct dm_replace *r = f->writing;
    int rc;

    f->writing = NULL;
    if (t->failed) {
        dm_replace_abort(r);
        return failed(f, DM_ENOMEM, dm_strerror(DM_ENOMEM));
    }
    if (t->len > 0)
        dm_replace_write(r, t->data, t->len);
    dm_text_empty(t);
    rc = dm_replace_commit(r, why, sizeof why);
    if (rc != 0)
        return failed(f, rc, why);
    f->written++;
    return 0;
}

int dm_file_out_write(struct dm_file_out *f, const void *data, size_t len, int out_of_memory)
{
    struct dm_text rest = {0};
    int rc;

    if (out_of_memory)
        return failed(f, DM_ENOMEM, dm_strerror(DM_ENOMEM));
    rc = dm_file_out_begin(f);
    if (rc != 0)
        return rc;
    dm_replace_write(f->writing, data, len);
    return dm_file_out_end(f, &rest);
}
