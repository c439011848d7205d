/*
 * selftest.c - diskmon --self-test, the portable part (selftest.h).
 *
 * The capture is a normal one: the live source opens with the user's
 * options, runs on its own thread into a live sink whose filter keeps
 * diskmon's own pid (-p PID), and the events leave the ring in order as
 * they would for the printer. In place of the printer a collector thread
 * copies them out and notes when each arrived, so the latency check sees
 * what a user's line would. Meanwhile the main thread makes the requests
 * of plan[], timing each call; after a settling time the source is
 * stopped as Ctrl+C would, and every check is made on what was collected.
 *
 * The requests are told apart by what they are, not by time: each read or
 * write covers its own range of the file, and the disk offsets of that
 * range come from the file system (selftest.h, struct dm_st_place), so an
 * event matches a request when it is the same request on the same bytes.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/filter.h"
#include "core/pipeline.h"
#include "core/ring.h"
#include "core/sink.h"
#include "output/text.h"
#include "platform/platform.h"
#include "selftest/selftest.h"

#define NS_PER_MS 1000000ull
/* docs/output.md "Latency": a line is out at most about 0.45 s after its event. */
#define LINE_BOUND_NS (450 * NS_PER_MS)
/* After the last request, how long the capture goes on: more than twice
 * the line bound, so that a late event still comes and is reported as
 * late, not as missing. */
#define SETTLE_MS 1000u
#define POLL_MS 20u
/* diskmon's own events kept for the checks: its requests and the reads of
 * its own pages faulted in meanwhile, a few hundred at most. */
#define SEEN_MAX 4096
#define MATCH_MAX 16
#define BATCH 64
#define SECTOR_BYTES 512u /* the Sector column's unit (docs/output.md "Units") */

/* The requests, in the order they are made. Writes go through the handle
 * opened before the session (on Windows only the start rundown names it),
 * reads through one opened during it. Each range is its own, and the two
 * sizes differ, so no request can be taken for another. */
struct step {
    const char *name;
    int request;      /* DM_REQ_* */
    uint32_t block;   /* first block of the file (DM_ST_BLOCK) */
    uint32_t blocks;  /* 0: a flush */
    int early;
};

static const struct step plan[] = {
    {"write 1", DM_REQ_WRITE, 0, 2, 1},
    {"write 2", DM_REQ_WRITE, 2, 6, 1},
    {"flush", DM_REQ_FLUSH, 0, 0, 1},
    {"read 1", DM_REQ_READ, 0, 2, 0},
    {"read 2", DM_REQ_READ, 2, 6, 0},
};
#define N_STEPS (sizeof plan / sizeof plan[0])

/* One event of diskmon's own, copied out of the ring. */
struct seen {
    uint64_t time_ns;
    uint64_t arrival_ns;   /* dm_monotonic_ns when it left the ring */
    uint64_t byte_offset;
    uint32_t size;
    uint32_t disk;
    uint32_t pid;
    uint16_t flags;
    uint8_t request;
    uint8_t used;          /* matched to a step */
    char process[DM_PROCESS_MAX];
    char file[DM_FILE_MAX];
};

struct collector {
    struct dm_ring *ring;
    struct seen *ev;
    size_t n;
    uint64_t over;         /* events past SEEN_MAX */
    uint64_t out_of_order; /* an event earlier than the one before it */
};

struct source_thread {
    struct dm_source *src;
    struct dm_sink *sink;
    int rc;
};

/* What each step was seen as. */
struct step_result {
    uint64_t begin_ns, end_ns; /* around the call, dm_monotonic_ns */
    int done;                  /* the call was made and succeeded */
    size_t idx[MATCH_MAX];     /* its events in ev[] */
    int n;
    uint64_t t_min, t_max;     /* their time_ns */
    int ok;                    /* its check, printed in plan order */
    char line[400];
};

struct st {
    FILE *out;
    int passed, failed;
    struct dm_st_place place;
    struct step_result res[N_STEPS];
    char own_name[DM_PROCESS_MAX];
    uint32_t own_pid;
};

static void check(struct st *t, int ok, const char *name, const char *fmt, ...)
    DM_PRINTF(4, 5);

