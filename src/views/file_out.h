/*
 * file_out.h - a file a view keeps replacing (--metrics, --heatmap,
 * --offset-map, --report): written whole through dm_file_replace
 * (platform.h: a new temporary file with O_EXCL in the same folder, 0644,
 * renamed over the target; a symbolic link, device, FIFO or directory at
 * the target is refused), with each failure said once per reason on errf
 * and the successful writes counted, so a run that never wrote its file
 * can end with exit 1.
 */
#ifndef DM_FILE_OUT_H
#define DM_FILE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct dm_file_out {
    const char *path;
    const char *what;        /* "the metrics file", for the messages */
    FILE *errf;
    int live;                /* written each interval: a failure is tried again */
    uint64_t written;        /* writes that succeeded */
    char reported[256];      /* the last failure said on errf ("": none) */
};

void dm_file_out_init(struct dm_file_out *f, const char *path, const char *what, int live,
                      FILE *errf);

/* Replace the file with len bytes of data; out_of_memory: the text could
 * not be made (nothing is written, the failure is said). Returns 0 or a
 * negative dm_err. */
int dm_file_out_write(struct dm_file_out *f, const void *data, size_t len, int out_of_memory);

#endif /* DM_FILE_OUT_H */
