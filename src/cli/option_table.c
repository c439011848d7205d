/*
 * option_table.c - diskmon's options as one table (option_table.h): the
 * rows, their handlers, and the value parsers the handlers share. The
 * parser that walks argv, --help and the rules between options live in
 * options.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/option_table.h"
#include "diskmon.h"
#include "output/escape.h"

/* Messages quote the argument they refuse as it was given, and an argument
 * may hold a line break or an escape sequence: the message is shown as
 * names are (output/escape.h), one line, inert on a terminal. */
static int vfail(char *err, size_t errlen, const char *fmt, va_list ap) DM_PRINTF(3, 0);
static int vfail(char *err, size_t errlen, const char *fmt, va_list ap)
{
    char raw[512];

    vsnprintf(raw, sizeof raw, fmt, ap);
    dm_escape_term_string(err, errlen, raw);
    return DM_EUSAGE;
}

int dm_opt_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* A handler's refusal of arg's value. */
static int refuse(const struct dm_opt_arg *arg, const char *fmt, ...) DM_PRINTF(2, 3);
static int refuse(const struct dm_opt_arg *arg, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(arg->err, arg->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/*
 * A plain decimal number of units, DIGITS[.DIGITS] or .DIGITS, returned in
 * ns (unit_ns per unit, a whole number: 1e6 or 1e9), rounded to the nearest
 * ns. Hex, exponents, signs, inf and nan are refused: strtod would take
 * "0x10", "1e3" and "0x1p-1", and read "2,5" or "2.5" by the locale.
 * Fraction digits past the tenth are checked but not used (a nanosecond
 * of a second is the ninth; the tenth rounds it).
 */
static int parse_ns(const char *s, double unit_ns, uint64_t *out)
{
    const uint64_t unit = (uint64_t)unit_ns;
    uint64_t whole = 0, frac = 0, scale = 1;
    int digits = 0;

    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
            if (scale < 10000000000u) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                scale *= 10;
            }
        }
    }
    if (digits == 0 || *s != '\0' || whole > UINT64_MAX / unit)
        return -1;
    /* frac < scale <= 1e10 and unit <= 1e9: the product, below 1e19, fits
     * in 64 bits. */
    frac = (frac * unit + scale / 2) / scale;
    if (frac > UINT64_MAX - whole * unit)
        return -1;
    *out = whole * unit + frac;
    return 0;
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* a and b equal, ignoring ASCII case (enumerated values: -f JSON, --op Write). */
int dm_opt_same_word(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/*
 * Split a comma list in place (the commas become NULs) and call one() for
 * each piece. An empty piece ("a,,b", ",a", "") is an error: it is almost
 * always a typo, and silently matching nothing would hide it.
 */
static int each_piece(struct dm_options *opt, const struct dm_opt_arg *arg,
                      const char *what,
                      int (*one)(struct dm_options *, char *, const struct dm_opt_arg *))
{
    char *p = arg->value;

    for (;;) {
        char *comma = strchr(p, ',');
        int rc;

        if (comma != NULL)
            *comma = '\0';
        if (*p == '\0')
            return refuse(arg, "empty %s in %s", what, arg->shown);
        rc = one(opt, p, arg);
        if (rc != 0)
            return rc;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int one_op(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    for (int r = 0; r < DM_REQ_COUNT; r++) {
        /* The Request column's word, in any case. */
        if (dm_opt_same_word(tok, dm_request_names[r])) {
            opt->op_mask |= DM_OP_BIT(r);
            return 0;
        }
    }
    return refuse(arg, "unknown request '%s' for %s (read, write, flush or discard)",
                tok, arg->shown);
}

static int one_flag(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    for (unsigned i = 0; i < DM_RQ_COUNT; i++) {
        if (dm_opt_same_word(tok, dm_req_flag_names[i])) {
            opt->req_flags_mask |= 1u << i;
            return 0;
        }
    }
    return refuse(arg, "unknown flag '%s' for %s (preflush, fua, sync, meta, "
                "readahead, secure, nocache, paging, sync_api, associated, buffered "
                "or sync_paging)", tok, arg->shown);
}

static int one_disk(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    if (opt->n_disks == DM_MAX_DISK_FILTERS)
        return refuse(arg, "too many disks for %s (at most %d)", arg->shown,
                    DM_MAX_DISK_FILTERS);
    opt->disks[opt->n_disks++] = tok;
    return 0;
}

static int one_pid(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    uint64_t v;

    if (parse_u64(tok, &v) != 0 || v > UINT32_MAX)
        return refuse(arg, "bad process id '%s' for %s", tok, arg->shown);
    if (opt->n_pids == DM_MAX_PID_FILTERS)
        return refuse(arg, "too many process ids for %s (at most %d)", arg->shown,
                    DM_MAX_PID_FILTERS);
    opt->pids[opt->n_pids++] = (uint32_t)v;
    return 0;
}

static int one_comm(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    if (opt->n_comms == DM_MAX_COMM_FILTERS)
        return refuse(arg, "too many process names for %s (at most %d)", arg->shown,
                    DM_MAX_COMM_FILTERS);
    opt->comms[opt->n_comms++] = tok;
    return 0;
}

/* A cgroup v2 path as /proc/PID/cgroup shows it: from the root, "/a/b".
 * A trailing '/' is dropped (written over), so "/a/" is "/a". */
static int one_cgroup(struct dm_options *opt, char *tok, const struct dm_opt_arg *arg)
{
    size_t n = strlen(tok);

    if (tok[0] != '/')
        return refuse(arg, "bad cgroup '%s' for %s (a path from the cgroup "
                           "root, starting with /)", tok, arg->shown);
    while (n > 1 && tok[n - 1] == '/')
        tok[--n] = '\0';
    if (opt->n_cgroups == DM_MAX_CGROUP_FILTERS)
        return refuse(arg, "too many cgroups for %s (at most %d)", arg->shown,
                    DM_MAX_CGROUP_FILTERS);
    opt->cgroups[opt->n_cgroups++] = tok;
    return 0;
}


/* -r, -o, --metrics and the pictures: a file name, never empty. */
static int file_name(const struct dm_opt_arg *arg, const char **to)
{
    if (arg->value[0] == '\0')
        return refuse(arg, "empty file name for %s", arg->shown);
    *to = arg->value;
    return 0;
}

/* --- the handlers, in the table's order ------------------------------------ */

/* An option that only switches something on: the row's flag, an int in
 * struct dm_options, becomes 1. */
static int set_flag(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    *(int *)(void *)((char *)opt + arg->row->flag) = 1;
    return 0;
}

static int on_replay(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return file_name(arg, &opt->replay_path);
}

/* --input-format NAME: the name is checked by src/input, which knows the
 * formats (a layer above this one), when -r's input is opened. */
static int on_input_format(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (arg->value[0] == '\0')
        return refuse(arg, "empty format name for %s", arg->shown);
    opt->input_format = arg->value;
    return 0;
}

static int on_backend(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (dm_opt_same_word(arg->value, "tracefs"))
        opt->backend = DM_BACKEND_TRACEFS;
    else if (dm_opt_same_word(arg->value, "perf"))
        opt->backend = DM_BACKEND_PERF;
    else
        return refuse(arg, "bad backend '%s' for %s (tracefs or perf)", arg->value,
                      arg->shown);
    return 0;
}

static int on_self_test(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (arg->value != NULL && arg->value[0] == '\0')
        return refuse(arg, "empty path for %s", arg->shown);
    opt->self_test = 1;
    opt->self_test_path = arg->value;
    return 0;
}

static int on_disk(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "disk name", one_disk);
}

static int on_op(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "request name", one_op);
}

static int on_flags(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "flag name", one_flag);
}

