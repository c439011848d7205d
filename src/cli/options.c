/*
 * options.c - the command line. A small hand-written parser (no getopt, which
 * MSVC lacks): -x VALUE, -xVALUE, --long VALUE and --long=VALUE.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "output/escape.h"
#include "cli/options.h"
#include "diskmon.h"
#include "platform/platform.h"

enum opt_id {
    O_REPLAY, O_FORMAT, O_OUTPUT, O_DISK, O_OP, O_FLAGS, O_PID, O_COMM, O_MIN_LATENCY,
    O_COUNT, O_DURATION, O_CLOCK, O_UTC, O_NO_HEADER, O_SUMMARY, O_HIST, O_QUEUE,
    O_FORCE, O_CLEANUP, O_HELP, O_VERSION, O_BACKEND, O_TOP, O_BY,
    O_METRICS, O_INTERVAL, O_METRICS_TOP, O_SELF_TEST, O_CGROUP
};

/* --top [SEC]: the value is optional (dm_options_parse's contract). */
#define TAKES_OPTIONAL 2

struct opt_spec {
    enum opt_id id;
    char short_name;     /* 0: long only */
    const char *long_name;
    int takes_value;     /* 1: needs one; TAKES_OPTIONAL: may have one */
};

static const struct opt_spec specs[] = {
    {O_REPLAY, 'r', "replay", 1},   {O_FORMAT, 'f', "format", 1},
    {O_OUTPUT, 'o', "output", 1},   {O_DISK, 'd', "disk", 1},
    {O_OP, 0, "op", 1},             {O_FLAGS, 0, "flags", 1},
    {O_PID, 'p', "pid", 1},         {O_CGROUP, 0, "cgroup", 1},
    {O_COMM, 'c', "comm", 1},       {O_MIN_LATENCY, 'm', "min-latency", 1},
    {O_COUNT, 'n', "count", 1},     {O_DURATION, 't', "duration", 1},
    {O_CLOCK, 0, "clock", 0},       {O_UTC, 0, "utc", 0},
    {O_NO_HEADER, 0, "no-header", 0},
    {O_SUMMARY, 's', "summary", 0}, {O_HIST, 0, "hist", 0},
    {O_QUEUE, 0, "queue", 0},       {O_FORCE, 0, "force", 0},
    {O_CLEANUP, 0, "cleanup", 0},   {O_HELP, 'h', "help", 0},
    {O_VERSION, 'V', "version", 0},
    {O_BACKEND, 0, "backend", 1},
    {O_TOP, 0, "top", TAKES_OPTIONAL}, {O_BY, 0, "by", 1},
    /* --metrics */
    {O_METRICS, 0, "metrics", 1},   {O_INTERVAL, 0, "interval", 1},
    {O_METRICS_TOP, 0, "metrics-top", 1},
    {O_SELF_TEST, 0, "self-test", TAKES_OPTIONAL},
};

