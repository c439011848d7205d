/*
 * file_out.h - a file a view keeps replacing (--metrics, --heatmap,
 * --offset-map, --report): written anew each time through dm_replace_*
 * (platform.h: a new temporary file with O_EXCL in the same folder, 0644,
 * renamed over the target; a symbolic link, device, FIFO or directory at
 * the target is refused), with each failure said once per reason on errf
 * and the successful writes counted, so a run that never wrote its file
 * can end with exit 1.
 *
 * Written whole (dm_file_out_write) or as it is made (begin, spill, end):
 * a map of megabytes goes out 64 KiB at a time and is never whole in
 * memory (docs/benchmarks.md).
 */
#ifndef DM_FILE_OUT_H
#define DM_FILE_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "output/text.h"

struct dm_replace;

struct dm_file_out {
    const char *path;
    const char *what;        /* "the metrics file", for the messages */
    FILE *errf;
    int live;                /* written each interval: a failure is tried again */
    uint64_t written;        /* writes that succeeded */
    char reported[256];      /* the last failure said on errf ("": none) */
    struct dm_replace *writing; /* between begin and end */
};

void dm_file_out_init(struct dm_file_out *f, const char *path, const char *what, int live,
                      FILE *errf);

/* Start writing the file anew: 0, or a negative dm_err (the failure said;
 * nothing to write this time). */
int dm_file_out_begin(struct dm_file_out *f);

/* t's bytes to the file, t emptied for more (a failure is kept for
 * dm_file_out_end). Nothing when t->failed. */
void dm_file_out_spill(struct dm_file_out *f, struct dm_text *t);

/* The rest of t's bytes, and the file put in place. t->failed: the text
 * could not be made, so the file is left as it was and "out of memory" is
 * said. Returns 0 or a negative dm_err (said). */
int dm_file_out_end(struct dm_file_out *f, struct dm_text *t);

/* Begin, the whole text, end; out_of_memory: the text could not be made
 * (nothing is written, the failure is said). Returns 0 or a negative
 * dm_err. */
int dm_file_out_write(struct dm_file_out *f, const void *data, size_t len, int out_of_memory);

#endif /* DM_FILE_OUT_H */
