/*
 * metrics.c - the --metrics counters (metrics.h); metrics_text.c writes them.
 *
 * Per disk: requests, bytes, a latency histogram and its sum per request
 * kind, busy time, the sum of durations, and requests per request flag. Per
 * process image name and disk: requests and bytes per request kind, for the
 * K (name, disk) pairs that came first by bytes, and one "(other)" per disk
 * for the rest, so each disk's process series sum to its own totals. Names,
 * not pids, because a pid label would make a new series for every process
 * started. Per cgroup v2 path (Linux live), the same counts bounded the same
 * way, with one "(other)" in all.
 *
 * Promotion keeps every published counter going up. A pair seen since the
 * last write and not yet promoted is a candidate: its counts wait in the
 * candidate table. At a write the candidates with the most bytes fill the
 * free slots of the K and keep their counts; the other candidates' counts
 * go to their disk's "(other)", and the candidates are forgotten. A pair
 * that found the table full went to its disk's "(other)" at once. So
 * "(other)" only grows, a promoted pair's series starts when it is first
 * written and never goes away, and a replay (one write at the end) names
 * the top K of the whole trace as long as its distinct pairs fit in the
 * table.
 */
#include <stdlib.h>
#include <string.h>

#include "views/metrics.h"
#include "views/metrics_state.h"

/* ---- creating -------------------------------------------------------------- */

/* Candidates a table holds between writes, besides the K promoted: enough
 * for the distinct names of a busy machine's interval. A machine has far
 * fewer cgroups doing I/O (a unit or a container each) than names. */
#define CANDIDATES 1024
#define CGROUP_CANDIDATES 256

static int names_init(struct dm_metrics_names *n, unsigned top_k, unsigned candidates)
{
    uint32_t size = 1;

    /* load at most one half: linear probing stays a probe or two */
    while (size < 2 * (top_k + candidates))
        size *= 2;
    n->top_k = top_k;
    n->table_mask = size - 1;
    n->table_limit = top_k + candidates;
    n->table = calloc(size, sizeof *n->table);
    n->slots = calloc(top_k + 1, sizeof *n->slots);
    n->scratch = calloc(size, sizeof *n->scratch);
    n->keep = calloc(top_k + 1, sizeof *n->keep);
    return n->table != NULL && n->slots != NULL && n->scratch != NULL && n->keep != NULL;
}

static void names_free(struct dm_metrics_names *n)
{
    free(n->table);
    free(n->slots);
    free(n->scratch);
    free(n->keep);
}

struct dm_metrics *dm_metrics_create(const char *path, unsigned top_k, int live, FILE *errf)
{
    struct dm_metrics *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->disk_index.ids = m->disk_ids;
    m->disk_index.max = DM_METRICS_MAX_DISKS;
    dm_file_out_init(&m->file, path, "the metrics file", live, errf);
    m->top_k = top_k;
    if (!names_init(&m->procs, top_k, CANDIDATES) ||
        !names_init(&m->cgroups, top_k, CGROUP_CANDIDATES)) {
        dm_metrics_destroy(m);
        return NULL;
    }
    return m;
}

void dm_metrics_destroy(struct dm_metrics *m)
{
    if (m == NULL)
        return;
    names_free(&m->procs);
    names_free(&m->cgroups);
    free(m->text);
    free(m);
}

/* ---- counting --------------------------------------------------------------- */

/* The disk row of ev (disks.h); past DM_METRICS_MAX_DISKS, "(other)". */
static int disk_row_of(struct dm_metrics *m, const struct dm_event *ev)
{
    int i = dm_disk_index_of(&m->disk_index, ev);

    if (i < 0) {
        m->other_disk_used = 1;
        return DM_METRICS_OTHER_DISK;
    }
    if (i == m->n_disks)
        m->n_disks++; /* a new disk: its figures start at zero */
    return i;
}

/* FNV-1a (Fowler, Noll, Vo): names are short, so a simple hash will do. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Where the counts of a name go: its entry, or its "(other)" when the
 * table has no room for another candidate. A process name is counted per
 * disk row (disk, labelled disk_label); a cgroup path passes disk 0 and no
 * label. The disk is mixed into the name's hash by a multiplication by
 * 2^32 / phi (Knuth's multiplicative hashing), so one name's pairs on
 * several disks land apart. */
static struct dm_metrics_counts *counts_of(struct dm_metrics_names *n, const char *name,
                                           int disk, const char *disk_label)
{
    uint32_t h = name_hash(name) ^ ((uint32_t)disk + 1u) * 2654435769u;
    uint32_t i = h & n->table_mask;
    struct dm_metrics_name *e;

    for (;;) {
        e = &n->table[i];
        if (!e->used)
            break;
        if (e->hash == h && e->disk == disk && strcmp(e->name, name) == 0)
            return &e->counts;
        i = (i + 1) & n->table_mask;
    }
    if (n->table_used >= n->table_limit)
        return &n->other[disk];
    n->table_used++;
    e->used = 1;
    e->hash = h;
    e->slot = -1;
    e->disk = disk;
    e->disk_label = disk_label;
    strncpy(e->name, name, sizeof e->name - 1);
    return &e->counts;
}

