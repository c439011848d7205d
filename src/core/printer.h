/*
 * printer.h - the consumer thread: ring -> formatted lines -> output.
 *
 * Formats events in batches straight into its own large buffer and writes
 * it out with one write per buffer (dm_write_all, not stdio), but flushes at
 * least every 100 ms (and as soon as it has caught up, at most every 10 ms)
 * so `diskmon | grep Write` shows lines promptly. With nothing to print it
 * sleeps on the ring's waiter (ring.h), watching the output: a reader that
 * went away ends the run at once, as a failed write would. Also feeds the
 * views the options asked for (views/view.h: the summary, --top, --metrics)
 * and enforces -n and replay's -t. A view that draws (--top) takes the
 * place of the event lines; what views draw goes out through dm_write_all
 * too: nothing the printer writes passes through stdio.
 */
#ifndef DM_PRINTER_H
#define DM_PRINTER_H

#include <stdint.h>
#include <stdio.h>

#include "output/format.h"
#include "output/text.h"
#include "core/ring.h"
#include "views/view.h"

/* Views one run may have: one of each kind diskmon knows, and room. */
#define DM_PRINTER_VIEWS_MAX 8

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
    uint64_t count_limit;        /* -n; 0: none */
    uint64_t time_limit_ns;      /* replay -t, in trace time; 0: none */
    volatile int *stop_flag;     /* set here when -n/-t is reached or output closed */
    dm_waiter *wake_main;        /* woken with each stop_flag change; may be NULL */
    /* The views, fed in this order; each add, tick and close under the
     * results lock (views/view.h). live: views are ticked on the clock. */
    struct dm_view views[DM_PRINTER_VIEWS_MAX];
    int n_views;
    int live;
    /* No event lines: a view draws instead, or the daemon mode of
     * --metrics (no -o, -f or --top); no header either. */
    int no_lines;
    /* What views drew, written after the buffer; freed with the views. */
    struct dm_text drawn;
    /* Held (1) by the printer while it updates the views, counted and
     * max_time_ns (never while it writes); taken for good by
     * dm_printer_take_results(). Starts at 0. */
    volatile int results_lock;
    /* results, read after the thread ended */
    uint64_t printed;
    uint64_t counted;            /* events given to the views (under the lock) */
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
 * printer is not updating the views, counted or max_time_ns, then keeps
 * them, so the summary can be printed from them while the printer thread
 * still exists. Afterwards the printer no longer touches them.
 */
void dm_printer_take_results(struct dm_printer *p);

#endif /* DM_PRINTER_H */
