/*
 * view.h - what a view is: something the printer feeds with the events it
 * counts and that says what it saw, at an interval (live) or at the end.
 * The summary (-s, --hist), --top and --metrics are views; the printer
 * (core/printer.h) loops over the ones the options asked for and names
 * none, and the pipeline builds them from the options in one table
 * (core/pipeline.c, view_table, from views/view_list.h). A new view is one
 * file here with its struct dm_view_ops, and one line in view_list.h.
 *
 * Threads and the results lock. add, tick and close are called by the
 * printer thread only, and only while it holds its results lock
 * (core/printer.h): the main thread takes that lock for good when it must
 * leave a printer stuck on a blocked pipe behind, and from then on no view
 * is touched by the printer. So a view never writes to the output itself
 * (a write may block for good): it draws into cfg->drawn, which the
 * printer writes out after the call. finish and destroy are called by the
 * main thread once the printer has ended or been left behind.
 *
 * A view sits below the command line (layer 4, tests/scripts/layers.sh):
 * it reads its settings from struct dm_view_config, which the pipeline
 * fills from the options once.
 */
#ifndef DM_VIEW_H
#define DM_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "output/format.h"
#include "output/text.h"
#include "views/top_by.h"

/* The one wording of a source without response times (no_latency below),
 * under -s's table and --top's time lines. */
#define DM_NO_LATENCY_NOTE "no latency in this trace: its rows have no response times"

/* Where events went missing, for the summary's last line and the metrics'
 * events_lost_total. */
struct dm_loss {
    uint64_t ring_dropped;   /* ring full: the printer could not keep up */
    uint64_t source_lost;    /* lost by the kernel / trace before diskmon */
    uint64_t malformed;      /* records that failed size checks */
    /* Requests not shown because a filter asked about a field they lack
     * (core/filter.h), by enum dm_field; not lost, but not shown either. */
    uint64_t unknown[DM_FIELD_COUNT];
};

/* Everything a view may be built from: the options that ask for views,
 * and what the source and the printer give them. */
struct dm_view_config {
    /* the command line (cli/options.h) */
    int summary;                 /* -s */
    int hist;                    /* --hist */
    uint64_t top_ns;             /* --top SEC; 0: no --top */
    enum dm_top_by top_by;       /* --by */
    enum dm_format format;       /* -f: --top's csv and json */
    int no_header;               /* --no-header */
    const char *metrics_path;    /* --metrics FILE; NULL: none */
    unsigned metrics_top;        /* --metrics-top K */
    uint64_t metrics_ns;         /* --interval, for --metrics */
    const char *heatmap_path;    /* --heatmap FILE.svg; NULL: none */
    const char *offset_map_path; /* --offset-map FILE.svg; NULL: none */
    const char *report_path;     /* --report FILE.html; NULL: none */
    uint64_t heatmap_step_ms;    /* --heatmap-step MS; 0: chosen to fit */
    uint64_t heat_ns;            /* live: how often the maps are rewritten */
    const char *source_label;    /* the maps' titles: the trace, or the live disks */
    uint64_t start_wall_ns;      /* wall clock at time 0, ns since 1970; 0: unknown */
    /* the source */
    int live;                    /* a live capture (ticks come), not a replay */
    const char *source_name;     /* its backend: etw, tracefs, perf, replay */
    uint64_t lost_base;          /* events the source had lost at open */
    const struct dm_task_io *task_io; /* live: cache writes per process; NULL: none */
    /* The size of a disk where the source knows it (dm_source.disk_size,
     * diskmon.h): the offset map's rows run to it. NULL: never known. */
    uint64_t (*disk_size)(const void *ctx, uint32_t disk, const char **from);
    const void *disk_size_ctx;
    /* A filter (-d, -p, -c, --cgroup, --op, --flags, -m) picks the block
     * requests: the views' rows are those requests, Cache-W is not. */
    int requests_filtered;
    int no_latency;              /* no response times: say so, show no latency */
    /* the printer */
    FILE *out;                   /* the output: only to ask for its terminal */
    struct dm_text *drawn;       /* where a view draws for the output */
    FILE *errf;                  /* where a view says its own failures */
    /* Events dropped by the ring so far (may be called from add and tick). */
    uint64_t (*ring_dropped)(const void *ctx);
    const void *ring_ctx;
    /* Requests of an unknown field a filter did not show so far, by enum
     * dm_field (core/filter.h; any thread); NULL: none counted. */
    void (*unknown)(const void *ctx, uint64_t out[DM_FIELD_COUNT]);
    const void *unknown_ctx;
};

/* The printer's last call: how the run stopped, on the events' clock. */
struct dm_view_close {
    uint64_t now_ns;             /* live: the capture clock at the end */
    int time_limit_hit;          /* replay -t: the trace went past it */
    uint64_t time_limit_ns;      /* that -t, in trace time */
};

/* The main thread's last call, after the printer. */
struct dm_view_end {
    uint64_t elapsed_ns;         /* the capture's length: live, wall; replay, trace */
    const struct dm_loss *loss;  /* the run's whole account of losses */
    struct dm_text *report;      /* appended to, then written to errf by the caller */
};

struct dm_view_ops {
    const char *name;
    /* 1: the view draws on the output in place of the event lines (--top). */
    int draws;
    /* Build the view if cfg asks for it: 0 with *view set, 0 with *view
     * NULL when not asked for, or a negative dm_err (DM_ENOMEM). May draw
     * what comes before the first event into cfg->drawn. */
    int (*create)(const struct dm_view_config *cfg, void **view);
    /* n events the printer counted, in its order (completion order). */
    void (*add)(void *view, const struct dm_event *ev, size_t n);
    /* Live only, NULL if never needed: the capture clock (ns since the
     * printer started) is at now_ns. Returns the ns until the view next
     * wants a tick (UINT64_MAX: no wish); the printer may call it sooner. */
    uint64_t (*tick)(void *view, uint64_t now_ns);
    /* After the last event, while the output still takes writes; NULL: nothing. */
    void (*close)(void *view, const struct dm_view_close *c);
    /* The end of the run, in table order: 0, or -1 to end the run with
     * exit 1 (the view said why on errf). NULL: nothing. */
    int (*finish)(void *view, const struct dm_view_end *end);
    void (*destroy)(void *view);
};

/* A view that was built: its operations and its state. */
struct dm_view {
    const struct dm_view_ops *ops;
    void *state;
};

/* The views of diskmon, one file each (views/view_list.h). */
#define DM_VIEW(name) extern const struct dm_view_ops dm_##name##_view;
#include "views/view_list.h"
#undef DM_VIEW

#endif /* DM_VIEW_H */
