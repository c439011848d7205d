/*
 * options.c - the command line. A small hand-written parser (no getopt, which
 * MSVC lacks): -x VALUE, -xVALUE, --long VALUE and --long=VALUE, over the
 * rows of option_table.c; --help printed from those rows; and the rules
 * between options.
 */
#include <errno.h>
#include <string.h>

#include "cli/option_table.h"
#include "cli/options.h"
#include "diskmon.h"
#include "platform/platform.h"

/* --help's text column: "  -r, --replay FILE" and two spaces at least
 * would not fit the longest row ("      --self-test [PATH]") in 80 columns;
 * one space at least keeps every row's text at column 25. */
#define HELP_TEXT_COLUMN 25

static const char help_head[] =
    "diskmon - watch disk I/O: one line per disk read, write or flush.\n"
    "\n"
    "Usage:\n"
    "  diskmon [OPTIONS]               live capture (Windows: elevated prompt;\n"
    "                                  Linux: root, or cap_perfmon and\n"
    "                                  cap_dac_read_search); Ctrl+C stops\n"
    "  diskmon -r FILE [OPTIONS]       read a trace or a capture (.etl, csv, json,\n"
    "                                  a public block trace; - for stdin)\n";

static const char help_tail[] =
    "      --                 end of options\n"
    "\n"
    "Exit status: 0 ok, 1 error, 2 bad usage, 3 completed but events were lost.\n"
    "\n"
    "Examples:\n"
    "  diskmon                               every disk request, live\n"
    "  diskmon | findstr Write               (Windows) only writes, as they happen\n"
    "  sudo diskmon -d sda --op write -s     (Linux) writes to sda, then a summary\n"
    "  diskmon -r trace.etl -f csv -o io.csv replay a trace into a CSV file\n"
    "  diskmon -r trace.etl -m 10 --hist     requests slower than 10 ms, histogram\n"
    "  diskmon -r x.etl -c svchost,system    I/O issued by either process\n"
    "  diskmon --top --by disk               iostat-like figures every second\n"
    "  sudo diskmon --self-test /mnt/data    does live capture see this disk right?\n"
    "  diskmon --metrics /var/lib/node_exporter/diskmon.prom\n"
    "                                        counters for Prometheus, no lines\n";

/* A bounded text being built; a text that does not fit sets full. */
struct help_buf {
    char text[8192];
    size_t len;
    int full;
};

static void put(struct help_buf *b, const char *s, size_t n)
{
    if (n > sizeof b->text - b->len) {
        b->full = 1;
        return;
    }
    memcpy(b->text + b->len, s, n);
    b->len += n;
}