static int on_pid(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "process id", one_pid);
}

static int on_comm(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "process name", one_comm);
}

static int on_cgroup(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return each_piece(opt, arg, "cgroup", one_cgroup);
}

static int on_min_latency(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (parse_ns(arg->value, 1e6, &opt->min_latency_ns) != 0)
        return refuse(arg, "bad latency '%s' for %s (milliseconds, e.g. 2.5)", arg->value,
                      arg->shown);
    return 0;
}

static int on_count(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (parse_u64(arg->value, &opt->count) != 0 || opt->count == 0)
        return refuse(arg, "bad count '%s' for %s (a whole number above 0)", arg->value,
                      arg->shown);
    return 0;
}

static int on_duration(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    /* parse_ns refuses more than 1.8e19 ns (a uint64_t): 1.8e10 s. */
    if (parse_ns(arg->value, 1e9, &opt->duration_ns) != 0 || opt->duration_ns == 0)
        return refuse(arg, "bad duration '%s' for %s (seconds above 0, at most 18000000000)",
                      arg->value, arg->shown);
    return 0;
}

static int on_format(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    opt->format_given = 1;
    if (dm_opt_same_word(arg->value, "text"))
        opt->format = DM_FMT_TEXT;
    else if (dm_opt_same_word(arg->value, "csv"))
        opt->format = DM_FMT_CSV;
    else if (dm_opt_same_word(arg->value, "json"))
        opt->format = DM_FMT_JSON;
    else
        return refuse(arg, "unknown format '%s' for %s (text, csv or json)", arg->value,
                      arg->shown);
    return 0;
}

