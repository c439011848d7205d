/*
 * pipeline.h - one whole capture: source thread -> ring -> printer thread.
 */
#ifndef DM_PIPELINE_H
#define DM_PIPELINE_H

#include <stdio.h>

#include "diskmon.h"
#include "cli/options.h"

/* Exit codes (docs/options.md "Exit codes"). */
#define DM_EXIT_OK 0
#define DM_EXIT_ERROR 1
#define DM_EXIT_USAGE 2
#define DM_EXIT_LOST 3

/*
 * Open the source, run the printer and the source on their own threads, wait
 * for the end of input, Ctrl+C (dm_interrupted), -n or -t, then stop the
 * source, drain the ring, print the summary/histogram to errf if asked and
 * return the exit code: DM_EXIT_OK, DM_EXIT_ERROR (message on errf),
 * DM_EXIT_USAGE (a mistake on the command line the source or the file checks
 * found: one line on errf) or DM_EXIT_LOST (the run completed but events
 * were lost; said on errf).
 *
 * Events are written to out; when out is NULL, to the file opt->output_path,
 * which is opened (and so truncated) only after the source opened, and never
 * when it is the input trace itself (DM_EXIT_USAGE). The same check refuses
 * an out that is the input trace (`diskmon -r t.etl >>t.etl`).
 */
int dm_run(const struct dm_options *opt, const struct dm_source_ops *ops,
           FILE *out, FILE *errf);

struct dm_run_info {
    /* The printer thread was stuck writing (Ctrl+C with a blocked pipe) and
     * was left behind: the caller must end the process without flushing
     * that output again (_Exit after flushing errf), or it would block too. */
    int printer_left;
};

/* Give an output stream the buffer diskmon uses (before any output on it). */
void dm_output_buffered(FILE *out);

/* dm_run, also saying how the run ended. */
int dm_run_ex(const struct dm_options *opt, const struct dm_source_ops *ops,
              FILE *out, FILE *errf, struct dm_run_info *info);

#endif /* DM_PIPELINE_H */
