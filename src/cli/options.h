/*
 * options.h - the command line, parsed once into struct dm_options. The
 * options themselves are the rows of cli/option_table.c (names, value,
 * --help text, handler); this file is what the rest of diskmon reads.
 */
#ifndef DM_OPTIONS_H
#define DM_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "output/format.h"
#include "views/top_by.h"

/* --backend (Linux live): how block events are read. */
enum dm_backend { DM_BACKEND_DEFAULT = 0, DM_BACKEND_TRACEFS, DM_BACKEND_PERF };

#define DM_MAX_DISK_FILTERS 16
#define DM_MAX_PID_FILTERS 16
#define DM_MAX_COMM_FILTERS 16
#define DM_MAX_CGROUP_FILTERS 16

struct dm_options {
    /* source */
    const char *replay_path;      /* -r FILE: replay; NULL: live; "-": stdin */
    const char *input_format;     /* --input-format NAME; NULL: recognised
                                   * from the input (src/input checks NAME) */
    /* filters (applied by the source thread, see core/filter.h) */
    const char *disks[DM_MAX_DISK_FILTERS]; /* -d, as typed: "0", "sda", "8:0" */
    int n_disks;
    unsigned op_mask;             /* --op: DM_OP_BIT set; default read|write|flush|discard */
    unsigned req_flags_mask;      /* --flags: DM_RQ_* bits, any of them; 0 = no filter */
    uint32_t pids[DM_MAX_PID_FILTERS]; /* -p: any of these */
    int n_pids;
    const char *comms[DM_MAX_COMM_FILTERS]; /* -c: any of these, case-insensitive */
    int n_comms;
    /* --cgroup (Linux live): cgroup v2 path prefixes, any of these; each
     * starts with '/' and has no trailing '/' (but "/" itself) */
    const char *cgroups[DM_MAX_CGROUP_FILTERS];
    int n_cgroups;
    uint64_t min_latency_ns;      /* -m MS */
    /* stop conditions */
    uint64_t count;               /* -n; 0 = unlimited */
    uint64_t duration_ns;         /* -t SEC; 0 = unlimited */
    /* output */
    enum dm_format format;        /* -f */
    const char *output_path;      /* -o; NULL: stdout */
    int clock;                    /* --clock: wall-clock time column */
    int utc;                      /* --utc: that clock in UTC (implies clock) */
    int no_header;                /* --no-header */
    int summary;                  /* -s */
    int hist;                     /* --hist */
    int queue;                    /* --queue (Linux live): queue-time column */
    uint64_t top_ns;              /* --top [SEC]: the interval; 0: no --top */
    enum dm_top_by top_by;        /* --by (needs --top) */
    int by_given;                 /* --by was on the command line */
    /* --metrics (views/metrics.h) */
    const char *metrics_path;     /* --metrics FILE; NULL: none */
    uint64_t metrics_ns;          /* how often FILE is rewritten (live) */
    unsigned metrics_top;         /* --metrics-top K: names with own series */
    int metrics_top_given;        /* --metrics-top was on the command line */
    int top_sec_given;            /* --top had its SEC */
    /* the pictures (views/pictures_view.c); NULL: none */
    const char *heatmap_path;     /* --heatmap FILE.svg */
    const char *offset_map_path;  /* --offset-map FILE.svg */
    const char *report_path;      /* --report FILE.html (views/report.h) */
    uint64_t heatmap_step_ms;     /* --heatmap-step MS; 0: chosen to fit */
    int format_given;             /* -f was on the command line */
    /* live session control (Windows) */
    int force;                    /* --force: stop an existing NT Kernel Logger */
    int cleanup;                  /* --cleanup: stop a leftover diskmon session */
    enum dm_backend backend;      /* --backend (Linux) */
    /* --self-test [PATH] (selftest/selftest.h): with --backend and --force
     * only; PATH NULL: the system's default folder */
    int self_test;
    const char *self_test_path;
    /* set by parsing */
    int show_help;
    int show_version;
};

/*
 * --metrics FILE writes counters for Prometheus every --interval SEC (15 s
 * by default; replay: once, at the end). One interval serves --top and
 * --metrics: --interval SEC sets --top's too, --top SEC sets --metrics'
 * when --interval is not given, and two different values are refused.
 * With --metrics and none of -o, -f and --top no event lines are printed
 * (the daemon mode). --interval needs --top or --metrics; --metrics-top
 * needs --metrics.
 */
#define DM_METRICS_DEFAULT_NS (15ull * 1000000000ull)
#define DM_METRICS_DEFAULT_TOP 20
/* The most --metrics-top may ask for: each name is 8 series, and a fleet's
 * Prometheus keeps every one of them for weeks. */
#define DM_METRICS_TOP_MAX 1000

/* The widest --heatmap-step: a day, as --top's interval. */
#define DM_HEATMAP_STEP_MAX_MS 86400000ull

/* The longest --top interval: a day. It keeps the exact figures of
 * --top's csv/json within 64-bit arithmetic (top_render.c). */
#define DM_TOP_MAX_NS (86400ull * 1000000000ull)
/* Shorter --top intervals are below what a screen or a reader can follow
 * and a typo more likely than a wish (1e-9). */
#define DM_TOP_MIN_NS 1000000ull

/*
 * Whether anything a run of opt does reads an event's partition name: the
 * csv and json lines print it, a -d value may name a partition (and the
 * check that each -d value matched something reads it too), --top --by
 * partition groups by it and --metrics counts per partition. Text lines,
 * -s, --hist and the other --top rows do not. The sources skip the lookup
 * when this is 0.
 */
int dm_options_read_partition(const struct dm_options *opt);

/*
 * The same for an event's cgroup: the csv and json lines print it,
 * --cgroup filters on it, --top --by cgroup groups by it and --metrics
 * counts per cgroup. The Linux source follows no process's cgroup when
 * this is 0.
 */
int dm_options_read_cgroup(const struct dm_options *opt);

/*
 * Parse argv into *opt (which it initialises). Returns 0, or DM_EUSAGE after
 * writing one line (no trailing newline) into err that names the bad
 * argument.
 *
 * Every filter (-d, --op, -p, -c, --cgroup) takes a comma-separated list and may be
 * repeated; all the values given are one union ("any of"). Enumerated values
 * (-f, --op) are matched in any case. "--" ends the options. The pieces of a
 * list point into argv (commas are overwritten with NULs), so argv must
 * outlive opt.
 *
 * --top's SEC is optional: the next argument is taken as SEC when it does
 * not start with '-' (diskmon takes no other plain arguments) or is '-' and
 * a digit or '.' (a negative number, refused as a bad interval), otherwise
 * the interval is 1 s. --top with -n, and --by without --top, are refused.
 * --cgroup and --by cgroup are refused with -r (a trace has no cgroups).
 * --self-test's PATH is optional the same way.
 */
int dm_options_parse(struct dm_options *opt, int argc, char **argv,
                     char *err, size_t errlen);

/* --help's text to out through dm_write_all (platform.h). Returns 0, or -1
 * with errno set (EPIPE: the reader went away). */
int dm_options_help(FILE *out);

#endif /* DM_OPTIONS_H */
