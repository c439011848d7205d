/*
 * reorder.h - putting live kernel records back into timestamp order.
 *
 * Without EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING (which Microsoft's logging
 * mode page advises against above about 1,000 events/s; docs/etw.md §7),
 * a real-time session fills one buffer per CPU. Inside one CPU's buffers the
 * records are in time order, but buffers of different CPUs reach the
 * consumer in any order, and a partly filled buffer only when the session's
 * FlushTimer fires. A DiskIo completion can so arrive before its IRP's Init
 * or before its thread's Start, and the decoder would attribute it wrongly.
 *
 * This stage sits between the ETW callback and dm_kdecode(). It copies each
 * raw record in, holds it briefly, and hands records on in timestamp order
 * once no record still to come can be older:
 *
 *  - the watermark: every CPU's records arrive in order, so once every CPU
 *    has delivered something, nothing older than the smallest "newest
 *    timestamp seen" over all CPUs can still come (the Linux per-CPU merge
 *    and the .etl reader rely on the same property);
 *  - the time bound: a CPU that stays quiet must not hold everything back,
 *    so a record is also released once it is window_ticks old (measured by
 *    the caller's now_ticks, in the records' clock);
 *  - the count bound: at most max_held records are held; a push into a full
 *    stage first releases the oldest.
 *
 * window_ticks: the caller passes it, in the ticks of rec->timestamp. It
 * must cover the longest a record can wait in a CPU's buffer before it is
 * delivered, which for a quiet CPU is the session's FlushTimer ([MS-props]:
 * how often a partly filled buffer is flushed; docs/etw.md §1, §8), plus
 * the consumer's own delivery delay. The live ETW source passes its
 * DM_ETW_HOLD_MS (etw/etw_session.h, 100 ms FlushTimer + 150 ms margin) and
 * also releases by time when no buffer comes. dm_reorder_window_ticks()
 * computes a window for a FlushTimer in whole seconds (replay tests and
 * benchmarks): FlushTimer + DM_REORDER_MARGIN_MS.
 *
 * Records released by the time or count bound can still be overtaken by a
 * later arrival. Such a "late" record (older than one already released) is
 * handed on at once, out of order, and counted (dm_reorder_late): better a
 * line out of order than a line lost.
 *
 * Memory: create() allocates max_held slots up front. A slot keeps the
 * dm_krecord and up to DM_REORDER_INLINE payload bytes in place, enough
 * for every DiskIo record (52 bytes at most, v3 x64), so the hot path never
 * allocates, and a slot is two 64-byte cache lines on 64-bit builds (the
 * stage's cost follows the lines it writes and reads back). Longer
 * payloads (Thread records, 72 bytes on x64, file names, process command
 * lines) get their own allocation, and all of those together are capped at
 * DM_REORDER_BIG_BYTES: a push that would pass the cap releases the oldest
 * records first. Memory is so bounded by max_held * (slot size) plus that
 * cap, whatever the load.
 *
 * Threads: none of its own. One thread (the ETW callback thread) owns a
 * dm_reorder and calls everything; the callback runs on that thread too.
 */
#ifndef DM_REORDER_H
#define DM_REORDER_H

#include <stddef.h>
#include <stdint.h>

#include "decode/nt_kernel.h"

/* Payload bytes kept inside a slot; longer payloads are allocated. */
#define DM_REORDER_INLINE 64u
/* Cap on the bytes of all allocated (longer) payloads held at once:
 * 4 MiB is thousands of file-name records (a few hundred bytes each). */
#define DM_REORDER_BIG_BYTES (4u * 1024u * 1024u)
/* Far above any processor count (Windows' ProcessorIndex is 16 bits wide
 * in ETW_BUFFER_CONTEXT; docs/etw.md §4); keeps the per-CPU array sane. */
#define DM_REORDER_MAX_CPUS 65536u
/* Added to the FlushTimer by dm_reorder_window_ticks(): the consumer
 * receives a flushed buffer some time after the flush, and a buffer that is
 * just not full when the timer fires waits one more period at worst. */
#define DM_REORDER_MARGIN_MS 500u

struct dm_reorder;

/*
 * n_cpus: processors whose buffers arrive (records name theirs; 0 is taken
 * as 1); window_ticks: how late a record may arrive, in timestamp ticks;
 * max_held: the most records held at once (count bound, at least 1).
 * NULL: no memory, max_held is 0 or above UINT32_MAX, or n_cpus is above
 * DM_REORDER_MAX_CPUS.
 */
struct dm_reorder *dm_reorder_create(unsigned n_cpus, uint64_t window_ticks,
                                     size_t max_held);
void dm_reorder_destroy(struct dm_reorder *ro);

/*
 * Called per released record, in timestamp order (records of equal
 * timestamp in arrival order). rec and its payload are valid only during
 * the call. A negative return stops the release and is returned; the record
 * it was given counts as released all the same (it is not offered again).
 */
typedef int (*dm_reorder_fn)(void *ctx, const struct dm_krecord *rec);

/*
 * Copy rec and its payload in (rec->payload may be reused after the call).
 * cpu: the processor whose buffer carried rec. A cpu >= n_cpus (a
 * processor added after the session started, or a wrong count) goes to one
 * extra stream shared by all such CPUs; that stream joins the watermark once
 * it has delivered something. Its records may then be released a little
 * early and come out as late records, never lost.
 * A record older than one already released is handed to fn at once and
 * counted as late. When max_held records are held (or the cap on allocated
 * payload bytes would be passed), the oldest are released through fn first;
 * if the new record is itself the oldest it goes straight to fn.
 * Returns 0, fn's negative return (the new record is then not taken), or
 * DM_ENOMEM (a long payload could not be allocated; not taken).
 */
int dm_reorder_push(struct dm_reorder *ro, unsigned cpu,
                    const struct dm_krecord *rec, dm_reorder_fn fn, void *ctx);

/*
 * Release every record that can no longer be overtaken: ts <= the smallest
 * "newest timestamp seen" over all CPUs (once every CPU has delivered
 * something; records within one CPU arrive in order), or
 * ts + window_ticks <= now_ticks. Costs O(n_cpus) plus O(log n_cpus) per
 * released record (a push costs O(1)): call it once per delivered buffer,
 * or every few hundred records. Returns 0 or fn's negative return.
 */
int dm_reorder_release(struct dm_reorder *ro, uint64_t now_ticks,
                       dm_reorder_fn fn, void *ctx);

/* Release everything held (end of session). Returns 0 or fn's. */
int dm_reorder_flush(struct dm_reorder *ro, dm_reorder_fn fn, void *ctx);

/* Records that arrived older than one already released (emitted at once,
 * out of order). */
uint64_t dm_reorder_late(const struct dm_reorder *ro);

/* Records held now. */
size_t dm_reorder_held(const struct dm_reorder *ro);

/*
 * The window for a session whose FlushTimer is flush_timer_s seconds
 * (0 means 1 s, as for a real-time session [MS-props]) and whose record
 * timestamps tick ticks_per_sec times a second: (FlushTimer +
 * DM_REORDER_MARGIN_MS) in ticks.
 */
uint64_t dm_reorder_window_ticks(uint64_t ticks_per_sec, unsigned flush_timer_s);

#endif /* DM_REORDER_H */