static int on_output(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return file_name(arg, &opt->output_path);
}

static int on_utc(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    (void)arg;
    opt->utc = 1;
    opt->clock = 1;
    return 0;
}

static int on_top(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    opt->top_sec_given = arg->value != NULL;
    if (arg->value == NULL)
        opt->top_ns = 1000000000u; /* the default: 1 s */
    else if (parse_ns(arg->value, 1e9, &opt->top_ns) != 0 || opt->top_ns < DM_TOP_MIN_NS ||
             opt->top_ns > DM_TOP_MAX_NS)
        return refuse(arg, "bad interval '%s' for %s (seconds, at least 0.001, at most 86400)",
                      arg->value, arg->shown);
    return 0;
}

static int on_by(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    opt->by_given = 1;
    if (dm_opt_same_word(arg->value, "process"))
        opt->top_by = DM_TOP_BY_PROCESS;
    else if (dm_opt_same_word(arg->value, "file"))
        opt->top_by = DM_TOP_BY_FILE;
    else if (dm_opt_same_word(arg->value, "disk"))
        opt->top_by = DM_TOP_BY_DISK;
    else if (dm_opt_same_word(arg->value, "cgroup"))
        opt->top_by = DM_TOP_BY_CGROUP;
    else if (dm_opt_same_word(arg->value, "partition"))
        opt->top_by = DM_TOP_BY_PARTITION;
    else
        return refuse(arg, "bad key '%s' for %s (process, file, disk, cgroup or partition)",
                      arg->value, arg->shown);
    return 0;
}

static int on_metrics(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return file_name(arg, &opt->metrics_path);
}

static int on_interval(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    if (parse_ns(arg->value, 1e9, &opt->metrics_ns) != 0 || opt->metrics_ns == 0 ||
        opt->metrics_ns > DM_TOP_MAX_NS)
        return refuse(arg, "bad interval '%s' for %s (seconds above 0, at most 86400)",
                      arg->value, arg->shown);
    return 0;
}

static int on_metrics_top(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    uint64_t v;

    if (parse_u64(arg->value, &v) != 0 || v > DM_METRICS_TOP_MAX)
        return refuse(arg, "bad count '%s' for %s (a whole number, at most %d)", arg->value,
                      arg->shown, DM_METRICS_TOP_MAX);
    opt->metrics_top = (unsigned)v;
    opt->metrics_top_given = 1;
    return 0;
}

/* --heatmap, --offset-map, --report: a file name, once each. */
static int picture_file(const struct dm_opt_arg *arg, const char **to)
{
    if (*to != NULL)
        return refuse(arg, "%s given twice (%s and %s): one file each", arg->shown, *to,
                      arg->value);
    return file_name(arg, to);
}

