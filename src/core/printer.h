/*
 * printer.h - the consumer thread: ring -> formatted lines -> output.
 *
 * Formats events in batches straight into its own large buffer and writes
 * it out with one write per buffer (dm_write_all, not stdio), but flushes at
 * least every 100 ms (and as soon as it has caught up, at most every 10 ms)
 * so `diskmon | grep Write` shows lines promptly. With nothing to print it
 * sleeps on the ring's waiter (ring.h), watching the output: a reader that
 * went away ends the run at once, as a failed write would. Also feeds the summary
 * statistics and enforces -n and replay's -t. With --top it feeds the
 * interval sums (views/top.h) instead of printing lines; --top draws each
 * interval into a text (top_render.h) that goes out through dm_write_all
 * too: nothing the printer writes passes through stdio.
 */
#ifndef DM_PRINTER_H
#define DM_PRINTER_H

#include <stdint.h>
#include <stdio.h>

#include "output/format.h"
#include "views/metrics.h"
#include "core/ring.h"
#include "views/stats.h"
#include "views/top.h"
#include "views/top_render.h"

/* The printer's output buffer: 128 KiB, about 1300 text lines per write.
 * Big enough that the system call is a small part of a line's cost, small
 * enough to stay in the CPU's L2 cache while it fills. */
#define DM_PRINTER_BUFFER (128u << 10)

struct dm_printer {
    /* set before the thread starts */
    struct dm_ring *ring;
    FILE *out;
    struct dm_format_opts fo;
    int no_header;
    struct dm_stats *stats;
    uint64_t count_limit;        /* -n; 0: none */
    uint64_t time_limit_ns;      /* replay -t, in trace time; 0: none */
    volatile int *stop_flag;     /* set here when -n/-t is reached or output closed */
    dm_waiter *wake_main;        /* woken with each stop_flag change; may be NULL */
    /* --top: each event is summed into top (which draws through top_view)
     * instead of printed as a line; NULL: lines. Live (top_live), intervals
     * also close on the clock, so a quiet one is still drawn. */
    struct dm_top *top;
    struct dm_top_view top_view;
    int top_live;
    uint64_t top_lost_base;      /* events the source had lost at open */
    /* --metrics: every event counted is also added to metrics (under the
     * results lock, as stats). Live (metrics_live) the printer rewrites the
     * file at its start and every metrics_ns; the last write is dm_run's.
     * no_lines: the daemon mode, no header and no event lines. */
    struct dm_metrics *metrics;
    uint64_t metrics_ns;
    int metrics_live;
    const char *metrics_source;  /* build_info's source label */
    uint64_t metrics_lost_base;  /* events the source had lost at open */
    int no_lines;
    /* Held (1) by the printer while it updates stats and max_time_ns for a
     * batch of events (never while it writes); taken for good by
     * dm_printer_take_results(). Starts at 0. */
    volatile int results_lock;
    /* results, read after the thread ended */
    uint64_t printed;
    uint64_t max_time_ns;
    int output_closed;           /* the reader went away (EPIPE): a quiet end */
    int time_limit_hit;          /* replay -t: the trace went on past it */
    int write_errno;             /* any other write failure */
    /* the printer thread's own (zeroed with the rest before it starts) */
    struct dm_clock_cache clock_cache;
    size_t out_len;              /* bytes of out_buf not written yet */
    char out_buf[DM_PRINTER_BUFFER];
};

/* Thread entry point: arg is a struct dm_printer. Returns when the ring is
 * closed and drained, or at once after a write error. */
void dm_printer_main(void *arg);

/*
 * Main thread, when the printer is stuck writing to an output nobody reads
 * (Ctrl+C with a blocked pipe) and must be left behind: waits until the
 * printer is not updating stats or max_time_ns, then keeps them, so the
 * summary can be printed from them while the printer thread still exists.
 * Afterwards the printer no longer touches them.
 */
void dm_printer_take_results(struct dm_printer *p);

#endif /* DM_PRINTER_H */
