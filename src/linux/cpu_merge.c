/*
 * cpu_merge.c - per-CPU samples merged by time with a small binary heap of
 * the CPUs' next samples, held back past the horizon (rules in
 * cpu_merge.h).
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "linux/cpu_merge.h"

int dm_cpu_merge_init(struct dm_cpu_merge *m, int n_cpus)
{
    memset(m, 0, sizeof *m);
    m->n_cpus = n_cpus;
    m->out_cpu = -1;
    m->cur = calloc((size_t)n_cpus, sizeof *m->cur);
    m->held = calloc((size_t)n_cpus, sizeof *m->held);
    m->heap = calloc((size_t)n_cpus, sizeof *m->heap);
    if (m->cur == NULL || m->held == NULL || m->heap == NULL) {
        dm_cpu_merge_free(m);
        return DM_ENOMEM;
    }
    return 0;
}

void dm_cpu_merge_free(struct dm_cpu_merge *m)
{
    free(m->cur);
    free(m->held);
    free(m->heap);
    m->cur = NULL;
    m->held = NULL;
    m->heap = NULL;
}

static int less(const struct dm_cpu_merge *m, int a, int b)
{
    return m->cur[m->heap[a]].time_ns < m->cur[m->heap[b]].time_ns;
}

static void swap(struct dm_cpu_merge *m, int a, int b)
{
    int t = m->heap[a];

    m->heap[a] = m->heap[b];
    m->heap[b] = t;
}

static void down(struct dm_cpu_merge *m, int i)
{
    for (;;) {
        int l = 2 * i + 1, k = i;

        if (l < m->heap_n && less(m, l, k))
            k = l;
        if (l + 1 < m->heap_n && less(m, l + 1, k))
            k = l + 1;
        if (k == i)
            return;
        swap(m, i, k);
        i = k;
    }
}

static void push(struct dm_cpu_merge *m, int cpu)
{
    int i = m->heap_n++;

    m->heap[i] = cpu;
    while (i > 0 && less(m, i, (i - 1) / 2)) {
        swap(m, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
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
    m->heap_n = 0;
    for (int c = 0; c < m->n_cpus; c++)
        if (m->held[c] || fetch(m, c))
            push(m, c);
}

const struct dm_blk_sample *dm_cpu_merge_next(struct dm_cpu_merge *m)
{
    const struct dm_blk_sample *top;

    if (m->out_cpu >= 0) {
        /* The CPU handed out last is at the top: replace its sample. */
        if (!fetch(m, m->out_cpu))
            m->heap[0] = m->heap[--m->heap_n];
        down(m, 0);
        m->out_cpu = -1;
    }
    /* A cut-short CPU ran out: its next sample, still in the kernel, may
     * be earlier than any held here. */
    if (m->cut || m->heap_n == 0)
        return NULL;
    top = &m->cur[m->heap[0]];
    if (top->time_ns > m->horizon)
        return NULL;
    if (top->time_ns < m->last_ns)
        m->late++;
    else
        m->last_ns = top->time_ns;
    m->out_cpu = m->heap[0];
    return top;
}

int dm_cpu_merge_cut(const struct dm_cpu_merge *m)
{
    return m->cut;
}