static void put_str(struct help_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* One row: "  -r, --replay FILE" (or four spaces for no short name), padded
 * to the text column, then the help lines, each after the first indented
 * to that column. */
static void put_row(struct help_buf *b, const struct dm_option_row *row)
{
    static const char spaces[HELP_TEXT_COLUMN + 1] = "                         ";
    char names[64];
    const char *line = row->help;
    int n;

    if (row->short_name != 0)
        n = snprintf(names, sizeof names, "  -%c, --%s", row->short_name, row->long_name);
    else
        n = snprintf(names, sizeof names, "      --%s", row->long_name);
    if (n > 0 && row->value != NULL)
        n += snprintf(names + n, sizeof names - (size_t)n, " %s", row->value);
    if (n < 0 || (size_t)n >= sizeof names) {
        b->full = 1;
        return;
    }
    put_str(b, names);
    put(b, spaces, n < HELP_TEXT_COLUMN - 1 ? (size_t)(HELP_TEXT_COLUMN - n) : 1);
    for (;;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl != NULL ? (size_t)(nl - line) + 1 : strlen(line);

        put(b, line, len);
        if (nl == NULL)
            break;
        line = nl + 1;
        put(b, spaces, HELP_TEXT_COLUMN);
    }
    put(b, "\n", 1);
}

int dm_options_help(FILE *out)
{
    static struct help_buf b;

    b.len = 0;
    b.full = 0;
    put_str(&b, help_head);
    for (size_t i = 0; i < dm_option_row_count; i++) {
        if (dm_option_rows[i].heading != NULL) {
            put(&b, "\n", 1);
            put_str(&b, dm_option_rows[i].heading);
            put(&b, "\n", 1);
        }
        put_row(&b, &dm_option_rows[i]);
    }
    put_str(&b, help_tail);
    if (b.full) {
        errno = ENOBUFS;
        return -1;
    }
    return dm_write_all(out, b.text, b.len);
}

/* The one interval of --top and --metrics, and what --metrics needs
 * (options.h). */
static int check_metrics(struct dm_options *opt, char *err, size_t errlen)
{
    if (opt->heatmap_step_ms != 0 && opt->heatmap_path == NULL &&
        opt->offset_map_path == NULL && opt->report_path == NULL)
        return dm_opt_fail(err, errlen, "--heatmap-step sets the columns of --heatmap, "
                           "--offset-map or --report: add one of them");
    if (opt->metrics_top_given && opt->metrics_path == NULL)
        return dm_opt_fail(err, errlen, "--metrics-top picks the processes of --metrics: add "
                           "--metrics FILE");
    if (!opt->metrics_top_given)
        opt->metrics_top = DM_METRICS_DEFAULT_TOP;
    if (opt->metrics_ns != 0 && opt->metrics_path == NULL && opt->top_ns == 0)
        return dm_opt_fail(err, errlen, "--interval sets how often --metrics or --top writes: "
                           "add one of them");
    if (opt->top_ns != 0 && opt->top_sec_given && opt->metrics_ns != 0 &&
        opt->metrics_ns != opt->top_ns)
        return dm_opt_fail(err, errlen, "--top SEC and --interval SEC differ: give the "
                           "interval once");
    if (opt->top_ns != 0 && !opt->top_sec_given && opt->metrics_ns != 0)
        opt->top_ns = opt->metrics_ns;
    if (opt->metrics_ns == 0)
        opt->metrics_ns = opt->top_ns != 0 && opt->top_sec_given ? opt->top_ns
                                                                 : DM_METRICS_DEFAULT_NS;
    return 0;
}

/* A word that is not an option. diskmon takes none; a trace file name is the
 * likely slip (`diskmon trace.etl`), so say what was probably meant; after
 * -r, a second trace (`-r a.etl b.etl`): one is read per run. */
static int stray_argument(const struct dm_options *opt, const char *arg, char *err,
                          size_t errlen)
{
    size_t n = strlen(arg);

    if (n > 4 && dm_opt_same_word(arg + n - 4, ".etl") && opt->replay_path != NULL)
        return dm_opt_fail(err, errlen, "unexpected argument '%s': diskmon reads one trace "
                           "per run (-r %s); run it once for each trace",
                           arg, opt->replay_path);
    if (n > 4 && dm_opt_same_word(arg + n - 4, ".etl"))
        return dm_opt_fail(err, errlen, "unexpected argument '%s': did you mean -r %s?", arg,
                           arg);
    return dm_opt_fail(err, errlen, "unexpected argument '%s'", arg);
}

/* Whether next, the argument after an option whose value is optional, is
 * that value: a word that is no option; for a number, also a negative one
 * ("--top -1" is a bad interval, not an unknown option "-1"). */
static int optional_value(const struct dm_option_row *row, const char *next)
{
    if (next[0] != '-')
        return 1;
    return row->numeric && ((next[1] >= '0' && next[1] <= '9') || next[1] == '.');
}

/* The row arg names, and its value when written in the same argument
 * (--long=VALUE, -xVALUE); NULL and a message when no row fits. */
static const struct dm_option_row *find_row(char *arg, char **value, char *err,
                                            size_t errlen)
{
    const struct dm_option_row *row = NULL;

    *value = NULL;
    if (arg[1] == '-') {
        char *eq = strchr(arg + 2, '=');
        size_t n = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);

        for (size_t k = 0; k < dm_option_row_count && row == NULL; k++)
            if (strlen(dm_option_rows[k].long_name) == n &&
                strncmp(dm_option_rows[k].long_name, arg + 2, n) == 0)
                row = &dm_option_rows[k];
        if (row == NULL) {
            dm_opt_fail(err, errlen, "unknown option '%s'", arg);
            return NULL;
        }
        if (eq != NULL && row->value == NULL) {
            dm_opt_fail(err, errlen, "option '--%s' takes no value", row->long_name);
            return NULL;
        }
        *value = eq != NULL ? eq + 1 : NULL;
        return row;
    }
    for (size_t k = 0; k < dm_option_row_count && row == NULL; k++)
        if (dm_option_rows[k].short_name == arg[1])
            row = &dm_option_rows[k];
    if (row == NULL || (arg[2] != '\0' && row->value == NULL)) {
        dm_opt_fail(err, errlen, "unknown option '%s'", arg);
        return NULL;
    }
    *value = arg[2] != '\0' ? arg + 2 : NULL;
    return row;
}

