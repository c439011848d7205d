/*
 * cpu_merge.c - per-CPU samples merged by time with the k-way merge tree
 * (base/kmerge.h) over the CPUs' next samples, held back past the horizon
 * (rules in cpu_merge.h).
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "linux/cpu_merge.h"

/* dm_kmerge's order: the CPUs' held samples by time. */
static int sample_before(const void *ctx, unsigned a, unsigned b)
{
    const struct dm_cpu_merge *m = ctx;

    return m->cur[a].time_ns < m->cur[b].time_ns;
}

int dm_cpu_merge_init(struct dm_cpu_merge *m, int n_cpus)
{
    memset(m, 0, sizeof *m);
    m->n_cpus = n_cpus;
    m->out_cpu = -1;
    m->cur = calloc((size_t)n_cpus, sizeof *m->cur);
    m->held = calloc((size_t)n_cpus, sizeof *m->held);
    if (m->cur == NULL || m->held == NULL ||
        dm_kmerge_init(&m->heap, (unsigned)n_cpus, sample_before, m) != 0) {
        dm_cpu_merge_free(m);
        return DM_ENOMEM;
    }
    return 0;
}

void dm_cpu_merge_free(struct dm_cpu_merge *m)
{
    free(m->cur);
    free(m->held);
    dm_kmerge_free(&m->heap);
    m->cur = NULL;
    m->held = NULL;
}

/* Ask for CPU cpu's next sample: 1 when cur[cpu] now holds one. */
static int fetch(struct dm_cpu_merge *m, int cpu)
{
    int rc = m->next(m->ctx, cpu, &m->cur[cpu]);

    m->held[cpu] = rc == 1;
    if (rc == DM_MERGE_CUT)
        m->cut = 1;
    return rc == 1;
}

void dm_cpu_merge_begin(struct dm_cpu_merge *m, dm_merge_next_fn next, void *ctx,
                        uint64_t horizon_ns)
{
    m->next = next;
    m->ctx = ctx;
    m->horizon = horizon_ns;
    m->cut = 0;
    /* The last pass was left right after handing this one out: it is used. */
    if (m->out_cpu >= 0)
        m->held[m->out_cpu] = 0;
    m->out_cpu = -1;
    dm_kmerge_clear(&m->heap);
    for (int c = 0; c < m->n_cpus; c++)
        if (m->held[c] || fetch(m, c))
            dm_kmerge_push(&m->heap, (unsigned)c);
}

const struct dm_blk_sample *dm_cpu_merge_next(struct dm_cpu_merge *m)
{
    const struct dm_blk_sample *top;

    if (m->out_cpu >= 0) {
        /* The CPU handed out last is at the top: replace its sample. */
        if (fetch(m, m->out_cpu))
            dm_kmerge_top_changed(&m->heap);
        else
            dm_kmerge_pop(&m->heap);
        m->out_cpu = -1;
    }
    /* A cut-short CPU ran out: its next sample, still in the kernel, may
     * be earlier than any held here. */
    if (m->cut || dm_kmerge_count(&m->heap) == 0)
        return NULL;
    top = &m->cur[dm_kmerge_top(&m->heap)];
    if (top->time_ns > m->horizon)
        return NULL;
    if (top->time_ns < m->last_ns)
        m->late++;
    else
        m->last_ns = top->time_ns;
    m->out_cpu = (int)dm_kmerge_top(&m->heap);
    return top;
}

int dm_cpu_merge_cut(const struct dm_cpu_merge *m)
{
    return m->cut;
}

int dm_cpu_merge_holding_below(const struct dm_cpu_merge *m, int n)
{
    for (int i = 0; i < n && i < m->n_cpus; i++)
        if (m->held[i])
            return 1;
    return 0;
}
