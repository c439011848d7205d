/*
 * main.c - diskmon's entry point: parse the command line, pick the source
 * (-r: a file or standard input in one of the formats src/input reads;
 * otherwise this OS's live capture), run the pipeline, or --self-test's
 * check of the live source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "core/pipeline.h"
#include "diskmon.h"
#include "input/input.h"
#include "output/text.h"
#include "platform/platform.h"
#include "selftest/selftest.h"

/* The build, for --version: CMake passes the compiler and the target it
 * built for (CMakeLists.txt, DM_BUILD_*). */
#ifndef DM_BUILD_COMPILER
#define DM_BUILD_COMPILER "unknown compiler"
#endif
#ifndef DM_BUILD_TARGET
#define DM_BUILD_TARGET "unknown target"
#endif

int main(int argc, char **argv)
{
    struct dm_options opt;
    struct dm_run_info info;
    const struct dm_source_ops *ops;
    char err[256];
    int rc;

    dm_stdio_init();
    if (dm_options_parse(&opt, argc, argv, err, sizeof err) != 0) {
        dm_writef(stderr, "diskmon: %s (see diskmon --help)\n", err);
        return DM_EXIT_USAGE;
    }
    /* Through the one writer, as every byte diskmon prints (output/text.h):
     * `diskmon --help | more` ended with q is a quiet end, not an error. */
    if (opt.show_help || opt.show_version) {
        rc = opt.show_help ? dm_options_help(stdout)
                           : dm_writef(stdout, "diskmon %s\nbuilt with %s for %s\n",
                                       DM_VERSION, DM_BUILD_COMPILER, DM_BUILD_TARGET);
        if (rc == 0 || errno == EPIPE)
            return DM_EXIT_OK;
        dm_writef(stderr, "diskmon: cannot write to standard output: %s\n", strerror(errno));
        return DM_EXIT_ERROR;
    }

    ops = opt.replay_path != NULL ? &dm_input_source : dm_live_source;
    if (ops == NULL && opt.self_test) {
        dm_writef(stderr, "diskmon: --self-test checks live capture, which this build "
                          "does not have (built without a live source); replay a trace "
                          "with -r FILE.etl\n");
        return DM_EXIT_ERROR;
    }
    if (ops == NULL) {
        dm_writef(stderr, "diskmon: live capture is not supported by this build; "
                          "replay a trace with -r FILE.etl\n");
        return DM_EXIT_ERROR;
    }
    if (ops->refuse != NULL) {
        const char *why = ops->refuse(&opt);

        if (why != NULL) {
            dm_writef(stderr, "diskmon: %s\n", why);
            return DM_EXIT_USAGE;
        }
    }

    if (opt.self_test) {
        dm_interrupt_install();
        return dm_selftest(&opt, ops, stdout);
    }

    /* -o FILE is opened by dm_run_ex only after the source opened. */
    if (opt.output_path == NULL)
        dm_output_buffered(stdout);
    dm_interrupt_install();
    rc = dm_run_ex(&opt, ops, opt.output_path != NULL ? NULL : stdout, stderr, &info);
    if (info.printer_left) {
        /* The printer still sits in a write to an output nobody reads; a
         * normal exit would flush that stream and block the same way. */
        fflush(stderr);
        _Exit(rc);
    }
    return rc;
}
