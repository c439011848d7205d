/*
 * cpu_merge.h - the per-CPU sample streams merged into one, in time order.
 *
 * Each CPU's buffer holds its own samples in time order; the pairing step
 * (requests.h) needs all of them in one time order, or it pairs a
 * completion with the wrong start when two requests for one sector are in
 * flight (two random reads of the same block, seen with fio on 6.18): a
 * completion read ahead of time takes the older request's start, whose own
 * completion then finds no start and the next request's start no
 * completion.
 *
 * A pass reads each CPU's buffer in turn, so one pass does not end at the
 * same time on every CPU: a CPU read first (or cut at the transport's pass
 * limit) stops earlier than one read last, by up to tens of milliseconds
 * under load. So the merge hands out a sample only when no CPU can still
 * bring an earlier one:
 *   - not later than the horizon: a time before which every CPU's buffer
 *     was read to its end in this pass (the caller takes the clock before
 *     reading and allows for events still being written);
 *   - and not past the point where a CPU whose pass was cut short (the
 *     kernel has more for it) ran out: its next samples are unknown.
 * What is not handed out stays for the next pass: the current sample of
 * each CPU here, the rest in the transport (transport.h: fill() keeps
 * what next() has not handed out).
 *
 * Single-threaded: the source's reader thread.
 */
#ifndef DM_CPU_MERGE_H
#define DM_CPU_MERGE_H

#include <stdint.h>

#include "base/kmerge.h"
#include "linux/block_decode.h"

/* What a next() function returns besides 1 (a sample) and 0 (this CPU's
 * buffer was read to its end). */
#define DM_MERGE_CUT 2 /* none left in this pass, but the kernel has more */

/* The next sample of CPU index cpu: 1 with *out set, 0 or DM_MERGE_CUT. */
typedef int (*dm_merge_next_fn)(void *ctx, int cpu, struct dm_blk_sample *out);

struct dm_cpu_merge {
    int n_cpus;
    struct dm_blk_sample *cur;  /* per CPU: its next sample, when held */
    uint8_t *held;              /* per CPU: cur holds a sample */
    struct dm_kmerge heap;      /* CPUs with a held sample, by cur[].time_ns */
    int out_cpu;                /* the CPU of the sample last handed out, -1 */
    int cut;                    /* a cut-short CPU ran out: the pass is over */
    uint64_t horizon;
    dm_merge_next_fn next;
    void *ctx;
    uint64_t late;              /* samples earlier than one already handed
                                   out (a buffer read after the horizon
                                   passed them): should stay 0 */
    uint64_t last_ns;           /* time of the last sample handed out */
};

/* Returns 0 or DM_ENOMEM. */
int dm_cpu_merge_init(struct dm_cpu_merge *m, int n_cpus);
void dm_cpu_merge_free(struct dm_cpu_merge *m);

/*
 * Start a pass after the transport's fill(): samples not later than
 * horizon_ns (UINT64_MAX: all, once the kernel side has stopped) will come
 * out. Calls next for each CPU that holds no sample from the last pass.
 */
void dm_cpu_merge_begin(struct dm_cpu_merge *m, dm_merge_next_fn next, void *ctx,
                        uint64_t horizon_ns);

/*
 * The next sample in time order, or NULL when the pass is over. The sample
 * stays valid until the next call.
 */
const struct dm_blk_sample *dm_cpu_merge_next(struct dm_cpu_merge *m);

/* After a pass: nonzero when it ended at a cut-short CPU, so the next pass
 * should come without waiting. */
int dm_cpu_merge_cut(const struct dm_cpu_merge *m);

/* After a pass: nonzero when one of the streams 0..n-1 holds samples back
 * for a later pass (past the horizon), so the reader must not sleep long.
 * The block streams come first; the lifetime instance's, past them, need
 * no hurry: a held fork or move matters only to a block event, whose
 * arrival wakes the reader. */
int dm_cpu_merge_holding_below(const struct dm_cpu_merge *m, int n);

#endif /* DM_CPU_MERGE_H */
