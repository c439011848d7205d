/*
 * metrics.c - the --metrics counters (metrics.h); metrics_text.c writes them.
 *
 * Per disk: requests, bytes, a latency histogram and its sum per request
 * kind, busy time and the sum of durations. Per process image name:
 * requests and bytes per request kind, for the K names that came first by
 * bytes, and one "(other)" for the rest. Names, not pids, because a pid
 * label would make a new series for every process started.
 *
 * Promotion keeps every published counter going up. A name seen since the
 * last write and not yet promoted is a candidate: its counts wait in the
 * candidate table. At a write the candidates with the most bytes fill the
 * free slots of the K and keep their counts; the other candidates' counts
 * go to "(other)", and the candidates are forgotten. A name that found the
 * table full went to "(other)" at once. So "(other)" only grows, a promoted
 * name's series starts when it is first written and never goes away, and a
 * replay (one write at the end) names the top K of the whole trace as long
 * as its distinct names fit in the table.
 */
#include <stdlib.h>
#include <string.h>

#include "views/metrics.h"
#include "views/metrics_state.h"

/* ---- creating -------------------------------------------------------------- */

/* Candidates a table holds between writes, besides the K promoted: enough
 * for the distinct names of a busy machine's interval. */
#define CANDIDATES 1024

struct dm_metrics *dm_metrics_create(const char *path, unsigned top_k, int live, FILE *errf)
{
    struct dm_metrics *m = calloc(1, sizeof *m);
    uint32_t size = 1;

    if (m == NULL)
        return NULL;
    m->disk_index.ids = m->disk_ids;
    m->disk_index.max = DM_METRICS_MAX_DISKS;
    m->path = path;
    m->errf = errf;
    m->live = live;
    m->top_k = top_k;
    /* load at most one half: linear probing stays a probe or two */
    while (size < 2 * (top_k + CANDIDATES))
        size *= 2;
    m->table_mask = size - 1;
    m->table_limit = top_k + CANDIDATES;
    m->table = calloc(size, sizeof *m->table);
    m->slots = calloc(top_k + 1, sizeof *m->slots);
    m->scratch = calloc(size, sizeof *m->scratch);
    m->keep = calloc(top_k + 1, sizeof *m->keep);
    if (m->table == NULL || m->slots == NULL || m->scratch == NULL || m->keep == NULL) {
        dm_metrics_destroy(m);
        return NULL;
    }
    return m;
}

void dm_metrics_destroy(struct dm_metrics *m)
{
    if (m == NULL)
        return;
    free(m->table);
    free(m->slots);
    free(m->scratch);
    free(m->keep);
    free(m->text);
    free(m);
}

/* ---- counting --------------------------------------------------------------- */

/* The disk of ev (disks.h); past DM_METRICS_MAX_DISKS, "(other)". */
static struct dm_metrics_disk *disk_of(struct dm_metrics *m, const struct dm_event *ev)
{
    int i = dm_disk_index_of(&m->disk_index, ev);

    if (i < 0) {
        m->other_disk_used = 1;
        return &m->other_disk;
    }
    if (i == m->n_disks)
        m->n_disks++; /* a new disk: its figures start at zero */
    return &m->disks[i];
}

/* FNV-1a (Fowler, Noll, Vo): names are short, so a simple hash will do. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Where a process name's counts go: its entry, or "(other)" when the table
 * has no room for another candidate. */
static struct dm_metrics_counts *proc_of(struct dm_metrics *m, const char *name)
{
    uint32_t h = name_hash(name), i = h & m->table_mask;

    for (;;) {
        struct dm_metrics_proc *e = &m->table[i];

        if (!e->used)
            break;
        if (e->hash == h && strcmp(e->name, name) == 0)
            return &e->counts;
        i = (i + 1) & m->table_mask;
    }
    if (m->table_used >= m->table_limit)
        return &m->other;
    m->table_used++;
    m->table[i].used = 1;
    m->table[i].hash = h;
    m->table[i].slot = -1;
    strncpy(m->table[i].name, name, sizeof m->table[i].name - 1);
    return &m->table[i].counts;
}

/* A request without a process name (a kernel flush, lazy writes). */
#define NO_PROCESS "(unknown)"

