/*
 * top.h - diskmon --top: the events of each interval summed per process,
 * per file or per disk, for the screen, the blocks, csv and json that
 * views/top_render.h draws.
 *
 * Intervals are [k*SEC, (k+1)*SEC) on the clock of dm_event.time_ns (the
 * per-event `time`), and an event belongs to the interval that holds its
 * completion time. Events reach the printer in completion order (replay:
 * the .etl reader's merge of its per-CPU streams, etl/etl.h; live ETW:
 * decode/reorder.h; live Linux: its per-CPU buffers merged), so an interval
 * is closed as soon as an event of a later one arrives, or, live, when the
 * clock has passed its end (dm_top_tick). An event older than the open interval (a
 * live straggler after its interval was drawn) is counted in the open one,
 * so the sums over all intervals stay exact.
 *
 * The aggregation is bounded: at most DM_TOP_GROUPS_MAX groups per interval,
 * the first ones seen; the events of any further group are summed into one
 * (other) row. Only --by disk and --by partition keep more: the recent busy
 * periods of each disk (or partition) within the interval, at most DM_TOP_SPANS_MAX, to compute %util
 * (see dm_top_add).
 *
 * Live, a stretch of more than one empty interval (the clock jumped:
 * suspend and resume, a stalled VM; or the printer was held up) is closed
 * as one interval that spans it, marked as a gap, so a jump of J seconds
 * costs one redraw, not J/SEC.
 *
 * Reads, writes and flushes are counted; a discard is not I/O the
 * columns describe, and is left out.
 *
 * Printer thread only.
 */
#ifndef DM_TOP_H
#define DM_TOP_H

#include <stdint.h>

#include "diskmon.h"
#include "views/busy.h"
#include "views/top_by.h"

/* A cut last interval shorter than SEC / DM_TOP_SHORT_PARTS is shown with
 * counts, not rates (dm_top_interval.counts_only; docs/output.md). */
#define DM_TOP_SHORT_PARTS 10

/* Rows of one interval before the rest is summed into (other): more than a
 * screen shows, few enough that a busy server's thousand files cost a fixed
 * 150 KB or so. */
#define DM_TOP_GROUPS_MAX 256

/*
 * Busy periods kept per disk and interval (views/busy.h, whose rule folds
 * the older half of a full window): %util undercounts only when one
 * request was in flight across 512 separate busy periods of its own disk
 * within one interval. 1,024 spans are 16 KB per disk; without the bound,
 * 5 million separate requests in one long interval took 80 MB.
 */
#define DM_TOP_SPANS_MAX 1024u

struct dm_top_group {
    /* The key: which fields count depends on --by. */
    int is_other;                 /* the (other) row */
    int has_pid;
    uint32_t pid;
    int has_process;
    char process[DM_PROCESS_MAX];
    int has_file;
    char file[DM_FILE_MAX + 3];   /* "..." + the path's tail when it was cut */
    char disk[DM_DISK_NAME_MAX];  /* the Disk column's text: "0", "sda" */
    char cgroup[DM_CGROUP_MAX];   /* --by cgroup: the issuer's v2 path; "" unknown */
    char partition[DM_PARTITION_MAX]; /* --by partition: "sda2"; "" whole disk */
    /* The figures. */
    uint64_t reads, writes, flushes;
    uint64_t read_bytes, write_bytes;
    /* --by process, Linux live: bytes the process wrote into the page
     * cache during the interval (dm_top_add_cache_write) */
    uint64_t cache_write_bytes;
    uint64_t latency_ns;          /* sum of durations: avg_ms */
    uint64_t max_ns;
    uint64_t read_latency_ns;     /* r_await */
    uint64_t write_latency_ns;    /* w_await */
    uint64_t overlap_ns;          /* aqu-sz: durations clipped to the interval */
    uint64_t busy_ns;             /* %util: set when the interval closes */
    /* --by disk: the union of its requests' parts in the interval, at most
     * DM_TOP_SPANS_MAX spans */
    struct dm_busy busy;
};

