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

int dm_file_out_write(struct dm_file_out *f, const void *data, size_t len, int out_of_memory)
{
    char why[sizeof f->reported];
    int rc;

    if (out_of_memory) {
        rc = DM_ENOMEM;
        snprintf(why, sizeof why, "%s", dm_strerror(rc));
    } else {
        rc = dm_file_replace(f->path, data, len, why, sizeof why);
    }
    if (rc == 0) {
        f->written++;
        return 0;
    }
    /* Once per reason: a daemon retrying every 15 s says it once, and says
     * again when the reason changes (the file became a symbolic link). */
    if (strcmp(why, f->reported) != 0) {
        memcpy(f->reported, why, sizeof why);
        dm_writef(f->errf, "diskmon: cannot write %s %s: %s%s\n", f->what, f->path, why,
                  f->live ? " (trying again each interval; reported once)" : "");
    }
    return rc;
}
