/*
 * main.c - diskmon's entry point: parse the command line, pick the source
 * (-r: .etl replay; otherwise this OS's live capture), run the pipeline.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include "core/pipeline.h"
#include "diskmon.h"
#include "platform/platform.h"

/* 1 MiB of stdio buffer: output goes out in large writes; the printer
 * flushes it at least every 100 ms. */
#define OUTPUT_BUFFER (1u << 20)

int main(int argc, char **argv)
{
    struct dm_options opt;
    const struct dm_source_ops *ops;
    char err[256];
    FILE *out = stdout;
    int rc;

    dm_stdio_init();
    if (dm_options_parse(&opt, argc, argv, err, sizeof err) != 0) {
        fprintf(stderr, "diskmon: %s (see diskmon --help)\n", err);
        return DM_EXIT_USAGE;
    }
    if (opt.show_help) {
        dm_options_help(stdout);
        return fflush(stdout) == 0 ? DM_EXIT_OK : DM_EXIT_ERROR;
    }
    if (opt.show_version) {
        printf("diskmon %s\n", DM_VERSION);
        return fflush(stdout) == 0 ? DM_EXIT_OK : DM_EXIT_ERROR;
    }

    ops = opt.replay_path != NULL ? &dm_replay_source : dm_live_source;
    if (ops == NULL) {
        fprintf(stderr, "diskmon: live capture is not supported on this system; "
                        "replay a trace with -r FILE.etl\n");
        return DM_EXIT_ERROR;
    }
    if (opt.output_path != NULL) {
        out = fopen(opt.output_path, "wb");
        if (out == NULL) {
            fprintf(stderr, "diskmon: cannot open output file %s: %s\n",
                    opt.output_path, strerror(errno));
            return DM_EXIT_ERROR;
        }
    }
    setvbuf(out, NULL, _IOFBF, OUTPUT_BUFFER);

    dm_interrupt_install();
    rc = dm_run(&opt, ops, out, stderr);

    if (out != stdout && fclose(out) != 0 && rc != DM_EXIT_ERROR) {
        fprintf(stderr, "diskmon: cannot write output file %s: %s\n",
                opt.output_path, strerror(errno));
        rc = DM_EXIT_ERROR;
    }
    return rc;
}