/* One closed interval, as the renderer gets it. */
struct dm_top_interval {
    uint64_t start_ns, end_ns;
    /* Live: an empty stretch of more than one interval, drawn once;
     * start_ns..end_ns is the whole of it. */
    int gap;
    enum dm_top_by by;
    /* The rows carry cache_write_bytes (dm_top_set_fill was called). */
    int has_cache_writes;
    /* The last interval, cut by the run's end to under a tenth of SEC
     * (DM_TOP_SHORT_PARTS): too short for per-second figures, which one
     * request would make look like a burst; the text shows its counts. */
    int counts_only;
    /* Sorted by total bytes (block reads and writes, cache writes), then reads+writes+flushes, descending; the
     * (other) row, when there is one, last. */
    const struct dm_top_group *const *rows;
    int n_rows;
    /* Sums over every row. */
    uint64_t reads, writes, flushes, read_bytes, write_bytes, cache_write_bytes;
};

typedef void (*dm_top_emit_fn)(void *ctx, const struct dm_top_interval *iv);

struct dm_top;

/* A new aggregator; NULL when out of memory. interval_ns > 0; emit may be
 * NULL until dm_top_set_emit. */
struct dm_top *dm_top_create(enum dm_top_by by, uint64_t interval_ns,
                             dm_top_emit_fn emit, void *ctx);
void dm_top_destroy(struct dm_top *t);
/* Change where closed intervals go (the printer sets its own). */
void dm_top_set_emit(struct dm_top *t, dm_top_emit_fn emit, void *ctx);

/*
 * Cache writes (--by process, Linux live; views/top_view.c). Once set,
 * fill(ctx, t) is called as each interval closes, before its rows are
 * summed and sorted, and adds what each process wrote into the page cache
 * since the last call with the two functions below; the intervals then
 * have has_cache_writes set.
 */
typedef void (*dm_top_fill_fn)(void *ctx, struct dm_top *t);
void dm_top_set_fill(struct dm_top *t, dm_top_fill_fn fill, void *ctx);
/* Add bytes to the first row of pid in the open interval: 0, or -1 when
 * the interval has no row of pid (it issued no block I/O). */
int dm_top_add_cache_write(struct dm_top *t, uint32_t pid, uint64_t bytes);
/* A row of its own for pid, keyed as its events would be (pid, process;
 * process NULL when unknown), holding bytes; (other) when the table is
 * full. */
void dm_top_add_cache_row(struct dm_top *t, uint32_t pid, const char *process,
                          uint64_t bytes);

/*
 * Count ev in its interval. When ev belongs to a later interval, the open
 * one is closed first and given to emit; intervals in between that had no
 * events are skipped (emit_empty 0, replay) or given to emit with no rows
 * (emit_empty 1, live: the screen is redrawn every interval; more than one
 * in a row go as one interval with gap set).
 *
 * aqu-sz and %util: a request is [time - duration, time). The part of it
 * inside the interval it completes in is counted: its overlap is added to
 * overlap_ns (aqu-sz = overlap / interval, Little's law over the interval),
 * and it joins the disk's busy spans, whose union is busy_ns (%util). The
 * part before the interval's start is not moved back into an interval that
 * has already been drawn. Returns 0, or DM_ENOMEM when a busy span could not
 * be stored (the event is still counted; %util is then low for that disk).
 */
int dm_top_add(struct dm_top *t, const struct dm_event *ev, int emit_empty);

/* Live: the capture clock is at now_ns. Closes the open interval (and emits
 * empty ones) whose end is at or before now_ns. */
void dm_top_tick(struct dm_top *t, uint64_t now_ns);

/* End of the run: emit the open interval if it holds events. */
void dm_top_finish(struct dm_top *t);

/*
 * End of a run that stopped at end_ns (live: Ctrl+C or -t on the capture
 * clock; replay: -t of trace time): the intervals before end_ns are closed
 * as dm_top_add would (emit_empty as there), then the one end_ns falls in
 * is emitted cut at end_ns, labelled and its rates taken over the part
 * that ran, if it holds events or emit_empty is set (live draws a quiet
 * last interval too); a part shorter than SEC / DM_TOP_SHORT_PARTS is
 * emitted with counts_only set. An end_ns on an interval's boundary emits
 * nothing more.
 */
void dm_top_finish_at(struct dm_top *t, uint64_t end_ns, int emit_empty);

#endif /* DM_TOP_H */
