/*
 * sink.c - the source thread's side of the pipeline: filter, then enqueue.
 */
#include "core/sink.h"
#include "platform/platform.h"

int dm_sink_stopping(const struct dm_sink *sink)
{
    return sink->stop_flag != NULL && dm_atomic_load_int(sink->stop_flag);
}

int dm_sink_enough(const struct dm_sink *sink)
{
    return sink->stop_flag != NULL &&
           dm_atomic_load_int(sink->stop_flag) == DM_SINK_STOP_ENOUGH;
}

int dm_sink_emit(struct dm_sink *sink, const struct dm_event *ev)
{
    if (sink->filter != NULL && !dm_filter_match(sink->filter, ev)) {
        sink->filtered_out++;
        return dm_sink_stopping(sink) ? DM_ESTOPPED : 0;
    }
    if (!sink->wait_when_full) {
        /* Live: never block the kernel's delivery thread; a full ring drops
         * the event and the ring counts it. */
        dm_ring_try_push(sink->ring, ev);
        return dm_sink_stopping(sink) ? DM_ESTOPPED : 0;
    }
    if (!dm_ring_push_wait(sink->ring, ev, sink->stop_flag))
        return DM_ESTOPPED;
    return 0;
}

void dm_sink_progress(struct dm_sink *sink, uint64_t done, uint64_t total)
{
    dm_atomic_store_release(&sink->progress_total, total);
    dm_atomic_store_release(&sink->progress_done, done);
}
