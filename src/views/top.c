/*
 * top.c - the --top aggregation: one table of groups per interval, looked up
 * by a hash of the key, closed and handed to the renderer in order of bytes.
 * See top.h for the interval rules and what aqu-sz and %util count.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views/top.h"

/* Open addressing at most half full: short probe chains. */
#define HASH_SLOTS (4 * DM_TOP_GROUPS_MAX)
#define NO_GROUP (-1)

struct dm_top {
    enum dm_top_by by;
    uint64_t interval_ns;
    uint64_t k;                   /* the open interval: [k*SEC, (k+1)*SEC) */
    dm_top_emit_fn emit;
    void *ctx;
    dm_top_fill_fn fill;          /* cache writes; NULL: none */
    void *fill_ctx;
    int n_groups;                 /* the named ones in groups[] */
    int other_used;
    int16_t slot[HASH_SLOTS];
    struct dm_top_group groups[DM_TOP_GROUPS_MAX];
    struct dm_top_group other;
    const struct dm_top_group *rows[DM_TOP_GROUPS_MAX + 1];
};

static void reset_figures(struct dm_top_group *g)
{
    struct dm_busy busy = g->busy;

    memset(g, 0, sizeof *g);
    dm_busy_reset(&busy);     /* the allocation is kept for the next interval */
    busy.max = DM_TOP_SPANS_MAX;
    g->busy = busy;
}

static void reset_interval(struct dm_top *t)
{
    for (int i = 0; i < t->n_groups; i++)
        reset_figures(&t->groups[i]);
    reset_figures(&t->other);
    t->other.is_other = 1;
    t->n_groups = 0;
    t->other_used = 0;
    for (int i = 0; i < HASH_SLOTS; i++)
        t->slot[i] = NO_GROUP;
}

struct dm_top *dm_top_create(enum dm_top_by by, uint64_t interval_ns,
                             dm_top_emit_fn emit, void *ctx)
{
    struct dm_top *t = calloc(1, sizeof *t);

    if (t == NULL)
        return NULL;
    t->by = by;
    t->interval_ns = interval_ns;
    t->emit = emit;
    t->ctx = ctx;
    reset_interval(t);
    return t;
}

void dm_top_set_emit(struct dm_top *t, dm_top_emit_fn emit, void *ctx)
{
    t->emit = emit;
    t->ctx = ctx;
}

void dm_top_destroy(struct dm_top *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < DM_TOP_GROUPS_MAX; i++)
        free(t->groups[i].busy.spans);
    free(t->other.busy.spans);
    free(t);
}

/* ---- the key -------------------------------------------------------------- */

/* The group ev belongs to, as a key filled into g (figures zero). */
static void key_of(enum dm_top_by by, const struct dm_event *ev, struct dm_top_group *g)
{
    switch (by) {
    case DM_TOP_BY_PARTITION:
    case DM_TOP_BY_DISK:
        /* --by partition: the disk and its partition ("" = the disk's
         * requests in none of them) */
        if (by == DM_TOP_BY_PARTITION)
            snprintf(g->partition, sizeof g->partition, "%s", ev->partition);
        if (ev->disk_name[0] != '\0')
            snprintf(g->disk, sizeof g->disk, "%s", ev->disk_name);
        else
            snprintf(g->disk, sizeof g->disk, "%" PRIu32, ev->disk);
        return;
    case DM_TOP_BY_CGROUP:
        /* The whole cgroup is one row, whichever processes it holds. */
        snprintf(g->cgroup, sizeof g->cgroup, "%s", ev->cgroup);
        return;
    case DM_TOP_BY_FILE:
        if (ev->flags & DM_EV_HAS_FILE) {
            g->has_file = 1;
            /* The per-event output marks a cut path the same way (format.c). */
            snprintf(g->file, sizeof g->file, "%s%s",
                     (ev->flags & DM_EV_FILE_CUT) ? "..." : "", ev->file);
        }
        break;
    case DM_TOP_BY_PROCESS:
        if (ev->flags & DM_EV_HAS_PID) {
            g->has_pid = 1;
            g->pid = ev->pid;
        }
        break;
    }
    if (ev->flags & DM_EV_HAS_PROCESS) {
        g->has_process = 1;
        snprintf(g->process, sizeof g->process, "%s", ev->process);
    }
}

static int same_key(const struct dm_top_group *a, const struct dm_top_group *b)
{
    return a->has_pid == b->has_pid && a->pid == b->pid &&
           a->has_process == b->has_process && strcmp(a->process, b->process) == 0 &&
           a->has_file == b->has_file && strcmp(a->file, b->file) == 0 &&
           strcmp(a->disk, b->disk) == 0 && strcmp(a->cgroup, b->cgroup) == 0 &&
           strcmp(a->partition, b->partition) == 0;
}

