/*
 * fuzz_options.c - libFuzzer target: the command-line parser
 * (src/cli/options.h).
 *
 * The input, split at NUL bytes, is the argument list (up to 32). The
 * parser must answer 0 or DM_EUSAGE, and a refusal is one non-empty line
 * with no control byte, whatever the arguments it quotes hold;
 * an accepted --top interval is within its bounds, and --by comes with
 * --top. The arguments live in a writable copy (lists are split in place),
 * sized to the input so ASan sees any read past an argument. Built and run
 * by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "diskmon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *argv[MAX_ARGS + 2];
    struct dm_options opt;
    char err[256];
    int argc = 0, rc;
    size_t at = 0;

    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[argc++] = (char *)"diskmon";
    while (at <= size && argc <= MAX_ARGS) {
        argv[argc++] = copy + at;
        at += strlen(copy + at) + 1;
    }
    argv[argc] = NULL;
    memset(err, 0, sizeof err);
    rc = dm_options_parse(&opt, argc, argv, err, sizeof err);
    if (rc != 0) {
        /* A refusal is one line with no control byte, whatever the
         * arguments it quotes hold (they are escaped as names are). */
        if (rc != DM_EUSAGE || err[0] == '\0')
            abort();
        for (const char *c = err; *c != '\0'; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                abort();
    } else {
        if (opt.top_ns > DM_TOP_MAX_NS || (opt.by_given && opt.top_ns == 0))
            abort();
    }
    free(copy);
    return 0;
}