void dm_metrics_no_latency(struct dm_metrics *m)
{
    m->no_latency = 1;
}

/* A request without a process name (a kernel flush, lazy writes). */
#define NO_PROCESS "(unknown)"

void dm_metrics_add(struct dm_metrics *m, const struct dm_event *ev)
{
    unsigned rq = ev->request;
    unsigned b = 0;
    struct dm_metrics_counts *pc;
    struct dm_metrics_disk *d;
    int row;

    if (rq >= DM_REQ_COUNT)
        return;
    row = disk_row_of(m, ev);
    d = row == DM_METRICS_OTHER_DISK ? &m->other_disk : &m->disks[row];
    d->requests[rq]++;
    d->bytes[rq] += ev->transfer_size;
    for (unsigned f = 0; f < DM_RQ_COUNT; f++)
        if (ev->req_flags & (1u << f))
            d->by_flag[f]++;
    if (ev->flags & DM_EV_NO_DURATION) {
        d->no_duration[rq]++;
        m->no_duration++;
    } else {
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
        (void)dm_busy_add(&d->busy,
                          ev->time_ns > ev->duration_ns ? ev->time_ns - ev->duration_ns : 0,
                          ev->time_ns);
    }
    pc = counts_of(&m->procs, (ev->flags & DM_EV_HAS_PROCESS) && ev->process[0] != '\0'
                                  ? ev->process
                                  : NO_PROCESS,
                   row, row == DM_METRICS_OTHER_DISK ? "(other)" : m->disk_ids[row].text);
    pc->requests[rq]++;
    pc->bytes[rq] += ev->transfer_size;
    /* Only a source that knows cgroups names them (Linux live). */
    if (ev->cgroup[0] != '\0') {
        m->cgroups_seen = 1;
        pc = counts_of(&m->cgroups, ev->cgroup, 0, NULL);
        pc->requests[rq]++;
        pc->bytes[rq] += ev->transfer_size;
    }
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

/* Most bytes first, then most requests, then by name, then by disk: the
 * same file for the same input. */
static int by_bytes(const void *a, const void *b)
{
    const struct dm_metrics_name *x = *(const struct dm_metrics_name *const *)a;
    const struct dm_metrics_name *y = *(const struct dm_metrics_name *const *)b;
    uint64_t bx = total_bytes(&x->counts), by = total_bytes(&y->counts);
    uint64_t rx = total_requests(&x->counts), ry = total_requests(&y->counts);

    if (bx != by)
        return bx > by ? -1 : 1;
    if (rx != ry)
        return rx > ry ? -1 : 1;
    if (strcmp(x->name, y->name) != 0)
        return strcmp(x->name, y->name);
    /* the same name twice: a process on two disks (cgroups have no label) */
    if (x->disk_label == NULL || y->disk_label == NULL)
        return 0;
    return strcmp(x->disk_label, y->disk_label);
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
static void promote(struct dm_metrics_names *t)
{
    uint32_t n = 0, size = t->table_mask + 1;

    for (uint32_t i = 0; i < size; i++)
        if (t->table[i].used && t->table[i].slot < 0)
            t->scratch[n++] = &t->table[i];
    if (n == 0)
        return;
    qsort(t->scratch, n, sizeof t->scratch[0], by_bytes);
    for (uint32_t i = 0; i < n; i++) {
        struct dm_metrics_name *e = t->scratch[i];

        if (t->n_slots < t->top_k) {
            e->slot = (int)t->n_slots;
            t->slots[t->n_slots++] = e;
        } else {
            add_counts(&t->other[e->disk], &e->counts);
        }
    }
    /* Rebuild: the promoted entries copied out, the table cleared, they
     * go back in. */
    for (unsigned k = 0; k < t->n_slots; k++)
        t->keep[k] = *t->slots[k];
    memset(t->table, 0, size * sizeof *t->table);
    for (unsigned k = 0; k < t->n_slots; k++) {
        uint32_t i = t->keep[k].hash & t->table_mask;

        while (t->table[i].used)
            i = (i + 1) & t->table_mask;
        t->table[i] = t->keep[k];
        t->slots[k] = &t->table[i];
    }
    t->table_used = t->n_slots;
}

void dm_metrics_promote(struct dm_metrics *m)
{
    promote(&m->procs);
    promote(&m->cgroups);
}