int dm_options_read_partition(const struct dm_options *opt)
{
    return opt->format != DM_FMT_TEXT || opt->n_disks > 0 ||
           (opt->top_ns != 0 && opt->top_by == DM_TOP_BY_PARTITION) ||
           opt->metrics_path != NULL;
}

int dm_options_read_cgroup(const struct dm_options *opt)
{
    return opt->format != DM_FMT_TEXT || opt->n_cgroups > 0 ||
           (opt->top_ns != 0 && opt->top_by == DM_TOP_BY_CGROUP) ||
           opt->metrics_path != NULL;
}

int dm_options_parse(struct dm_options *opt, int argc, char **argv, char *err,
                     size_t errlen)
{
    int end_of_options = 0;
    const char *not_with_self_test = NULL;

    memset(opt, 0, sizeof *opt);
    err[0] = '\0';

    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        const struct dm_option_row *row;
        struct dm_opt_arg a = {NULL, NULL, arg, err, errlen};
        int rc;

        if (end_of_options || arg[0] != '-' || arg[1] == '\0')
            return stray_argument(opt, arg, err, errlen);
        if (strcmp(arg, "--") == 0) {
            end_of_options = 1;
            continue;
        }
        row = find_row(arg, &a.value, err, errlen);
        if (row == NULL)
            return DM_EUSAGE;
        a.row = row;
        /* "[SEC]": the value is optional (options.h). */
        if (row->value != NULL && row->value[0] == '[' && a.value == NULL &&
            i + 1 < argc && optional_value(row, argv[i + 1]))
            a.value = argv[++i];
        if (row->value != NULL && row->value[0] != '[' && a.value == NULL) {
            if (i + 1 >= argc)
                return dm_opt_fail(err, errlen, "option '%s' needs a value", arg);
            a.value = argv[++i];
        }
        rc = row->handle(opt, &a);
        if (rc != 0)
            return rc;
        if (!row->with_self_test && not_with_self_test == NULL)
            not_with_self_test = arg;
    }
    /* --self-test runs its own fixed capture: the options that pick what a
     * capture shows or how it ends have nothing to act on there. */
    if (opt->self_test && not_with_self_test != NULL)
        return dm_opt_fail(err, errlen, "--self-test takes no other options than --backend "
                           "and --force (not %s)", not_with_self_test);
    /* --op given: the union of its values; not given: every request. */
    if (opt->op_mask == 0)
        opt->op_mask = DM_OP_BIT(DM_REQ_READ) | DM_OP_BIT(DM_REQ_WRITE) |
                       DM_OP_BIT(DM_REQ_FLUSH) | DM_OP_BIT(DM_REQ_DISCARD);
    if (opt->input_format != NULL && opt->replay_path == NULL)
        return dm_opt_fail(err, errlen, "--input-format says how to read -r FILE: add -r");
    if (opt->replay_path != NULL && (opt->force || opt->cleanup))
        return dm_opt_fail(err, errlen, "--force and --cleanup are for live capture, not -r");
    if (opt->top_ns != 0 && opt->count != 0)
        return dm_opt_fail(err, errlen, "--top sums intervals, -n counts events: stop --top "
                           "with -t SEC or Ctrl+C");
    if (opt->by_given && opt->top_ns == 0)
        return dm_opt_fail(err, errlen, "--by picks the rows of --top: add --top");
    if (opt->replay_path != NULL && opt->queue)
        return dm_opt_fail(err, errlen, "--queue is for Linux live capture, not -r");
    if (opt->replay_path != NULL && opt->backend != DM_BACKEND_DEFAULT)
        return dm_opt_fail(err, errlen, "--backend is for Linux live capture, not -r");
    if (opt->top_ns != 0 && opt->clock)
        return dm_opt_fail(err, errlen, "--clock and --utc set the Time column of event "
                           "lines; --top has no Time column");
    return check_metrics(opt, err, errlen);
}
