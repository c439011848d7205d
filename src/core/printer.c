/*
 * printer.c - the printer thread. See printer.h for what it promises.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/printer.h"
#include "core/sink.h"
#include "platform/platform.h"

#define BATCH_MAX 256
#define FLUSH_EVERY_NS 100000000u   /* 100 ms: the promptness promise */
#define FLUSH_IDLE_NS 10000000u     /* caught up: flush, but not more than 100/s */
#define NS_PER_MS 1000000u
/* With nothing to print, the printer sleeps until the ring wakes it, or
 * this long: a push never misses the sleeping printer (ring.h), so this is
 * only how often an idle printer looks around. */
#define IDLE_WAIT_MS 1000u
#define COALESCE_MS 1u              /* after a wake-up by a push (below) */

/* End the run (-n, -t, a closed output) and tell the main thread at once:
 * it sleeps until something happens (pipeline.c). */
static void stop_run(struct dm_printer *p, int how)
{
    dm_atomic_store_int(p->stop_flag, how);
    if (p->wake_main != NULL)
        dm_waiter_wake(p->wake_main);
}

static void note_write_error(struct dm_printer *p)
{
    int e = errno;

    /* A closed pipe (`diskmon | head`) is the reader's way of saying enough. */
    if (e == EPIPE)
        p->output_closed = 1;
    else
        p->write_errno = e != 0 ? e : EIO;
    /* Nothing more can be printed: a live source need not deliver the
     * kernel's queued buffers (sink.h). */
    stop_run(p, DM_SINK_STOP_ENOUGH);
}

/* Write out what the buffer holds, and what the views drew: both through
 * dm_write_all, never stdio, so that a closed pipe is EPIPE on every OS
 * (platform.h). Returns -1 after a write error (noted). */
static int flush_out(struct dm_printer *p)
{
    size_t len = p->out_len;

    errno = 0;
    p->out_len = 0;
    if ((len > 0 && dm_write_all(p->out, p->out_buf, len) != 0) ||
        ((p->drawn.len > 0 || p->drawn.failed) && dm_text_write(&p->drawn, p->out) != 0)) {
        note_write_error(p);
        return -1;
    }
    return 0;
}

/* One line into the buffer; the buffer goes out first when the line might
 * not fit (dm_format_event_fit's bound), and a line longer than the whole
 * buffer (names of tens of kilobytes) goes out from one of its own. */
static int print_line(struct dm_printer *p, uint64_t seq, const struct dm_event *ev)
{
    size_t need, len;
    char *big;
    int rc;

    len = dm_format_event_fit(p->out_buf + p->out_len, sizeof p->out_buf - p->out_len,
                              &p->fo, seq, ev, &need);
    if (len > 0) {
        p->out_len += len;
        return 0;
    }
    if (flush_out(p) != 0)
        return -1;
    len = dm_format_event_fit(p->out_buf, sizeof p->out_buf, &p->fo, seq, ev, &need);
    if (len > 0) {
        p->out_len = len;
        return 0;
    }
    big = malloc(need);
    if (big == NULL) {
        errno = ENOMEM;
        note_write_error(p);
        return -1;
    }
    len = dm_format_event_fit(big, need, &p->fo, seq, ev, &need);
    errno = 0;
    rc = dm_write_all(p->out, big, len);
    if (rc != 0)
        note_write_error(p);
    free(big);
    return rc;
}

/*
 * The first part of a batch: limits and the views. Returns how many of the
 * n events are to be printed (and given to the views); sets *stop when -n or -t
 * ends the run inside the batch. The results lock is taken once for the
 * batch, and never held across a write (which may block for good on a pipe
 * nobody reads, while the main thread waits for the lock).
 */
static size_t account(struct dm_printer *p, const struct dm_event *batch, size_t n,
                      int *stop)
{
    /* Uncontended exchange: the main thread takes the lock only to leave a
     * stuck printer behind, and then keeps it (printer.h). */
    int locked = dm_atomic_exchange_int(&p->results_lock, 1) == 0;
    size_t k;

    for (k = 0; k < n; k++) {
        const struct dm_event *ev = &batch[k];

        if (p->time_limit_ns != 0 && ev->time_ns > p->time_limit_ns) {
            p->time_limit_hit = 1;
            stop_run(p, DM_SINK_STOP_ASKED);
            *stop = 1;
            break;
        }
        if (locked && ev->time_ns > p->max_time_ns)
            p->max_time_ns = ev->time_ns;
        if (p->count_limit != 0 && p->printed + k + 1 >= p->count_limit) {
            stop_run(p, DM_SINK_STOP_ENOUGH);
            *stop = 1;
            k++;
            break;
        }
    }
    if (locked) {
        for (int v = 0; v < p->n_views; v++)
            p->views[v].ops->add(p->views[v].state, batch, k);
        p->counted += k;
        dm_atomic_store_int(&p->results_lock, 0);
    }
    return k;
}

/* A batch from the ring: limits and the views, then the lines or what the
 * views drew. Returns -1 to stop. */
static int print_batch(struct dm_printer *p, const struct dm_event *batch, size_t n)
{
    int stop = 0;
    uint64_t seq = p->printed;
    size_t k = account(p, batch, n, &stop);

    p->printed += k;
    if (!p->no_lines) {
        for (size_t i = 0; i < k; i++)
            if (print_line(p, ++seq, &batch[i]) != 0)
                return -1;
    }
    /* What a view drew (an interval it closed) is shown at once. */
    if (p->drawn.len > 0 && flush_out(p) != 0)
        return -1;
    return stop ? -1 : 0;
}

