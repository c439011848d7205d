/*
 * options.c - the command line. A small hand-written parser (no getopt, which
 * MSVC lacks): -x VALUE, -xVALUE, --long VALUE and --long=VALUE.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/options.h"
#include "diskmon.h"

enum opt_id {
    O_REPLAY, O_FORMAT, O_OUTPUT, O_DISK, O_OP, O_PID, O_COMM, O_MIN_LATENCY,
    O_COUNT, O_DURATION, O_CLOCK, O_NO_HEADER, O_SUMMARY, O_HIST, O_QUEUE,
    O_FORCE, O_CLEANUP, O_HELP, O_VERSION,
    O_BACKEND
};

struct opt_spec {
    enum opt_id id;
    char short_name;     /* 0: long only */
    const char *long_name;
    int takes_value;
};

static const struct opt_spec specs[] = {
    {O_REPLAY, 'r', "replay", 1},   {O_FORMAT, 'f', "format", 1},
    {O_OUTPUT, 'o', "output", 1},   {O_DISK, 'd', "disk", 1},
    {O_OP, 0, "op", 1},             {O_PID, 'p', "pid", 1},
    {O_COMM, 'c', "comm", 1},       {O_MIN_LATENCY, 'm', "min-latency", 1},
    {O_COUNT, 'n', "count", 1},     {O_DURATION, 't', "duration", 1},
    {O_CLOCK, 0, "clock", 0},       {O_NO_HEADER, 0, "no-header", 0},
    {O_SUMMARY, 's', "summary", 0}, {O_HIST, 0, "hist", 0},
    {O_QUEUE, 0, "queue", 0},       {O_FORCE, 0, "force", 0},
    {O_CLEANUP, 0, "cleanup", 0},   {O_HELP, 'h', "help", 0},
    {O_VERSION, 'V', "version", 0},
    {O_BACKEND, 0, "backend", 1},
};

void dm_options_help(FILE *out)
{
    fputs(
        "diskmon - watch disk I/O: one line per disk read, write or flush.\n"
        "\n"
        "Usage:\n"
        "  diskmon [OPTIONS]               live capture (Windows: elevated prompt;\n"
        "                                  Linux: root or CAP_PERFMON); Ctrl+C stops\n"
        "  diskmon -r TRACE.etl [OPTIONS]  replay the disk I/O of an ETW trace file\n"
        "\n"
        "Source:\n"
        "  -r, --replay FILE      read a .etl trace instead of capturing live\n"
        "      --force            (Windows) stop a running NT Kernel Logger session first\n"
        "      --cleanup          (Windows) stop a leftover diskmon session and exit\n"
        "      --queue            (Linux) add a Queue column: time before dispatch\n"
        "      --backend B        (Linux) tracefs (default) or perf: how events are read\n"
        "\n"
        "Filters:\n"
        "  -d, --disk DISK        only this disk: number (Windows), name (sda, loop0)\n"
        "                         or MAJ:MIN (Linux); repeat or comma-separate\n"
        "      --op LIST          only these requests: read,write,flush,discard\n"
        "  -p, --pid PID          only I/O issued by this process id\n"
        "  -c, --comm NAME        only I/O issued by this process name (any case;\n"
        "                         .exe optional)\n"
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
        "      --no-header        no column header line\n"
        "  -s, --summary          at exit, per disk and request: count, bytes, IOPS,\n"
        "                         MB/s, latency p50/p95/p99/max, events lost (stderr)\n"
        "      --hist             at exit, a log2 latency histogram per disk (stderr)\n"
        "  -h, --help             this help\n"
        "  -V, --version          version\n"
        "\n"
        "Exit status: 0 ok, 1 error, 2 bad usage, 3 completed but events were lost.\n"
        "\n"
        "Examples:\n"
        "  diskmon                               every disk request, live\n"
        "  diskmon | findstr Write               (Windows) only writes, as they happen\n"
        "  sudo diskmon -d sda --op write -s     (Linux) writes to sda, then a summary\n"
        "  diskmon -r trace.etl -f csv -o io.csv replay a trace into a CSV file\n"
        "  diskmon -r trace.etl -m 10 --hist     requests slower than 10 ms, histogram\n",
        out);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
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

/* A non-negative decimal number of units, returned in ns (unit_ns per unit). */
static int parse_ns(const char *s, double unit_ns, uint64_t *out)
{
    char *end;
    double v;

    if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= 0) || v * unit_ns > 1.8e19)
        return -1;
    *out = (uint64_t)(v * unit_ns + 0.5);
    return 0;
}