/* FNV-1a (Fowler, Noll, Vo; 64-bit offset basis and prime). */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211u;
    }
    return h;
}

static uint64_t hash_key(const struct dm_top_group *g)
{
    uint64_t h = 14695981039346656037u;

    h = fnv(h, &g->pid, sizeof g->pid);
    h = fnv(h, g->process, strlen(g->process));
    h = fnv(h, g->file, strlen(g->file));
    h = fnv(h, g->disk, strlen(g->disk));
    h = fnv(h, g->cgroup, strlen(g->cgroup));
    return fnv(h, g->partition, strlen(g->partition));
}

/* The group of key (figures zero) in the open interval: found, new, or
 * (other). */
static struct dm_top_group *group_of_key(struct dm_top *t, const struct dm_top_group *key)
{
    uint64_t h = hash_key(key);

    for (uint32_t i = 0; i < HASH_SLOTS; i++) {
        uint32_t s = (uint32_t)((h + i) % HASH_SLOTS);
        int idx = t->slot[s];
        struct dm_top_group *g;
        struct dm_busy busy;

        if (idx == NO_GROUP) {
            if (t->n_groups == DM_TOP_GROUPS_MAX)
                break;
            g = &t->groups[t->n_groups];
            t->slot[s] = (int16_t)t->n_groups++;
            busy = g->busy; /* the storage of an earlier interval's group */
            busy.max = DM_TOP_SPANS_MAX;
            *g = *key;
            g->busy = busy;
            return g;
        }
        if (same_key(&t->groups[idx], key))
            return &t->groups[idx];
    }
    t->other_used = 1;
    return &t->other;
}

static struct dm_top_group *group_of(struct dm_top *t, const struct dm_event *ev)
{
    struct dm_top_group key;

    memset(&key, 0, sizeof key);
    key_of(t->by, ev, &key);
    return group_of_key(t, &key);
}

/* ---- cache writes -------------------------------------------------------------- */

void dm_top_set_fill(struct dm_top *t, dm_top_fill_fn fill, void *ctx)
{
    t->fill = fill;
    t->fill_ctx = ctx;
}

int dm_top_add_cache_write(struct dm_top *t, uint32_t pid, uint64_t bytes)
{
    for (int i = 0; i < t->n_groups; i++) {
        if (t->groups[i].has_pid && t->groups[i].pid == pid) {
            t->groups[i].cache_write_bytes += bytes;
            return 0;
        }
    }
    return -1;
}

void dm_top_add_cache_row(struct dm_top *t, uint32_t pid, const char *process,
                          uint64_t bytes)
{
    struct dm_top_group key;

    memset(&key, 0, sizeof key);
    key.has_pid = 1;
    key.pid = pid;
    if (process != NULL) {
        key.has_process = 1;
        snprintf(key.process, sizeof key.process, "%s", process);
    }
    group_of_key(t, &key)->cache_write_bytes += bytes;
}

/* ---- closing an interval ------------------------------------------------------ */

static uint64_t total_bytes(const struct dm_top_group *g)
{
    return g->read_bytes + g->write_bytes + g->cache_write_bytes;
}

static uint64_t total_ios(const struct dm_top_group *g)
{
    return g->reads + g->writes + g->flushes;
}

/* Most bytes first, then most requests; ties in the order first seen (the
 * groups array is in that order and the sort compares positions last). */