/* Live: give the views the capture clock (ns since the printer started),
 * and keep in *due when the first of them next wants it. Under the results
 * lock, which the main thread may have taken for good (printer.h). Returns
 * -1 after a write error. */
static int tick_views(struct dm_printer *p, uint64_t started, uint64_t *due)
{
    uint64_t now, next = UINT64_MAX;

    if (!p->live)
        return 0; /* replay: no clock call per batch */
    now = dm_monotonic_ns() - started;
    if (dm_atomic_exchange_int(&p->results_lock, 1) != 0) {
        *due = UINT64_MAX; /* the views are the main thread's now */
        return 0;
    }
    for (int v = 0; v < p->n_views; v++) {
        if (p->views[v].ops->tick != NULL) {
            uint64_t wait = p->views[v].ops->tick(p->views[v].state, now);

            if (wait < next - now)
                next = now + wait;
        }
    }
    dm_atomic_store_int(&p->results_lock, 0);
    *due = next;
    return p->drawn.len > 0 ? flush_out(p) : 0;
}

/* How long an idle printer may sleep: until the pending flush is due, a
 * view's next tick (due, on the capture clock), or the bound of a missed
 * wake. */
static unsigned idle_wait_ms(int flush_due, uint64_t since_flush, uint64_t now, uint64_t due)
{
    unsigned ms;

    if (flush_due)
        ms = since_flush >= FLUSH_IDLE_NS
                 ? 1u
                 : (unsigned)((FLUSH_IDLE_NS - since_flush + NS_PER_MS - 1) / NS_PER_MS);
    else
        ms = IDLE_WAIT_MS;
    if (due != UINT64_MAX) {
        uint64_t until = due > now ? (due - now + NS_PER_MS - 1) / NS_PER_MS : 1;

        if (until < ms)
            ms = (unsigned)until;
    }
    return ms;
}

void dm_printer_main(void *arg)
{
    struct dm_printer *p = arg;
    struct dm_event batch[BATCH_MAX]; /* views into the ring (ring.h) */
    uint64_t last_flush = dm_monotonic_ns(), started = last_flush, due = UINT64_MAX;
    int dirty = 0, done = 0, woke;

    p->fo.clock_cache = &p->clock_cache;
    /* The header, or what the views drew before the first event. */
    if (!p->no_header && !p->no_lines)
        p->out_len = dm_format_header(p->out_buf, sizeof p->out_buf, &p->fo);
    if ((p->out_len > 0 || p->drawn.len > 0) && flush_out(p) != 0)
        return;
    while (!done || !dm_ring_drained(p->ring)) {
        size_t n = dm_ring_peek(p->ring, batch, BATCH_MAX);
        uint64_t now;

        if (n > 0) {
            /* After -n or -t, keep draining so the producer never waits on
             * us, but print nothing more. */
            if (!done && print_batch(p, batch, n) != 0)
                done = 1;
            dm_ring_release(p->ring);
            if (!done && tick_views(p, started, &due) != 0)
                done = 1;
            dirty = 1;
            now = dm_monotonic_ns();
            if (!done && now - last_flush >= FLUSH_EVERY_NS) {
                if (flush_out(p) != 0)
                    done = 1;
                last_flush = now;
                dirty = 0;
            }
            continue;
        }
        if (dm_ring_drained(p->ring))
            break;
        if (!done && tick_views(p, started, &due) != 0)
            done = 1;
        now = dm_monotonic_ns();
        if (dirty && !done && now - last_flush >= FLUSH_IDLE_NS) {
            if (flush_out(p) != 0)
                done = 1;
            last_flush = now;
            dirty = 0;
        }
        if (done)
            due = UINT64_MAX; /* no more ticks: the run is ending */
        /* Sleep until the ring wakes us, the flush is due, or the reader of
         * the output goes away: a closed pipe is noticed at once even when
         * nothing is printed (`diskmon | head` on a quiet disk). */
        woke = dm_ring_wait(p->ring,
                            idle_wait_ms(dirty && !done, now - last_flush, now - started,
                                         due),
                            done ? NULL : p->out);
        if (woke == DM_WAIT_OUTPUT_GONE) {
            p->output_closed = 1;
            stop_run(p, DM_SINK_STOP_ENOUGH);
            done = 1;
        } else if (woke == 1) {
            /* Woken by a push: let COALESCE_MS of events gather before
             * taking them, so that a steady stream is printed in batches
             * and costs one wake-up per COALESCE_MS, not one per event
             * (a replay of a 1M-request trace took twice the CPU time
             * without it). A line waits that much longer at most. */
            dm_sleep_ms(COALESCE_MS);
        }
    }
    if (p->write_errno == 0 && !p->output_closed &&
        dm_atomic_exchange_int(&p->results_lock, 1) == 0) {
        /* The views' last word on the output (a last interval). */
        struct dm_view_close c;

        c.now_ns = dm_monotonic_ns() - started;
        c.time_limit_hit = p->time_limit_hit;
        c.time_limit_ns = p->time_limit_ns;
        for (int v = 0; v < p->n_views; v++)
            if (p->views[v].ops->close != NULL)
                p->views[v].ops->close(p->views[v].state, &c);
        dm_atomic_store_int(&p->results_lock, 0);
    }
    if (p->write_errno == 0 && !p->output_closed)
        flush_out(p);
}

void dm_printer_take_results(struct dm_printer *p)
{
    while (dm_atomic_exchange_int(&p->results_lock, 1) != 0)
        dm_yield();
}