int dm_options_help(FILE *out)
{
    static const char help[] =
        "diskmon - watch disk I/O: one line per disk read, write or flush.\n"
        "\n"
        "Usage:\n"
        "  diskmon [OPTIONS]               live capture (Windows: elevated prompt;\n"
        "                                  Linux: root, or cap_perfmon and\n"
        "                                  cap_dac_read_search); Ctrl+C stops\n"
        "  diskmon -r TRACE.etl [OPTIONS]  replay the disk I/O of an ETW trace file\n"
        "\n"
        "Source:\n"
        "  -r, --replay FILE      read a .etl trace instead of capturing live\n"
        "      --force            (Windows) stop a running NT Kernel Logger session first\n"
        "      --cleanup          stop a leftover diskmon session and exit\n"
        "      --queue            (Linux) add a Queue column: time before dispatch\n"
        "      --backend B        (Linux) tracefs (default) or perf: how events are read\n"
        "      --self-test [PATH] check live capture on this machine: known I/O to a\n"
        "                         temporary file in PATH's folder (default: Linux\n"
        "                         /var/tmp, Windows %SystemRoot%\\Temp), one PASS or\n"
        "                         FAIL line per check; exit 0 when all pass\n"
        "\n"
        "Filters (each takes a comma list and may be repeated: any value matches):\n"
        "  -d, --disk DISK        only this disk: number (Windows), name (sda,\n"
        "                         /dev/sda, loop0) or MAJ:MIN (Linux); or only\n"
        "                         the requests inside one partition (sda2) or\n"
        "                         volume (C:)\n"
        "      --op LIST          only these requests: read,write,flush,discard\n"
        "      --flags LIST       only requests with one of these flags: preflush,\n"
        "                         fua,sync,meta,readahead,secure (Linux); nocache,\n"
        "                         paging,sync_api,associated,buffered,sync_paging\n"
        "  -p, --pid PID          only I/O issued by this process id\n"
        "  -c, --comm NAME        only I/O issued by this process name (any case;\n"
        "                         .exe optional; Linux: 15 characters at most)\n"
        "      --cgroup PATH      (Linux) only I/O issued from this cgroup v2 path or\n"
        "                         below it (/system.slice matches\n"
        "                         /system.slice/foo.service)\n"
        "  -m, --min-latency MS   only requests that took at least MS milliseconds\n"
        "\n"
        "Stop:\n"
        "  -n, --count N          stop after N events\n"
        "  -t, --duration SEC     stop after SEC seconds (replay: of trace time)\n"
        "\n"
        "Output:\n"
        "  -f, --format FMT       text (default), csv or json (one object per line)\n"
        "  -o, --output FILE      write events to FILE instead of standard output\n"
        "      --clock            wall-clock Time column instead of seconds since start\n"
        "                         (replay: the time zone recorded in the trace)\n"
        "      --utc              wall-clock Time column in UTC; json: a time_utc key\n"
        "      --no-header        no column header line\n"
        "  -s, --summary          at exit, per disk and request: count, bytes, IOPS,\n"
        "                         MB/s, latency p50/p95/p99/max, events lost (stderr)\n"
        "      --hist             at exit, a log2 latency histogram per disk (stderr)\n"
        "      --top [SEC]        who uses the disk: sums every SEC seconds (default 1),\n"
        "                         a screen redrawn in place on a terminal\n"
        "      --by KEY           --top rows per process (default), file, disk or\n"
        "                         cgroup (Linux) or partition\n"
        "      --metrics FILE     Prometheus counters and latency histograms in FILE,\n"
        "                         replaced every interval (for node_exporter's or\n"
        "                         windows_exporter's textfile collector); alone,\n"
        "                         without -o, -f or --top, no event lines; FILE is\n"
        "                         a regular file or a new name, never a link or a\n"
        "                         device, and not the -r or -o file\n"
        "      --interval SEC     how often --metrics (default 15) or --top writes\n"
        "      --metrics-top K    process and disk pairs (and Linux cgroups) with\n"
        "                         series of their own (default 20); the rest are\n"
        "                         summed as (other), one per disk\n"
        "  -h, --help             this help\n"
        "  -V, --version          version, compiler and target\n"
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

    return dm_write_all(out, help, sizeof help - 1);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    char raw[512];
    va_list ap;

    /* Messages quote the argument they refuse as it was given, and an
     * argument may hold a line break or an escape sequence: the message
     * is shown as names are (output/escape.h), one line, inert on a
     * terminal. */
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    dm_escape_term_string(err, errlen, raw);
    return DM_EUSAGE;
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
static int same_word(const char *a, const char *b)
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
static int each_piece(char *value, const char *shown, const char *what,
                      int (*one)(struct dm_options *, char *, const char *, char *, size_t),
                      struct dm_options *opt, char *err, size_t errlen)
{
    char *p = value;

    for (;;) {
        char *comma = strchr(p, ',');
        int rc;

        if (comma != NULL)
            *comma = '\0';
        if (*p == '\0')
            return fail(err, errlen, "empty %s in %s", what, shown);
        rc = one(opt, p, shown, err, errlen);
        if (rc != 0)
            return rc;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int one_op(struct dm_options *opt, char *tok, const char *shown, char *err,
                  size_t errlen)
{
    for (int r = 0; r < DM_REQ_COUNT; r++) {
        /* The Request column's word, in any case. */
        if (same_word(tok, dm_request_names[r])) {
            opt->op_mask |= DM_OP_BIT(r);
            return 0;
        }
    }
    return fail(err, errlen, "unknown request '%s' for %s (read, write, flush or discard)",
                tok, shown);
}

static int one_flag(struct dm_options *opt, char *tok, const char *shown, char *err,
                    size_t errlen)
{
    for (unsigned i = 0; i < DM_RQ_COUNT; i++) {
        if (same_word(tok, dm_req_flag_names[i])) {
            opt->req_flags_mask |= 1u << i;
            return 0;
        }
    }
    return fail(err, errlen, "unknown flag '%s' for %s (preflush, fua, sync, meta, "
                "readahead, secure, nocache, paging, sync_api, associated, buffered "
                "or sync_paging)", tok, shown);
}

static int one_disk(struct dm_options *opt, char *tok, const char *shown, char *err,
                    size_t errlen)
{
    if (opt->n_disks == DM_MAX_DISK_FILTERS)
        return fail(err, errlen, "too many disks for %s (at most %d)", shown,
                    DM_MAX_DISK_FILTERS);
    opt->disks[opt->n_disks++] = tok;
    return 0;
}

static int one_pid(struct dm_options *opt, char *tok, const char *shown, char *err,
                   size_t errlen)
{
    uint64_t v;

    if (parse_u64(tok, &v) != 0 || v > UINT32_MAX)
        return fail(err, errlen, "bad process id '%s' for %s", tok, shown);
    if (opt->n_pids == DM_MAX_PID_FILTERS)
        return fail(err, errlen, "too many process ids for %s (at most %d)", shown,
                    DM_MAX_PID_FILTERS);
    opt->pids[opt->n_pids++] = (uint32_t)v;
    return 0;
}

static int one_comm(struct dm_options *opt, char *tok, const char *shown, char *err,
                    size_t errlen)
{
    if (opt->n_comms == DM_MAX_COMM_FILTERS)
        return fail(err, errlen, "too many process names for %s (at most %d)", shown,
                    DM_MAX_COMM_FILTERS);
    opt->comms[opt->n_comms++] = tok;
    return 0;
}

/* A cgroup v2 path as /proc/PID/cgroup shows it: from the root, "/a/b".
 * A trailing '/' is dropped (written over), so "/a/" is "/a". */
static int one_cgroup(struct dm_options *opt, char *tok, const char *shown, char *err,
                      size_t errlen)
{
    size_t n = strlen(tok);

    if (tok[0] != '/')
        return fail(err, errlen, "bad cgroup '%s' for %s (a path from the cgroup "
                                 "root, starting with /)", tok, shown);
    while (n > 1 && tok[n - 1] == '/')
        tok[--n] = '\0';
    if (opt->n_cgroups == DM_MAX_CGROUP_FILTERS)
        return fail(err, errlen, "too many cgroups for %s (at most %d)", shown,
                    DM_MAX_CGROUP_FILTERS);
    opt->cgroups[opt->n_cgroups++] = tok;
    return 0;
}

/* --metrics, --interval, --metrics-top. */
static int apply_metrics(struct dm_options *opt, enum opt_id id, char *value,
                         const char *shown, char *err, size_t errlen)
{
    uint64_t v;

    switch (id) {
    case O_METRICS:
        if (value[0] == '\0')
            return fail(err, errlen, "empty file name for %s", shown);
        opt->metrics_path = value;
        break;
    case O_INTERVAL:
        if (parse_ns(value, 1e9, &opt->metrics_ns) != 0 || opt->metrics_ns == 0 ||
            opt->metrics_ns > DM_TOP_MAX_NS)
            return fail(err, errlen,
                        "bad interval '%s' for %s (seconds above 0, at most 86400)",
                        value, shown);
        break;
    case O_METRICS_TOP:
        if (parse_u64(value, &v) != 0 || v > DM_METRICS_TOP_MAX)
            return fail(err, errlen, "bad count '%s' for %s (a whole number, at most %d)",
                        value, shown, DM_METRICS_TOP_MAX);
        opt->metrics_top = (unsigned)v;
        opt->metrics_top_given = 1;
        break;
    default:
        break;
    }
    return 0;
}

static int apply(struct dm_options *opt, const struct opt_spec *sp, char *value,
                 const char *shown, char *err, size_t errlen)
{
    switch (sp->id) {
    case O_REPLAY:
        if (value[0] == '\0')
            return fail(err, errlen, "empty file name for %s", shown);
        opt->replay_path = value;
        break;
    case O_FORMAT:
        opt->format_given = 1;
        if (same_word(value, "text"))
            opt->format = DM_FMT_TEXT;
        else if (same_word(value, "csv"))
            opt->format = DM_FMT_CSV;
        else if (same_word(value, "json"))
            opt->format = DM_FMT_JSON;
        else
            return fail(err, errlen, "unknown format '%s' for %s (text, csv or json)",
                        value, shown);
        break;
    case O_OUTPUT:
        if (value[0] == '\0')
            return fail(err, errlen, "empty file name for %s", shown);
        opt->output_path = value;
        break;
    case O_DISK:
        return each_piece(value, shown, "disk name", one_disk, opt, err, errlen);
    case O_OP:
        return each_piece(value, shown, "request name", one_op, opt, err, errlen);
    case O_FLAGS:
        return each_piece(value, shown, "flag name", one_flag, opt, err, errlen);
    case O_PID:
        return each_piece(value, shown, "process id", one_pid, opt, err, errlen);
    case O_COMM:
        return each_piece(value, shown, "process name", one_comm, opt, err, errlen);
    case O_CGROUP:
        return each_piece(value, shown, "cgroup", one_cgroup, opt, err, errlen);
    case O_MIN_LATENCY:
        if (parse_ns(value, 1e6, &opt->min_latency_ns) != 0)
            return fail(err, errlen, "bad latency '%s' for %s (milliseconds, e.g. 2.5)",
                        value, shown);
        break;
    case O_COUNT:
        if (parse_u64(value, &opt->count) != 0 || opt->count == 0)
            return fail(err, errlen, "bad count '%s' for %s (a whole number above 0)",
                        value, shown);
        break;
    case O_DURATION:
        /* parse_ns refuses more than 1.8e19 ns (a uint64_t): 1.8e10 s. */
        if (parse_ns(value, 1e9, &opt->duration_ns) != 0 || opt->duration_ns == 0)
            return fail(err, errlen,
                        "bad duration '%s' for %s (seconds above 0, at most 18000000000)",
                        value, shown);
        break;
    case O_CLOCK:
        opt->clock = 1;
        break;
    case O_UTC:
        opt->utc = 1;
        opt->clock = 1;
        break;
    case O_NO_HEADER:
        opt->no_header = 1;
        break;
    case O_SUMMARY:
        opt->summary = 1;
        break;
    case O_HIST:
        opt->hist = 1;
        break;
    case O_QUEUE:
        opt->queue = 1;
        break;
    case O_FORCE:
        opt->force = 1;
        break;
    case O_CLEANUP:
        opt->cleanup = 1;
        break;
    case O_HELP:
        opt->show_help = 1;
        break;
    case O_VERSION:
        opt->show_version = 1;
        break;
    case O_TOP:
        opt->top_sec_given = value != NULL;
        if (value == NULL)
            opt->top_ns = 1000000000u; /* the default: 1 s */
        else if (parse_ns(value, 1e9, &opt->top_ns) != 0 || opt->top_ns < DM_TOP_MIN_NS ||
                 opt->top_ns > DM_TOP_MAX_NS)
            return fail(err, errlen,
                        "bad interval '%s' for %s (seconds, at least 0.001, at most 86400)",
                        value, shown);
        break;
    case O_BY:
        opt->by_given = 1;
        if (same_word(value, "process"))
            opt->top_by = DM_TOP_BY_PROCESS;
        else if (same_word(value, "file"))
            opt->top_by = DM_TOP_BY_FILE;
        else if (same_word(value, "disk"))
            opt->top_by = DM_TOP_BY_DISK;
        else if (same_word(value, "cgroup"))
            opt->top_by = DM_TOP_BY_CGROUP;
        else if (same_word(value, "partition"))
            opt->top_by = DM_TOP_BY_PARTITION;
        else
            return fail(err, errlen,
                        "bad key '%s' for %s (process, file, disk, cgroup or partition)",
                        value, shown);
        break;
    case O_SELF_TEST:
        if (value != NULL && value[0] == '\0')
            return fail(err, errlen, "empty path for %s", shown);
        opt->self_test = 1;
        opt->self_test_path = value;
        break;
    case O_METRICS:
    case O_INTERVAL:
    case O_METRICS_TOP:
        return apply_metrics(opt, sp->id, value, shown, err, errlen);
    case O_BACKEND:
        if (same_word(value, "tracefs"))
            opt->backend = DM_BACKEND_TRACEFS;
        else if (same_word(value, "perf"))
            opt->backend = DM_BACKEND_PERF;
        else
            return fail(err, errlen, "bad backend '%s' for %s (tracefs or perf)",
                        value, shown);
        break;
    }
    return 0;
}

/* The one interval of --top and --metrics, and what --metrics needs
 * (options.h). */
static int check_metrics(struct dm_options *opt, char *err, size_t errlen)
{
    if (opt->metrics_top_given && opt->metrics_path == NULL)
        return fail(err, errlen, "--metrics-top picks the processes of --metrics: add "
                                 "--metrics FILE");
    if (!opt->metrics_top_given)
        opt->metrics_top = DM_METRICS_DEFAULT_TOP;
    if (opt->metrics_ns != 0 && opt->metrics_path == NULL && opt->top_ns == 0)
        return fail(err, errlen, "--interval sets how often --metrics or --top writes: "
                                 "add one of them");
    if (opt->top_ns != 0 && opt->top_sec_given && opt->metrics_ns != 0 &&
        opt->metrics_ns != opt->top_ns)
        return fail(err, errlen, "--top SEC and --interval SEC differ: give the "
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

    if (n > 4 && same_word(arg + n - 4, ".etl") && opt->replay_path != NULL)
        return fail(err, errlen, "unexpected argument '%s': diskmon reads one trace "
                                 "per run (-r %s); run it once for each trace",
                    arg, opt->replay_path);
    if (n > 4 && same_word(arg + n - 4, ".etl"))
        return fail(err, errlen, "unexpected argument '%s': did you mean -r %s?", arg,
                    arg);
    return fail(err, errlen, "unexpected argument '%s'", arg);
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
        const struct opt_spec *sp = NULL;
        char *value = NULL;
        int rc;

        if (end_of_options || arg[0] != '-' || arg[1] == '\0')
            return stray_argument(opt, arg, err, errlen);
        if (strcmp(arg, "--") == 0) {
            end_of_options = 1;
            continue;
        }
        if (arg[1] == '-') {
            char *eq = strchr(arg + 2, '=');
            size_t n = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);

            for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
                if (strlen(specs[k].long_name) == n &&
                    strncmp(specs[k].long_name, arg + 2, n) == 0)
                    sp = &specs[k];
            if (sp == NULL)
                return fail(err, errlen, "unknown option '%s'", arg);
            if (eq != NULL) {
                if (!sp->takes_value)
                    return fail(err, errlen, "option '--%s' takes no value",
                                sp->long_name);
                value = eq + 1;
            }
        } else {
            for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++)
                if (specs[k].short_name == arg[1])
                    sp = &specs[k];
            if (sp == NULL)
                return fail(err, errlen, "unknown option '%s'", arg);
            if (arg[2] != '\0') {
                if (!sp->takes_value)
                    return fail(err, errlen, "unknown option '%s'", arg);
                value = arg + 2;
            }
        }
        if (sp->takes_value == TAKES_OPTIONAL && value == NULL && i + 1 < argc &&
            argv[i + 1][0] != '-')
            value = argv[++i];
        if (sp->takes_value == 1 && value == NULL) {
            if (i + 1 >= argc)
                return fail(err, errlen, "option '%s' needs a value", arg);
            value = argv[++i];
        }
        rc = apply(opt, sp, value, arg, err, errlen);
        if (rc != 0)
            return rc;
        if (sp->id != O_SELF_TEST && sp->id != O_BACKEND && sp->id != O_FORCE &&
            sp->id != O_HELP && sp->id != O_VERSION && not_with_self_test == NULL)
            not_with_self_test = arg;
    }
    /* --self-test runs its own fixed capture: the options that pick what a
     * capture shows or how it ends have nothing to act on there. */
    if (opt->self_test && not_with_self_test != NULL)
        return fail(err, errlen, "--self-test takes no other options than --backend "
                                 "and --force (not %s)", not_with_self_test);
    /* --op given: the union of its values; not given: every request. */
    if (opt->op_mask == 0)
        opt->op_mask = DM_OP_BIT(DM_REQ_READ) | DM_OP_BIT(DM_REQ_WRITE) |
                       DM_OP_BIT(DM_REQ_FLUSH) | DM_OP_BIT(DM_REQ_DISCARD);
    if (opt->replay_path != NULL && (opt->force || opt->cleanup))
        return fail(err, errlen, "--force and --cleanup are for live capture, not -r");
    if (opt->top_ns != 0 && opt->count != 0)
        return fail(err, errlen, "--top sums intervals, -n counts events: stop --top "
                                 "with -t SEC or Ctrl+C");
    if (opt->by_given && opt->top_ns == 0)
        return fail(err, errlen, "--by picks the rows of --top: add --top");
    if (opt->replay_path != NULL && opt->queue)
        return fail(err, errlen, "--queue is for Linux live capture, not -r");
    if (opt->replay_path != NULL && opt->backend != DM_BACKEND_DEFAULT)
        return fail(err, errlen, "--backend is for Linux live capture, not -r");
    if (opt->replay_path != NULL && (opt->n_cgroups > 0 || opt->top_by == DM_TOP_BY_CGROUP))
        return fail(err, errlen, "%s is for Linux live capture, not -r: a trace has no cgroups",
                    opt->n_cgroups > 0 ? "--cgroup" : "--by cgroup");
    if (opt->top_ns != 0 && opt->clock)
        return fail(err, errlen, "--clock and --utc set the Time column of event "
                                 "lines; --top has no Time column");
    return check_metrics(opt, err, errlen);
}
