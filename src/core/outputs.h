/*
 * outputs.h - the run's files, checked before anything is opened: -r, -o
 * and --metrics name three different files, and --metrics names a file it
 * may replace.
 */
#ifndef DM_OUTPUTS_H
#define DM_OUTPUTS_H

#include <stdio.h>

#include "cli/options.h"

/*
 * 0, or DM_EXIT_USAGE after one line on errf naming the path and what is
 * wrong with it: --metrics names something that is not a regular file (a
 * symbolic link, a device, a FIFO, a socket, a directory; platform.h,
 * dm_file_not_replaceable), or two of the trace (-r), the event output (-o
 * FILE, or out when it is not NULL: standard output redirected to a file)
 * and the metrics file are one file, by identity (any spelling, hard links,
 * symbolic links; platform.h, dm_file_same). -o itself may be anything
 * that can be written: /dev/null, a FIFO, a terminal.
 */
int dm_outputs_check(const struct dm_options *opt, FILE *out, FILE *errf);

#endif /* DM_OUTPUTS_H */