static int parse_ops(const char *s, unsigned *mask)
{
    char buf[128];
    char *tok;

    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *mask = 0;
    for (tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
        int found = 0;

        for (int r = 0; r < DM_REQ_COUNT; r++) {
            /* Accept the Request column's word in any case. */
            const char *name = dm_request_names[r];
            size_t n = strlen(name);

            if (strlen(tok) == n) {
                size_t i;
                for (i = 0; i < n; i++)
                    if ((tok[i] | 0x20) != (name[i] | 0x20))
                        break;
                if (i == n) {
                    *mask |= DM_OP_BIT(r);
                    found = 1;
                }
            }
        }
        if (!found)
            return -1;
    }
    return *mask != 0 ? 0 : -1;
}

static int add_disks(struct dm_options *opt, char *value, char *err, size_t errlen)
{
    /* Comma-separated; the pieces point into argv, which outlives opt. */
    char *p = value;

    for (;;) {
        char *comma = strchr(p, ',');

        if (comma != NULL)
            *comma = '\0';
        if (*p == '\0')
            return fail(err, errlen, "empty disk name in -d");
        if (opt->n_disks == DM_MAX_DISK_FILTERS)
            return fail(err, errlen, "too many disks for -d (at most 16)");
        opt->disks[opt->n_disks++] = p;
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

static int apply(struct dm_options *opt, const struct opt_spec *sp, char *value,
                 const char *shown, char *err, size_t errlen)
{
    uint64_t v;

    switch (sp->id) {
    case O_REPLAY:
        opt->replay_path = value;
        break;
    case O_FORMAT:
        if (strcmp(value, "text") == 0)
            opt->format = DM_FMT_TEXT;
        else if (strcmp(value, "csv") == 0)
            opt->format = DM_FMT_CSV;
        else if (strcmp(value, "json") == 0)
            opt->format = DM_FMT_JSON;
        else
            return fail(err, errlen, "unknown format '%s' for %s (text, csv or json)",
                        value, shown);
        break;
    case O_OUTPUT:
        opt->output_path = value;
        break;
    case O_DISK:
        return add_disks(opt, value, err, errlen);
    case O_OP:
        if (parse_ops(value, &opt->op_mask) != 0)
            return fail(err, errlen,
                        "bad request list '%s' for %s (read,write,flush,discard)",
                        value, shown);
        break;
    case O_PID:
        if (parse_u64(value, &v) != 0 || v > UINT32_MAX)
            return fail(err, errlen, "bad process id '%s' for %s", value, shown);
        opt->has_pid = 1;
        opt->pid = (uint32_t)v;
        break;
    case O_COMM:
        if (value[0] == '\0')
            return fail(err, errlen, "empty process name for %s", shown);
        opt->comm = value;
        break;
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
        if (parse_ns(value, 1e9, &opt->duration_ns) != 0 || opt->duration_ns == 0)
            return fail(err, errlen, "bad duration '%s' for %s (seconds above 0)",
                        value, shown);
        break;
    case O_CLOCK:
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
    case O_BACKEND:
        if (strcmp(value, "tracefs") == 0 || strcmp(value, "TRACEFS") == 0)
            opt->backend = DM_BACKEND_TRACEFS;
        else if (strcmp(value, "perf") == 0 || strcmp(value, "PERF") == 0)
            opt->backend = DM_BACKEND_PERF;
        else
            return fail(err, errlen, "bad backend '%s' for %s (tracefs or perf)",
                        value, shown);
        break;
    }
    return 0;
}

int dm_options_parse(struct dm_options *opt, int argc, char **argv, char *err,
                     size_t errlen)
{
    memset(opt, 0, sizeof *opt);
    opt->op_mask = DM_OP_BIT(DM_REQ_READ) | DM_OP_BIT(DM_REQ_WRITE) |
                   DM_OP_BIT(DM_REQ_FLUSH) | DM_OP_BIT(DM_REQ_DISCARD);
    err[0] = '\0';

    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        const struct opt_spec *sp = NULL;
        char *value = NULL;
        int rc;

        if (arg[0] != '-' || arg[1] == '\0')
            return fail(err, errlen, "unexpected argument '%s'", arg);
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
        if (sp->takes_value && value == NULL) {
            if (i + 1 >= argc)
                return fail(err, errlen, "option '%s' needs a value", arg);
            value = argv[++i];
        }
        rc = apply(opt, sp, value, arg, err, errlen);
        if (rc != 0)
            return rc;
    }
    if (opt->replay_path != NULL && (opt->force || opt->cleanup))
        return fail(err, errlen, "--force and --cleanup are for live capture, not -r");
    if (opt->replay_path != NULL && opt->queue)
        return fail(err, errlen, "--queue is for Linux live capture, not -r");
    return 0;
}
