/*
 * sink.h - where a source puts its events: the filter, then the ring.
 *
 * Called only from the source thread. A live sink never blocks: when the ring
 * is full the event is dropped and counted. A replay sink waits for room, so
 * no event of a trace file is ever lost however slow the output is.
 */
#ifndef DM_SINK_H
#define DM_SINK_H

#include "diskmon.h"
#include "core/filter.h"
#include "core/ring.h"

/*
 * Values of *stop_flag. Any nonzero value ends the run; DM_SINK_STOP_ENOUGH
 * also says that no further event can be printed (-n reached, or the output
 * is gone), so a live source may drop what the kernel still has queued
 * instead of delivering it. DM_SINK_STOP_ASKED (Ctrl+C, -t) wants the
 * events already queued in the kernel delivered and printed first.
 */
#define DM_SINK_STOP_ASKED 1
#define DM_SINK_STOP_ENOUGH 2

struct dm_sink {
    struct dm_ring *ring;
    const struct dm_filter *filter; /* NULL: keep everything */
    int wait_when_full;             /* replay: 1, live: 0 */
    volatile int *stop_flag;        /* set when the run must end; may be NULL */
    /* Progress of a file source, for the progress line; written by the
     * source thread, read by the main thread (approximate is fine, torn is
     * not: byte counts pass 2^32 in a trace over 4 GiB, so each is a
     * naturally aligned atomic, atomics.h). */
    dm_atomic_u64 progress_done;
    dm_atomic_u64 progress_total;
    uint64_t filtered_out;          /* source thread only */
};

/*
 * Filter ev and enqueue a copy. Returns 0 when the event was queued, filtered
 * out or dropped (live, ring full: counted by the ring), DM_ESTOPPED when the
 * run is ending and the source should return.
 */
int dm_sink_emit(struct dm_sink *sink, const struct dm_event *ev);

/* Nonzero once the run must end (Ctrl+C, -n reached, -t elapsed). */
int dm_sink_stopping(const struct dm_sink *sink);

/* Nonzero once the run has printed all it ever will (DM_SINK_STOP_ENOUGH):
 * -n reached or the output closed. Any thread. */
int dm_sink_enough(const struct dm_sink *sink);

/* Record file progress (bytes of the input consumed so far). */
void dm_sink_progress(struct dm_sink *sink, uint64_t done, uint64_t total);

#endif /* DM_SINK_H */
