/*
 * top_cache.c - the per-interval growth of each process's cache write
 * count (top_cache.h): two scans kept sorted by pid, the new one looked up
 * in the last by binary search; the processes that ended in between are
 * settled with their parents.
 */
#include <stdlib.h>
#include <string.h>

#include "views/top_cache.h"

struct pid_count {
    uint32_t pid;
    uint32_t ppid;
    uint64_t start;                /* when it started (dm_task_io.about) */
    uint64_t bytes;                /* the count the scan read */
    uint64_t grew;                 /* fill: its growth since the last scan */
    int asked;                     /* ppid and name were asked for */
    int known;                     /* ... and the process answered */
    int waited;                    /* ended: waited one scan for its parent */
    int settled;                   /* ended: its parent took its count in */
    char name[DM_PROCESS_MAX];
};

struct scan {
    struct pid_count *v;
    size_t n, cap;
    int failed;                    /* out of memory while it was taken */
};

struct dm_top_cache {
    const struct dm_task_io *io;
    struct scan last, next;
    /* Ended processes whose parent's count had not taken theirs in yet. */
    struct scan ended;
};

static int push(struct scan *s, const struct pid_count *e)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 512;
        struct pid_count *v = realloc(s->v, cap * sizeof *v);

        if (v == NULL) {
            s->failed = 1;
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *e;
    return 0;
}

static void each(void *arg, uint32_t pid, uint64_t bytes)
{
    struct pid_count e;

    memset(&e, 0, sizeof e);
    e.pid = pid;
    e.bytes = bytes;
    push(arg, &e);
}

static int by_pid(const void *a, const void *b)
{
    uint32_t x = ((const struct pid_count *)a)->pid, y = ((const struct pid_count *)b)->pid;

    return x < y ? -1 : x > y;
}

/* Scan every process into s, sorted by pid: 0, or -1 (s is then unusable). */
static int take(const struct dm_task_io *io, struct scan *s)
{
    s->n = 0;
    s->failed = 0;
    if (io->scan(each, s) < 0 || s->failed)
        return -1;
    /* /proc lists processes in pid order; sorting keeps that a non-rule.
     * (An empty scan has no array yet, and qsort wants one.) */
    if (s->n > 1)
        qsort(s->v, s->n, sizeof s->v[0], by_pid);
    return 0;
}

static struct pid_count *find(const struct scan *s, uint32_t pid)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->v[mid].pid == pid)
            return &s->v[mid];
        if (s->v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

struct dm_top_cache *dm_top_cache_create(const struct dm_task_io *io)
{
    struct dm_top_cache *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    c->io = io;
    if (take(io, &c->last) != 0) {
        dm_top_cache_destroy(c);
        return NULL;
    }
    return c;
}

void dm_top_cache_destroy(struct dm_top_cache *c)
{
    if (c == NULL)
        return;
    free(c->last.v);
    free(c->next.v);
    free(c->ended.v);
    free(c);
}

static void ask(const struct dm_top_cache *c, struct pid_count *e)
{
    e->asked = 1;
    e->known = c->io->about(e->pid, &e->ppid, &e->start, e->name, sizeof e->name) == 0;
}

/* The process at was's pid is another one now (pid reused): was ended,
 * and waits with the others for its parent (settle_ended). */
static int reused(struct dm_top_cache *c, const struct pid_count *was,
                  struct pid_count *now)
{
    struct pid_count ended = *was;

    ask(c, now);
    if (!now->known || now->start == was->start) {
        now->known = now->known || was->known; /* a failed read: keep was's */
        return 0;
    }
    ended.waited = ended.settled = 0;
    push(&c->ended, &ended);
    return 1;
}

/* Each process's growth, and, once it has written, its parent, start and
 * name, asked once: what settles it with its parent if it ends. A count
 * that grew is asked again: a new process may have taken an ended one's
 * pid and written more than that one had (a count that went down is a new
 * process without asking). */
static void growth(struct dm_top_cache *c)
{
    for (size_t i = 0; i < c->next.n; i++) {
        struct pid_count *now = &c->next.v[i];
        const struct pid_count *was = find(&c->last, now->pid);

        if (was != NULL && now->bytes >= was->bytes) {
            now->grew = now->bytes - was->bytes;
            now->asked = was->asked;
            now->known = was->known;
            now->ppid = was->ppid;
            now->start = was->start;
            memcpy(now->name, was->name, sizeof now->name);
            if (now->grew > 0 && was->known && reused(c, was, now))
                now->grew = now->bytes;
        } else {
            /* New since the last scan (counts start at zero at fork), or
             * the pid was reused: all of the count is new. */
            now->grew = now->bytes;
        }
        if (!now->asked && now->bytes > 0)
            ask(c, now);
    }
}

/* The processes of the last scan that are gone wait in c->ended, each for
 * this scan and the next (its parent may reap it after the scan passed the
 * parent's entry). One whose parent's count grew by at least its whole
 * count was reaped: that much of the parent's growth is its bytes, counted
 * under it already or not; the rest of the parent's growth is given to it
 * (to the first, when several ended) as what it wrote after the last scan
 * (top_cache.h). */
static void settle_ended(struct dm_top_cache *c, struct dm_top *t)
{
    size_t keep = 0;

    for (size_t i = 0; i < c->last.n; i++) {
        struct pid_count e = c->last.v[i];

        if (e.known && e.bytes > 0 && find(&c->next, e.pid) == NULL) {
            e.waited = 0;
            e.settled = 0;
            push(&c->ended, &e);
        }
    }
    for (size_t i = 0; i < c->ended.n; i++) {
        struct pid_count *e = &c->ended.v[i];
        struct pid_count *parent = find(&c->next, e->ppid);

        if (parent != NULL && parent->grew >= e->bytes) {
            parent->grew -= e->bytes;
            e->settled = 1;
        }
    }
    for (size_t i = 0; i < c->ended.n; i++) {
        struct pid_count *e = &c->ended.v[i];
        struct pid_count *parent;
        uint64_t tail;

        if (!e->settled) {
            if (!e->waited) {
                e->waited = 1;
                c->ended.v[keep++] = *e;
            }
            continue;
        }
        parent = find(&c->next, e->ppid);
        tail = parent->grew;
        parent->grew = 0;
        if (tail > 0 && dm_top_add_cache_write(t, e->pid, tail) != 0)
            dm_top_add_cache_row(t, e->pid, e->name, tail);
    }
    c->ended.n = keep;
}

void dm_top_cache_fill(void *ctx, struct dm_top *t)
{
    struct dm_top_cache *c = ctx;
    struct scan swap;

    if (take(c->io, &c->next) != 0)
        return;
    growth(c);
    settle_ended(c, t);
    for (size_t i = 0; i < c->next.n; i++) {
        const struct pid_count *now = &c->next.v[i];

        if (now->grew == 0 || dm_top_add_cache_write(t, now->pid, now->grew) == 0)
            continue;
        dm_top_add_cache_row(t, now->pid, now->known ? now->name : NULL, now->grew);
    }
    swap = c->last;
    c->last = c->next;
    c->next = swap;
}