static int on_heatmap(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return picture_file(arg, &opt->heatmap_path);
}

static int on_offset_map(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return picture_file(arg, &opt->offset_map_path);
}

static int on_report(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    return picture_file(arg, &opt->report_path);
}

/* Whole milliseconds above 0, at most a day. */
static int on_heatmap_step(struct dm_options *opt, const struct dm_opt_arg *arg)
{
    uint64_t v;

    if (parse_u64(arg->value, &v) != 0 || v == 0 || v > DM_HEATMAP_STEP_MAX_MS)
        return refuse(arg, "bad step '%s' for %s (whole milliseconds above 0, at most %llu)",
                      arg->value, arg->shown, (unsigned long long)DM_HEATMAP_STEP_MAX_MS);
    opt->heatmap_step_ms = v;
    return 0;
}

/* --- the table --------------------------------------------------------------
 * In --help's order; a row with a heading starts a section. The help text
 * is --help's, line for line (the text column starts at column 25). */
#define FLAG(field) .handle = set_flag, .flag = offsetof(struct dm_options, field)

const struct dm_option_row dm_option_rows[] = {
    {.short_name = 'r', .long_name = "replay", .value = "FILE", .heading = "Source:",
     .help = "read FILE instead of capturing live: a .etl trace,\n"
             "diskmon's own csv or json lines, or a public block\n"
             "trace (MSR Cambridge, SYSTOR '17, Tencent CBS);\n"
             "-r - reads standard input as it comes",
     .handle = on_replay},
    {.long_name = "input-format", .value = "NAME",
     .help = "read -r's input as NAME (etl, json, csv, systor,\n"
             "msr, tencent) instead of recognising it",
     .handle = on_input_format},
    {.long_name = "force", .with_self_test = 1,
     .help = "(Windows) stop a running NT Kernel Logger session first", FLAG(force)},
    {.long_name = "cleanup", .help = "stop a leftover diskmon session and exit",
     FLAG(cleanup)},
    {.long_name = "queue", .help = "(Linux) add a Queue column: time before dispatch",
     FLAG(queue)},
    {.long_name = "backend", .value = "B", .with_self_test = 1,
     .help = "(Linux) tracefs (default) or perf: how events are read", .handle = on_backend},
    {.long_name = "self-test", .value = "[PATH]", .with_self_test = 1,
     .help = "check live capture on this machine: known I/O to a\n"
             "temporary file in PATH's folder (default: Linux\n"
             "/var/tmp, Windows %SystemRoot%\\Temp), one PASS or\n"
             "FAIL line per check; exit 0 when all pass",
     .handle = on_self_test},

    {.short_name = 'd', .long_name = "disk", .value = "DISK",
     .heading = "Filters (each takes a comma list and may be repeated: any value matches):",
     .help = "only this disk: number (Windows), name (sda,\n"
             "/dev/sda, loop0) or MAJ:MIN (Linux); or only\n"
             "the requests inside one partition (sda2) or\n"
             "volume (C:)",
     .handle = on_disk},
    {.long_name = "op", .value = "LIST",
     .help = "only these requests: read,write,flush,discard", .handle = on_op},
    {.long_name = "flags", .value = "LIST",
     .help = "only requests with one of these flags: preflush,\n"
             "fua,sync,meta,readahead,secure (Linux); nocache,\n"
             "paging,sync_api,associated,buffered,sync_paging",
     .handle = on_flags},
    {.short_name = 'p', .long_name = "pid", .value = "PID",
     .help = "only I/O issued by this process id", .handle = on_pid},
    {.short_name = 'c', .long_name = "comm", .value = "NAME",
     .help = "only I/O issued by this process name (any case;\n"
             ".exe optional; Linux: 15 characters at most)",
     .handle = on_comm},
    {.long_name = "cgroup", .value = "PATH",
     .help = "(Linux) only I/O issued from this cgroup v2 path or\n"
             "below it (/system.slice matches\n"
             "/system.slice/foo.service)",
     .handle = on_cgroup},
    {.short_name = 'm', .long_name = "min-latency", .value = "MS",
     .help = "only requests that took at least MS milliseconds", .handle = on_min_latency},

    {.short_name = 'n', .long_name = "count", .value = "N", .heading = "Stop:",
     .help = "stop after N events", .handle = on_count},
    {.short_name = 't', .long_name = "duration", .value = "SEC",
     .help = "stop after SEC seconds (replay: of trace time)", .handle = on_duration},

    {.short_name = 'f', .long_name = "format", .value = "FMT", .heading = "Output:",
     .help = "text (default), csv or json (one object per line)", .handle = on_format},
    {.short_name = 'o', .long_name = "output", .value = "FILE",
     .help = "write events to FILE instead of standard output", .handle = on_output},
    {.long_name = "clock",
     .help = "wall-clock Time column instead of seconds since start\n"
             "(replay: the time zone recorded in the trace)",
     FLAG(clock)},
    {.long_name = "utc", .help = "wall-clock Time column in UTC; json: a time_utc key",
     .handle = on_utc},
    {.long_name = "no-header", .help = "no column header line", FLAG(no_header)},
    {.short_name = 's', .long_name = "summary",
     .help = "at exit, per disk and request: count, bytes, IOPS,\n"
             "MB/s, latency p50/p95/p99/max, events lost (stderr)",
     FLAG(summary)},
    {.long_name = "hist", .help = "at exit, a log2 latency histogram per disk (stderr)",
     FLAG(hist)},
    {.long_name = "top", .value = "[SEC]", .numeric = 1,
     .help = "who uses the disk: sums every SEC seconds (default 1),\n"
             "a screen redrawn in place on a terminal",
     .handle = on_top},
    {.long_name = "by", .value = "KEY",
     .help = "--top rows per process (default), file, disk or\n"
             "cgroup (Linux) or partition",
     .handle = on_by},
    {.long_name = "metrics", .value = "FILE",
     .help = "Prometheus counters and latency histograms in FILE,\n"
             "replaced every interval (for node_exporter's or\n"
             "windows_exporter's textfile collector); alone,\n"
             "without -o, -f or --top, no event lines; FILE is\n"
             "a regular file or a new name, never a link or a\n"
             "device, and not the -r or -o file",
     .handle = on_metrics},
    {.long_name = "interval", .value = "SEC",
     .help = "how often --metrics (default 15) or --top writes", .handle = on_interval},
    {.long_name = "metrics-top", .value = "K",
     .help = "process and disk pairs (and Linux cgroups) with\n"
             "series of their own (default 20); the rest are\n"
             "summed as (other), one per disk",
     .handle = on_metrics_top},
    {.long_name = "heatmap", .value = "FILE",
     .help = "latency heat map (SVG): time across, latency up on\n"
             "a log scale, colour = requests per cell; live,\n"
             "replaced every 10 s (or the --interval); FILE as\n"
             "for --metrics",
     .handle = on_heatmap},
    {.long_name = "offset-map", .value = "FILE",
     .help = "byte offset over time (SVG), one panel per disk", .handle = on_offset_map},
    {.long_name = "report", .value = "FILE",
     .help = "one self-contained HTML page: the source, the -s\n"
             "table, --hist as bars, both maps, throughput over\n"
             "time, top processes and files; no network needed",
     .handle = on_report},
    {.long_name = "heatmap-step", .value = "MS",
     .help = "the maps' column width in whole ms (default: 1 ms,\n"
             "doubled to keep at most 300 columns)",
     .handle = on_heatmap_step},
    {.short_name = 'h', .long_name = "help", .with_self_test = 1, .help = "this help",
     FLAG(show_help)},
    {.short_name = 'V', .long_name = "version", .with_self_test = 1,
     .help = "version, compiler and target", FLAG(show_version)},
};

const size_t dm_option_row_count = sizeof dm_option_rows / sizeof dm_option_rows[0];