void dm_metrics_add(struct dm_metrics *m, const struct dm_event *ev)
{
    struct dm_metrics_disk *d = disk_of(m, ev);
    unsigned rq = ev->request;
    unsigned b = 0;
    struct dm_metrics_counts *pc;

    if (rq >= DM_REQ_COUNT)
        return;
    d->requests[rq]++;
    d->bytes[rq] += ev->transfer_size;
    d->duration_ns[rq] += ev->duration_ns;
    while (b < DM_METRICS_BUCKETS && ev->duration_ns > dm_metrics_buckets[b].ns)
        b++;
    d->bucket[rq][b]++;
    d->in_flight_ns += ev->duration_ns;
    if (d->busy.spans == NULL) { /* a disk's first request: its own window */
        d->busy.spans = d->span_store;
        d->busy.cap = d->busy.max = DM_METRICS_SPAN_WINDOW;
    }
    /* cap == max: the window is never reallocated, so this cannot fail */
    (void)dm_busy_add(&d->busy, ev->time_ns > ev->duration_ns ? ev->time_ns - ev->duration_ns : 0,
                      ev->time_ns);
    pc = proc_of(m, (ev->flags & DM_EV_HAS_PROCESS) && ev->process[0] != '\0'
                        ? ev->process
                        : NO_PROCESS);
    pc->requests[rq]++;
    pc->bytes[rq] += ev->transfer_size;
    dm_metrics_partition_add(&m->parts, ev);
}

/* ---- promotion at a write ----------------------------------------------------- */

static uint64_t total_bytes(const struct dm_metrics_counts *c)
{
    uint64_t sum = 0;

    for (int r = 0; r < DM_REQ_COUNT; r++)
        sum += c->bytes[r];
    return sum;
}

static uint64_t total_requests(const struct dm_metrics_counts *c)
{
    uint64_t sum = 0;

    for (int r = 0; r < DM_REQ_COUNT; r++)
        sum += c->requests[r];
    return sum;
}

/* Most bytes first, then most requests, then by name: the same file for
 * the same input. */
static int by_bytes(const void *a, const void *b)
{
    const struct dm_metrics_proc *x = *(const struct dm_metrics_proc *const *)a;
    const struct dm_metrics_proc *y = *(const struct dm_metrics_proc *const *)b;
    uint64_t bx = total_bytes(&x->counts), by = total_bytes(&y->counts);
    uint64_t rx = total_requests(&x->counts), ry = total_requests(&y->counts);

    if (bx != by)
        return bx > by ? -1 : 1;
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void add_counts(struct dm_metrics_counts *to, const struct dm_metrics_counts *from)
{
    for (int r = 0; r < DM_REQ_COUNT; r++) {
        to->requests[r] += from->requests[r];
        to->bytes[r] += from->bytes[r];
    }
}

/* Fill free slots from the candidates, give the rest to "(other)", and
 * rebuild the table with the promoted names alone. */
void dm_metrics_promote(struct dm_metrics *m)
{
    uint32_t n = 0, size = m->table_mask + 1;

    for (uint32_t i = 0; i < size; i++)
        if (m->table[i].used && m->table[i].slot < 0)
            m->scratch[n++] = &m->table[i];
    if (n == 0)
        return;
    qsort(m->scratch, n, sizeof m->scratch[0], by_bytes);
    for (uint32_t i = 0; i < n; i++) {
        struct dm_metrics_proc *e = m->scratch[i];

        if (m->n_slots < m->top_k) {
            e->slot = (int)m->n_slots;
            m->slots[m->n_slots++] = e;
        } else {
            add_counts(&m->other, &e->counts);
        }
    }
    /* Rebuild: the promoted entries copied out, the table cleared, they
     * go back in. */
    for (unsigned k = 0; k < m->n_slots; k++)
        m->keep[k] = *m->slots[k];
    memset(m->table, 0, size * sizeof *m->table);
    for (unsigned k = 0; k < m->n_slots; k++) {
        uint32_t i = m->keep[k].hash & m->table_mask;

        while (m->table[i].used)
            i = (i + 1) & m->table_mask;
        m->table[i] = m->keep[k];
        m->slots[k] = &m->table[i];
    }
    m->table_used = m->n_slots;
}
