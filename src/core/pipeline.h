/*
 * pipeline.h - one whole capture: source thread -> ring -> printer thread.
 */
#ifndef DM_PIPELINE_H
#define DM_PIPELINE_H

#include <stdio.h>

#include "diskmon.h"
#include "core/options.h"

/* Exit codes (README "Exit codes"). */
#define DM_EXIT_OK 0
#define DM_EXIT_ERROR 1
#define DM_EXIT_USAGE 2
#define DM_EXIT_LOST 3

/*
 * Open the source, run the printer and the source on their own threads, wait
 * for the end of input, Ctrl+C (dm_interrupted), -n or -t, then stop the
 * source, drain the ring, print the summary/histogram to errf if asked and
 * return the exit code: DM_EXIT_OK, DM_EXIT_ERROR (message on errf) or
 * DM_EXIT_LOST (the run completed but events were lost; said on errf).
 * Events are written to out.
 */
int dm_run(const struct dm_options *opt, const struct dm_source_ops *ops,
           FILE *out, FILE *errf);

#endif /* DM_PIPELINE_H */
