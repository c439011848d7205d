/*
 * option_table.h - diskmon's options as one table: a row holds an option's
 * names, the value it takes, its --help text and its handler. The parser
 * and --help (options.c) read the rows; the man page (docs/diskmon.1) and
 * the bash completion (docs/diskmon.bash) are checked against --help by
 * tests/scripts/docs.sh. Adding an option is one row and its handler.
 */
#ifndef DM_OPTION_TABLE_H
#define DM_OPTION_TABLE_H

#include <stddef.h>

#include "cli/options.h"

struct dm_option_row;

/* What a handler is given: its row, the value (NULL when the option takes none, or
 * when an optional one was not given), the option as it was typed (for
 * messages) and where a refusal's one line goes. */
struct dm_opt_arg {
    const struct dm_option_row *row;
    char *value;
    const char *shown;
    char *err;
    size_t errlen;
};

struct dm_option_row {
    char short_name;       /* 0: long only */
    const char *long_name; /* without the "--" */
    /* The value, as --help names it: NULL, none; "[SEC]" (in brackets),
     * optional; "FILE", required. */
    const char *value;
    /* Non-NULL: the row opens this --help section (its heading line). */
    const char *heading;
    /* --help's text: lines split at '\n', each shown in the text column. */
    const char *help;
    /* Allowed beside --self-test, which runs its own fixed capture. */
    int with_self_test;
    /* The optional value is a number: a next argument of '-' and a digit
     * or '.' ("--top -1") is taken as the value, so the handler refuses it
     * as a bad number (no option is spelt that way). */
    int numeric;
    /* set_flag's int in struct dm_options (offsetof): options that only
     * switch something on share that one handler. */
    size_t flag;
    /* Returns 0, or DM_EUSAGE after dm_opt_fail. */
    int (*handle)(struct dm_options *opt, const struct dm_opt_arg *arg);
};

extern const struct dm_option_row dm_option_rows[];
extern const size_t dm_option_row_count;

/* A refusal: one line into arg->err, escaped as names are (the argument
 * it quotes may hold control bytes). Returns DM_EUSAGE. */
int dm_opt_fail(char *err, size_t errlen, const char *fmt, ...) DM_PRINTF(3, 4);

/* a and b equal, ignoring ASCII case (enumerated values: -f JSON). */
int dm_opt_same_word(const char *a, const char *b);

#endif /* DM_OPTION_TABLE_H */