static void check(struct st *t, int ok, const char *name, const char *fmt, ...)
{
    char figure[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(figure, sizeof figure, fmt, ap);
    va_end(ap);
    dm_writef(t->out, "%s %s: %s\n", ok ? "PASS" : "FAIL", name, figure);
    if (ok)
        t->passed++;
    else
        t->failed++;
}

static void step_line(struct step_result *r, int ok, const char *fmt, ...) DM_PRINTF(3, 4);

static void step_line(struct step_result *r, int ok, const char *fmt, ...)
{
    va_list ap;

    r->ok = ok;
    va_start(ap, fmt);
    vsnprintf(r->line, sizeof r->line, fmt, ap);
    va_end(ap);
}

static void copy_name(char *dst, size_t len, const char *src)
{
    size_t n = src != NULL ? strlen(src) : 0;

    if (n >= len)
        n = len - 1;
    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
}

static void collector_main(void *arg)
{
    struct collector *c = arg;
    struct dm_event batch[BATCH];
    uint64_t last = 0;

    for (;;) {
        size_t n = dm_ring_peek(c->ring, batch, BATCH);
        uint64_t now = dm_monotonic_ns();

        for (size_t i = 0; i < n; i++) {
            const struct dm_event *e = &batch[i];
            struct seen *s;

            if (e->time_ns < last)
                c->out_of_order++;
            last = e->time_ns;
            if (c->n == SEEN_MAX) {
                c->over++;
                continue;
            }
            s = &c->ev[c->n++];
            s->time_ns = e->time_ns;
            s->arrival_ns = now;
            s->byte_offset = e->byte_offset;
            s->size = e->transfer_size;
            s->disk = e->disk;
            s->pid = e->pid;
            s->flags = e->flags;
            s->request = e->request;
            s->used = 0;
            copy_name(s->process, sizeof s->process, e->process);
            copy_name(s->file, sizeof s->file, e->file);
        }
        dm_ring_release(c->ring);
        if (n == 0) {
            if (dm_ring_drained(c->ring))
                return;
            dm_ring_wait(c->ring, 100, NULL);
        }
    }
}

static void source_main(void *arg)
{
    struct source_thread *st = arg;

    st->rc = st->src->ops->run(st->src, st->sink);
    dm_ring_close(st->sink->ring);
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Names as the kernel spells them may differ in case on Windows. */
static int same_name(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* The source's info lines ("key: value\n") from byte from on, indented
 * under a check; returns where they end, for the lines a source learns
 * later (on Windows the start rundown's, written during run()). */
static size_t print_info(FILE *out, const struct dm_notes *info, size_t from)
{
    const char *p = info->text + from, *end = info->text + info->len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

        dm_writef(out, "  %.*s\n", (int)n, p);
        p += n + 1;
    }
    return info->len;
}

/* The disk byte range of the file range [off, off + len) that lies in
 * extent x; 0 when they do not meet. */
static int piece(const struct dm_st_extent *x, uint64_t off, uint64_t len, uint64_t *d0,
                 uint64_t *d1)
{
    uint64_t a = off > x->file_offset ? off : x->file_offset;
    uint64_t b = off + len < x->file_offset + x->bytes ? off + len : x->file_offset + x->bytes;

    if (a >= b)
        return 0;
    *d0 = x->disk_offset + (a - x->file_offset);
    *d1 = x->disk_offset + (b - x->file_offset);
    return 1;
}

/* The sector where the step's bytes start on the disk (mapped files). */
static uint64_t step_sector(const struct st *t, const struct step *s)
{
    uint64_t d0, d1;

    for (int k = 0; k < t->place.n_ext; k++)
        if (piece(&t->place.ext[k], (uint64_t)s->block * DM_ST_BLOCK,
                  (uint64_t)s->blocks * DM_ST_BLOCK, &d0, &d1))
            return d0 / SECTOR_BYTES;
    return 0;
}

/* Which piece of the step's range event e lies in: 1 when wholly inside
 * one, 0 when it does not meet the range, -1 when it meets but sticks out. */
static int inside(const struct st *t, const struct step *s, const struct seen *e)
{
    uint64_t e0 = e->byte_offset, e1 = e->byte_offset + e->size, d0, d1;
    int meets = 0;

    if (e->disk != t->place.disk)
        return 0;
    for (int k = 0; k < t->place.n_ext; k++) {
        if (!piece(&t->place.ext[k], (uint64_t)s->block * DM_ST_BLOCK,
                   (uint64_t)s->blocks * DM_ST_BLOCK, &d0, &d1))
            continue;
        if (e0 >= d0 && e1 <= d1)
            return 1;
        if (e0 < d1 && e1 > d0)
            meets = 1;
    }
    return meets ? -1 : 0;
}

static void add_match(struct step_result *r, struct seen *ev, size_t i)
{
    if (r->n == MATCH_MAX)
        return;
    if (r->n == 0 || ev[i].time_ns < r->t_min)
        r->t_min = ev[i].time_ns;
    if (r->n == 0 || ev[i].time_ns > r->t_max)
        r->t_max = ev[i].time_ns;
    r->idx[r->n++] = i;
    ev[i].used = 1;
}

/*
 * A read or a write: its events must cover its bytes on the disk exactly
 * once (the kernel may split a request; it must not repeat or lose a
 * part). With the file's place unknown, the first unused event of the
 * same request and size after the previous step's stands for it.
 */
static void check_transfer(struct st *t, size_t k, struct collector *c)
{
    const struct step *s = &plan[k];
    struct step_result *r = &t->res[k];
    uint64_t len = (uint64_t)s->blocks * DM_ST_BLOCK, covered = 0, after = 0;
    int stray = 0;

    for (size_t j = 0; j < k; j++)
        if (t->res[j].n > 0 && t->res[j].t_max > after)
            after = t->res[j].t_max;
    for (size_t i = 0; i < c->n; i++) {
        struct seen *e = &c->ev[i];

        if (e->request != s->request || e->used)
            continue;
        if (!t->place.mapped) {
            if (e->size == len && e->time_ns >= after) {
                add_match(r, c->ev, i);
                break;
            }
            continue;
        }
        switch (inside(t, s, e)) {
        case 1:
            add_match(r, c->ev, i);
            covered += e->size;
            break;
        case -1:
            stray++;
            break;
        default:
            break;
        }
    }
    if (!t->place.mapped) {
        if (r->n == 1)
            step_line(r, 1, "%" PRIu64 " bytes, seen once at sector %" PRIu64
                  " of disk %" PRIu32 " (sector not checked: %s)", len,
                  c->ev[r->idx[0]].byte_offset / SECTOR_BYTES, c->ev[r->idx[0]].disk,
                  t->place.unmapped_why);
        else
            step_line(r, 0, "no %s of %" PRIu64 " bytes by pid %" PRIu32
                  " seen after the request before it", dm_request_names[s->request],
                  len, t->own_pid);
        return;
    }
    if (r->n == 0) {
        /* Not where the file is: was it anywhere? */
        for (size_t i = 0; i < c->n; i++) {
            const struct seen *e = &c->ev[i];

            if (e->request == s->request && !e->used && e->size == len) {
                step_line(r, 0, "%" PRIu64 " bytes seen at sector %" PRIu64
                      " of disk %" PRIu32 ", but the file's bytes are at sector %"
                      PRIu64 " of %s (%s)", len, e->byte_offset / SECTOR_BYTES, e->disk,
                      step_sector(t, s), t->place.disk_name, t->place.where);
                return;
            }
        }
        step_line(r, 0, "not seen: no %s by pid %" PRIu32 " at sector %" PRIu64
              " of %s, %" PRIu64 " bytes", dm_request_names[s->request], t->own_pid,
              step_sector(t, s), t->place.disk_name, len);
        return;
    }
    if (stray > 0 || covered != len) {
        step_line(r, 0, "%d event%s covering %" PRIu64 " bytes of its %" PRIu64
              "%s: the request was %s", r->n, r->n == 1 ? "" : "s", covered, len,
              stray > 0 ? " and events reaching outside it" : "",
              covered > len ? "seen more than once" : "not seen exactly");
        return;
    }
    step_line(r, 1, "%" PRIu64 " bytes at sector %" PRIu64 " of %s, seen once%s",
          len, step_sector(t, s), t->place.disk_name,
          r->n > 1 ? " (split by the kernel into several requests)" : "");
}

/* The flush: at least one flush request of diskmon's between the last
 * write and the first read, unless the disk has no volatile write cache
 * (none, disabled, or write through: the place's write_cache 0). A flush
 * then has nothing to write, and the OS may complete it without sending
 * it (Linux does, block/blk-flush.c; Windows does not document either
 * way), so the check passes whether or not one is seen and says which. */
static void check_flush(struct st *t, size_t k, struct collector *c)
{
    struct step_result *r = &t->res[k];
    const struct step_result *before = &t->res[k - 1], *next = &t->res[k + 1];

    for (size_t i = 0; i < c->n; i++) {
        const struct seen *e = &c->ev[i];

        if (e->request != DM_REQ_FLUSH || e->used)
            continue;
        if ((before->n > 0 && e->time_ns < before->t_max) ||
            (next->n > 0 && e->time_ns > next->t_min))
            continue;
        add_match(r, c->ev, i);
    }
    if (r->n > 0)
        step_line(r, 1, "%d flush request%s after %s and before %s%s", r->n,
              r->n == 1 ? "" : "s", plan[k - 1].name, plan[k + 1].name,
              t->place.write_cache == 0 ? " (the disk has no volatile write cache: "
                                          "the flush had nothing to write)" : "");
    else if (t->place.write_cache == 0)
        step_line(r, 1, "no flush request seen, and none is needed: %s has no volatile "
              "write cache, so a flush has nothing to write (%s)", t->place.disk_name,
              t->place.where);
    else
        step_line(r, 0, "no flush request by pid %" PRIu32 " seen after %s "
              "(the write cache of %s is %s)", t->own_pid, plan[k - 1].name,
              t->place.disk_name, t->place.write_cache == 1 ? "write back" : "unknown");
}

/* Properties of every event matched: pid and process, order, latency,
 * file names. */
static void check_matched(struct st *t, const struct collector *c, const char *file_name)
{
    uint64_t late_max = 0, prev_max = 0;
    int n = 0, bad_id = 0, in_order = 1, named[2] = {0, 0}, total[2] = {0, 0};
    const struct seen *bad = NULL, *unnamed[2] = {NULL, NULL};

    for (size_t k = 0; k < N_STEPS; k++) {
        const struct step_result *r = &t->res[k];

        if (r->n == 0)
            continue;
        if (r->t_min < prev_max)
            in_order = 0;
        prev_max = r->t_max;
        for (int j = 0; j < r->n; j++) {
            const struct seen *e = &c->ev[r->idx[j]];
            uint64_t late = e->arrival_ns > r->end_ns ? e->arrival_ns - r->end_ns : 0;

            n++;
            if (late > late_max)
                late_max = late;
            if (!(e->flags & DM_EV_HAS_PID) || e->pid != t->own_pid ||
                !(e->flags & DM_EV_HAS_PROCESS) || !same_name(e->process, t->own_name)) {
                bad_id++;
                bad = e;
            }
            if (plan[k].request == DM_REQ_FLUSH)
                continue; /* a flush names no file */
            total[plan[k].early]++;
            if ((e->flags & DM_EV_HAS_FILE) && file_name != NULL &&
                same_name(e->file, file_name))
                named[plan[k].early]++;
            else
                unnamed[plan[k].early] = e;
        }
    }
    if (n == 0) {
        check(t, 0, "pid and process", "no event of diskmon's requests was seen");
        return;
    }
    if (bad_id == 0)
        check(t, 1, "pid and process", "%" PRIu32 " %s on all %d events", t->own_pid,
              t->own_name, n);
    else
        check(t, 0, "pid and process", "%d of %d events show pid %" PRIu32 " \"%s\", "
              "not %" PRIu32 " %s", bad_id, n, bad->pid, bad->process, t->own_pid,
              t->own_name);
    if (in_order && c->out_of_order == 0)
        check(t, 1, "time order", "the requests' events in the order they were made, "
              "and all %u events of pid %" PRIu32 " in time order", (unsigned)c->n, t->own_pid);
    else
        check(t, 0, "time order", "the requests' events %sin the order they were made; %"
              PRIu64 " of the %u events of pid %" PRIu32 " earlier than the one before",
              in_order ? "" : "NOT ", c->out_of_order, (unsigned)c->n, t->own_pid);
    {
        const uint64_t bound_ms = LINE_BOUND_NS / NS_PER_MS, late_ms = late_max / NS_PER_MS;

        check(t, late_max <= LINE_BOUND_NS, "latency",
              "each event out of the ring at most %" PRIu64 " ms after its call returned "
              "(bound %" PRIu64 " ms, docs/output.md \"Latency\")", late_ms, bound_ms);
    }
    if (file_name == NULL)
        return;
    for (int early = 1; early >= 0; early--) {
        const char *what = early ? "file name, opened before the session (start rundown)"
                                 : "file name, opened during the session";

        if (total[early] > 0 && named[early] == total[early])
            check(t, 1, what, "%s on all %d events", file_name, total[early]);
        else if (total[early] > 0)
            check(t, 0, what, "%d of %d events name the file; one shows \"%s\"",
                  named[early], total[early], unnamed[early]->file);
    }
}

/* The test knob DM_SELFTEST_DROP=write|read: forget the first event of
 * that request on the file, as if the pipeline had lost it, so that the
 * tests can show a loss is reported as a FAIL. */
static void drop_for_test(struct st *t, struct collector *c)
{
    const char *knob = getenv("DM_SELFTEST_DROP");

    if (knob == NULL)
        return;
    for (size_t k = 0; k < N_STEPS; k++) {
        if (plan[k].blocks == 0 || !same_name(knob, dm_request_names[plan[k].request]))
            continue;
        for (size_t i = 0; i < c->n; i++) {
            struct seen *e = &c->ev[i];

            if (e->request == plan[k].request &&
                (t->place.mapped ? inside(t, &plan[k], e) != 0
                                 : e->size == plan[k].blocks * DM_ST_BLOCK)) {
                memmove(e, e + 1, (c->n - i - 1) * sizeof *e);
                c->n--;
                dm_writef(t->out, "note: DM_SELFTEST_DROP=%s: one %s event dropped\n", knob,
                          dm_request_names[plan[k].request]);
                return;
            }
        }
    }
}

/* The requests of plan[], each timed. Returns 0, or -1 after a FAIL line. */
static int make_requests(struct st *t, struct dm_st_file *f)
{
    char msg[256];

    for (size_t k = 0; k < N_STEPS; k++) {
        const struct step *s = &plan[k];
        int rc;

        if (dm_interrupted()) {
            check(t, 0, "I/O", "interrupted before %s", s->name);
            return -1;
        }
        t->res[k].begin_ns = dm_monotonic_ns();
        rc = dm_st_request(f, s->request, (uint64_t)s->block * DM_ST_BLOCK,
                           s->blocks * DM_ST_BLOCK, s->early, msg, sizeof msg);
        t->res[k].end_ns = dm_monotonic_ns();
        if (rc != 0) {
            check(t, 0, "I/O", "%s failed: %s", s->name, msg);
            return -1;
        }
        t->res[k].done = 1;
    }
    check(t, 1, "I/O", "%u requests made, unbuffered and written through "
          "(2 writes, a flush, 2 reads)", (unsigned)N_STEPS);
    return 0;
}

/* The capture around the requests, then the checks on what it saw. */
static void capture(struct st *t, struct dm_source *src, const struct dm_options *opt,
                    struct dm_st_file *f)
{
    struct dm_options fopt = *opt;
    struct dm_filter filter;
    struct dm_sink sink;
    struct collector c;
    struct source_thread sth;
    dm_thread *source_thr = NULL, *collector_thr = NULL;
    dm_waiter *wake = NULL;
    volatile int stop = 0;
    int requests_ok = 0;

    memset(&c, 0, sizeof c);
    memset(&sink, 0, sizeof sink);
    fopt.pids[0] = t->own_pid;
    fopt.n_pids = 1;
    dm_filter_init(&filter, &fopt);
    c.ring = dm_ring_create(DM_RING_LIVE_BYTES);
    c.ev = malloc(SEEN_MAX * sizeof *c.ev);
    wake = dm_waiter_create(0);
    if (c.ring == NULL || c.ev == NULL || wake == NULL) {
        check(t, 0, "capture", "%s", dm_strerror(DM_ENOMEM));
        goto out;
    }
    dm_ring_set_waiter(c.ring, wake);
    sink.ring = c.ring;
    sink.filter = &filter;
    sink.stop_flag = &stop;
    sth.src = src;
    sth.sink = &sink;
    sth.rc = 0;
    if (dm_thread_start(&collector_thr, collector_main, &c) != 0 ||
        dm_thread_start(&source_thr, source_main, &sth) != 0) {
        check(t, 0, "capture", "cannot start a thread");
        if (collector_thr != NULL)
            dm_ring_close(c.ring);
        goto join;
    }
    requests_ok = make_requests(t, f) == 0;
    for (unsigned waited = 0; requests_ok && waited < SETTLE_MS && !dm_interrupted();
         waited += POLL_MS)
        dm_sleep_ms(POLL_MS);
    dm_atomic_store_int(&stop, DM_SINK_STOP_ASKED);
    src->ops->stop(src);
join:
    if (source_thr != NULL)
        dm_thread_join(source_thr);
    if (collector_thr != NULL)
        dm_thread_join(collector_thr);
    if (source_thr == NULL || collector_thr == NULL)
        goto out;
    if (sth.rc != 0 && sth.rc != DM_ESTOPPED) {
        check(t, 0, "capture", "%s", src->errmsg[0] ? src->errmsg : dm_strerror(sth.rc));
        goto out;
    }
    if (dm_interrupted()) {
        check(t, 0, "capture", "interrupted");
        goto out;
    }
    if (!requests_ok)
        goto out;
    drop_for_test(t, &c);
    for (size_t k = 0; k < N_STEPS; k++)
        if (plan[k].blocks > 0)
            check_transfer(t, k, &c);
    check_flush(t, 2, &c);
    for (size_t k = 0; k < N_STEPS; k++)
        check(t, t->res[k].ok, plan[k].name, "%s", t->res[k].line);
    check_matched(t, &c, src->has_files ? dm_st_file_name(f) : NULL);
    {
        uint64_t dropped = dm_ring_dropped(c.ring);
        int ok = src->lost_events == 0 && src->lost_buffers == 0 && dropped == 0 &&
                 c.over == 0;

        check(t, ok, "nothing lost", "%" PRIu64 " events lost by the kernel, %" PRIu64
              " whole buffers, %" PRIu64 " dropped by the ring, %" PRIu64
              " past the self-test's %d%s%s", src->lost_events, src->lost_buffers,
              dropped, c.over, SEEN_MAX, src->loss_detail[0] ? "; " : "",
              src->loss_detail);
    }
out:
    dm_ring_destroy(c.ring);
    dm_waiter_destroy(wake);
    free(c.ev);
}

int dm_selftest(const struct dm_options *opt, const struct dm_source_ops *ops, FILE *out)
{
    struct st *t = calloc(1, sizeof *t);
    struct dm_source src;
    struct dm_st_file *f = NULL;
    char msg[512];
    size_t info_shown = 0;
    int rc, exit_code;

    if (t == NULL) {
        dm_writef(out, "FAIL self-test: %s\n", dm_strerror(DM_ENOMEM));
        return 1;
    }
    t->out = out;
    t->own_pid = dm_st_own_pid();
    dm_st_own_name(t->own_name, sizeof t->own_name);
    memset(&src, 0, sizeof src);
    src.ops = ops;
    /* The file first: on Windows its handle must be open before the session
     * starts, for the start rundown to be what names it. */
    rc = dm_st_prepare(&f, opt->self_test_path, &t->place, msg, sizeof msg);
    if (rc != 0) {
        check(t, 0, "temp file", "%s", msg);
        goto done;
    }
    rc = ops->open(&src, opt);
    if (rc != 0) {
        check(t, 0, "live source", "%s", src.errmsg[0] ? src.errmsg : dm_strerror(rc));
        ops->close(&src);
        goto done;
    }
    check(t, 1, "live source", "%s%s%s", ops->name, src.backend != NULL ? " via " : "",
          src.backend != NULL ? src.backend : "");
    info_shown = print_info(out, &src.info, 0);
    dm_notes_flush(&src.notes, out);
    if (t->place.mapped)
        check(t, 1, "temp file", "%s, %u bytes, %d extent%s, starting at sector %" PRIu64
              " of %s (%s)", dm_st_path(f), DM_ST_FILE_BLOCKS * DM_ST_BLOCK, t->place.n_ext,
              t->place.n_ext == 1 ? "" : "s", t->place.ext[0].disk_offset / SECTOR_BYTES,
              t->place.disk_name, t->place.where);
    else
        check(t, 1, "temp file", "%s, %u bytes (its sectors not known: %s)", dm_st_path(f),
              DM_ST_FILE_BLOCKS * DM_ST_BLOCK, t->place.unmapped_why);
    capture(t, &src, opt, f);
    ops->close(&src);
    if (src.info.len > info_shown) {
        dm_writef(out, "info learned during the run:\n");
        print_info(out, &src.info, info_shown);
    }
    dm_notes_flush(&src.notes, out);
done:
    dm_st_remove(f);
    dm_interrupt_done();
    rc = dm_writef(out, "diskmon %s --self-test: %d passed, %d failed%s\n", DM_VERSION,
                   t->passed, t->failed, t->failed > 0 ? "" : " (all checks passed)");
    exit_code = t->failed > 0 || t->passed == 0 || rc != 0 ? 1 : 0;
    free(t);
    return exit_code;
}