static int by_size(const void *a, const void *b)
{
    const struct dm_top_group *x = *(const struct dm_top_group *const *)a;
    const struct dm_top_group *y = *(const struct dm_top_group *const *)b;

    if (total_bytes(x) != total_bytes(y))
        return total_bytes(x) > total_bytes(y) ? -1 : 1;
    if (total_ios(x) != total_ios(y))
        return total_ios(x) > total_ios(y) ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Emit the open interval, which spans n_intervals (more than one: an
 * empty stretch drawn once, a gap), ending at cut_ns when that is inside it
 * (the run stopped there: its rates are over the part that ran). */
static void close_interval_at(struct dm_top *t, uint64_t n_intervals, uint64_t cut_ns)
{
    struct dm_top_interval iv;
    int n = 0;

    memset(&iv, 0, sizeof iv);
    iv.start_ns = t->k * t->interval_ns;
    iv.end_ns = iv.start_ns + n_intervals * t->interval_ns;
    iv.gap = n_intervals > 1;
    if (cut_ns > iv.start_ns && cut_ns < iv.end_ns) {
        iv.end_ns = cut_ns;
        iv.counts_only = (cut_ns - iv.start_ns) < t->interval_ns / DM_TOP_SHORT_PARTS;
    }
    iv.by = t->by;
    if (t->fill != NULL) {
        t->fill(t->fill_ctx, t);
        iv.has_cache_writes = 1;
    }
    for (int i = 0; i < t->n_groups; i++)
        t->rows[n++] = &t->groups[i];
    qsort(t->rows, (size_t)n, sizeof t->rows[0], by_size);
    if (t->other_used)
        t->rows[n++] = &t->other;
    for (int i = 0; i < n; i++) {
        struct dm_top_group *g = (struct dm_top_group *)t->rows[i];

        g->busy_ns = dm_busy_ns(&g->busy);
        iv.reads += g->reads;
        iv.writes += g->writes;
        iv.flushes += g->flushes;
        iv.read_bytes += g->read_bytes;
        iv.write_bytes += g->write_bytes;
        iv.cache_write_bytes += g->cache_write_bytes;
    }
    iv.rows = t->rows;
    iv.n_rows = n;
    if (t->emit != NULL)
        t->emit(t->ctx, &iv);
    reset_interval(t);
}

static void close_interval(struct dm_top *t, uint64_t n_intervals)
{
    close_interval_at(t, n_intervals, 0);
}

/* Close the open interval and the empty ones after it, up to (not
 * including) interval k_new, which becomes the open one. Live, one empty
 * interval is drawn as any other, and a longer stretch (the clock jumped)
 * once, as a gap: never one redraw per empty interval. */
static void advance_to(struct dm_top *t, uint64_t k_new, int emit_empty)
{
    int had = t->n_groups > 0 || t->other_used;

    if (had || emit_empty)
        close_interval(t, 1);
    t->k++;
    if (emit_empty && t->k < k_new)
        close_interval(t, k_new - t->k);
    t->k = k_new;
}

int dm_top_add(struct dm_top *t, const struct dm_event *ev, int emit_empty)
{
    struct dm_top_group *g;
    uint64_t k = ev->time_ns / t->interval_ns;
    uint64_t iv_start, iv_end, s, e;

    if (ev->request != DM_REQ_READ && ev->request != DM_REQ_WRITE &&
        ev->request != DM_REQ_FLUSH)
        return 0;
    if (k > t->k)
        advance_to(t, k, emit_empty);
    g = group_of(t, ev);
    switch (ev->request) {
    case DM_REQ_READ:
        g->reads++;
        g->read_bytes += ev->transfer_size;
        g->read_latency_ns += ev->duration_ns;
        break;
    case DM_REQ_WRITE:
        g->writes++;
        g->write_bytes += ev->transfer_size;
        g->write_latency_ns += ev->duration_ns;
        break;
    default:
        g->flushes++;
        break;
    }
    g->latency_ns += ev->duration_ns;
    if (ev->duration_ns > g->max_ns)
        g->max_ns = ev->duration_ns;
    if (t->by != DM_TOP_BY_DISK && t->by != DM_TOP_BY_PARTITION)
        return 0;
    /* The request's part inside the open interval (top.h). A straggler
     * from an earlier interval (k < t->k) has none. */
    iv_start = t->k * t->interval_ns;
    iv_end = iv_start + t->interval_ns;
    e = ev->time_ns < iv_end ? ev->time_ns : iv_end;
    s = ev->duration_ns < ev->time_ns ? ev->time_ns - ev->duration_ns : 0;
    if (s < iv_start)
        s = iv_start;
    if (s >= e)
        return 0;
    g->overlap_ns += e - s;
    return dm_busy_add(&g->busy, s, e);
}

void dm_top_tick(struct dm_top *t, uint64_t now_ns)
{
    uint64_t k = now_ns / t->interval_ns;

    if (k > t->k)
        advance_to(t, k, 1);
}

void dm_top_finish(struct dm_top *t)
{
    if (t->n_groups > 0 || t->other_used)
        close_interval(t, 1);
}

void dm_top_finish_at(struct dm_top *t, uint64_t end_ns, int emit_empty)
{
    uint64_t k_end = end_ns / t->interval_ns;

    if (k_end > t->k)
        advance_to(t, k_end, emit_empty);
    if (end_ns > t->k * t->interval_ns &&
        (t->n_groups > 0 || t->other_used || emit_empty))
        close_interval_at(t, 1, end_ns);
}
