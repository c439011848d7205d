/*
 * test_forward.c - how much a forward-only decode names, on the sample
 * traces.
 *
 * A live session learns names only forward, in time order: there is no
 * second pass over what is still to come. This suite feeds each sample
 * trace's records to the shared decoder that way (dm_kdecode only, no
 * dm_kdecode_rundown) and compares every Read/Write/Flush with a full
 * replay (rundown pass, then forward pass), which matches the reference
 * decodings (test_replay). Two orders:
 *   - as recorded: the kernel's FileRundown (FileIo 36) comes only when the
 *     session stops, so it names almost nothing before;
 *   - with the FileRundown records moved to the start, which is what a
 *     rundown forced at session start gives a live session.
 *   - with only the names of objects older than the trace given at the
 *     start (their first FileIo_Name record is a FileDelete or FileRundown),
 *     a closer model of what a start-time rundown names.
 * It prints the shares (figures for the issue), and checks the issue's own
 * figures for the recorded order and its 95% target for the other two, and
 * that a name found forward is always the name replay gives.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/nt_kernel.h"
#include "decode/reorder.h"
#include "diskmon.h"
#include "dmtest.h"
#include "etl/etl.h"
#include "etl/replay.h"

#define WIN8 "perfview-net452-x64-win8"
#define WIN11 "filtrace-diskio-win11"
#define FILEIO_FILERUNDOWN 36 /* FileIo_Name opcode (MS fileio) */

/* Every record of a trace, payloads copied. */
struct trace {
    struct dm_krecord *recs;
    unsigned *cpu;      /* the processor whose buffer held each record */
    unsigned n_cpus;
    size_t n;
    uint8_t **payloads;
    uint64_t ts_freq, start_ts, qpc_freq;
};

static void trace_free(struct trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->payloads[i]);
    free(t->payloads);
    free(t->recs);
    free(t->cpu);
    memset(t, 0, sizeof *t);
}

static int load(const char *name, struct trace *t)
{
    struct dm_etl *etl;
    struct dm_etl_record r;
    char path[1024], err[512];
    size_t cap = 0;
    int rc;

    memset(t, 0, sizeof *t);
    snprintf(path, sizeof path, "%s/%s.etl", dmt_shared_etl_dir(), name);
    rc = dm_etl_open(&etl, path, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "    %s\n", err);
        return rc;
    }
    t->ts_freq = dm_etl_info(etl)->perf_freq;
    t->qpc_freq = dm_etl_info(etl)->qpc_freq;
    t->start_ts = dm_etl_info(etl)->header_timestamp;
    while ((rc = dm_etl_next(etl, &r, err, sizeof err)) == 1) {
        struct dm_krecord *k;
        uint8_t *p = NULL;

        if (t->n == cap) {
            size_t ncap = cap ? 2 * cap : 4096;
            struct dm_krecord *nr = realloc(t->recs, ncap * sizeof *nr);
            uint8_t **np;

            unsigned *nc;

            if (nr == NULL)
                break;
            t->recs = nr;
            np = realloc(t->payloads, ncap * sizeof *np);
            if (np == NULL)
                break;
            t->payloads = np;
            nc = realloc(t->cpu, ncap * sizeof *nc);
            if (nc == NULL)
                break;
            t->cpu = nc;
            cap = ncap;
        }
        if (r.payload_len > 0) {
            p = malloc(r.payload_len);
            if (p == NULL)
                break;
            memcpy(p, r.payload, r.payload_len);
        }
        k = &t->recs[t->n];
        t->cpu[t->n] = r.cpu;
        if (r.cpu >= t->n_cpus)
            t->n_cpus = r.cpu + 1;
        t->payloads[t->n++] = p;
        dm_etl_krecord(&r, k);
        k->payload = p;
    }
    dm_etl_close(etl);
    if (rc != 0) {
        fprintf(stderr, "    %s: %s\n", name, rc < 0 ? err : "out of memory");
        trace_free(t);
        return rc < 0 ? rc : DM_ENOMEM;
    }
    return 0;
}

static int is_file_rundown(const struct dm_krecord *k)
{
    return k->kclass == DM_K_FILEIO && k->opcode == FILEIO_FILERUNDOWN;
}

enum order {
    FULL_REPLAY,
    FORWARD_AS_RECORDED,
    FORWARD_RUNDOWN_FIRST, /* every FileRundown moved to the start */
    FORWARD_ALIVE_AT_START /* only names of objects that predate the trace */
};

struct fo_index {
    uint64_t file_object;
    size_t index;
};

static int fo_cmp(const void *a, const void *b)
{
    const struct fo_index *x = a, *y = b;

    if (x->file_object != y->file_object)
        return x->file_object < y->file_object ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * What a rundown at session start would name, estimated from the trace:
 * the objects whose first FileIo_Name record is a FileDelete (35) or a
 * FileRundown (36), i.e. that no Name/FileCreate introduced during the
 * trace. first[i] is set to 1 for those records. Moving every FileRundown
 * to the start instead also names objects created during the trace before
 * their FileCreate, and misses those closed before the end.
 */
static int alive_at_start(const struct trace *t, uint8_t *first)
{
    struct fo_index *v = malloc(t->n * sizeof *v);
    size_t m = 0;

    if (v == NULL)
        return DM_ENOMEM;
    memset(first, 0, t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct dm_krecord *k = &t->recs[i];
        if (k->kclass == DM_K_FILEIO && k->payload_len >= k->pointer_size &&
            (k->opcode == 0 || k->opcode == 32 || k->opcode == 35 ||
             k->opcode == FILEIO_FILERUNDOWN)) {
            uint64_t fo = 0;
            for (unsigned b = 0; b < k->pointer_size; b++)
                fo |= (uint64_t)k->payload[b] << (8 * b);
            v[m].file_object = fo;
            v[m++].index = i;
        }
    }
    qsort(v, m, sizeof *v, fo_cmp);
    for (size_t j = 0; j < m; j++) {
        const struct dm_krecord *k = &t->recs[v[j].index];
        if ((j == 0 || v[j - 1].file_object != v[j].file_object) &&
            (k->opcode == 35 || k->opcode == FILEIO_FILERUNDOWN))
            first[v[j].index] = 1;
    }
    free(v);
    return 0;
}

/* Decode t in the given way; the completions into ev (t's DiskIo count at
 * most), their number returned, or -1. */
static long decode(const struct trace *t, enum order how, struct dm_event *ev,
                   size_t max)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(t->ts_freq, t->start_ts, t->qpc_freq);
    uint8_t *first = malloc(t->n + 1);
    size_t n = 0;

    if (kd == NULL || first == NULL || alive_at_start(t, first) < 0) {
        dm_kdecoder_destroy(kd);
        free(first);
        return -1;
    }
    if (how == FORWARD_ALIVE_AT_START) {
        /* The rundown record's name, given as a FileRundown at the start. */
        for (size_t i = 0; i < t->n; i++) {
            struct dm_krecord r = t->recs[i];
            if (!first[i])
                continue;
            r.opcode = FILEIO_FILERUNDOWN;
            (void)dm_kdecode(kd, &r, &ev[0]);
        }
    }
    if (how == FULL_REPLAY)
        for (size_t i = 0; i < t->n; i++)
            (void)dm_kdecode_rundown(kd, &t->recs[i]);
    if (how == FORWARD_RUNDOWN_FIRST)
        for (size_t i = 0; i < t->n; i++)
            if (is_file_rundown(&t->recs[i]))
                (void)dm_kdecode(kd, &t->recs[i], &ev[0]);
    for (size_t i = 0; i < t->n && n < max; i++) {
        if ((how == FORWARD_RUNDOWN_FIRST || how == FORWARD_ALIVE_AT_START) &&
            is_file_rundown(&t->recs[i]))
            continue;
        if (dm_kdecode(kd, &t->recs[i], &ev[n]) == 1)
            dmt_keep_names(&ev[n++]);
    }
    dm_kdecoder_destroy(kd);
    free(first);
    return (long)n;
}

struct share {
    size_t total, rw, named, rw_named, same_pid, name_differs, unnamed_shown;
};

static int same_process(const struct dm_event *a, const struct dm_event *b)
{
    unsigned m = DM_EV_HAS_PID | DM_EV_HAS_PROCESS;

    return (a->flags & m) == (b->flags & m) &&
           (!(a->flags & DM_EV_HAS_PID) || a->pid == b->pid) &&
           strcmp(a->process, b->process) == 0;
}

/* Compare a forward decode with the full replay, event by event (both
 * emit the same completions in the same order). */
static int measure(const char *name, enum order how, struct share *s)
{
    struct trace t;
    struct dm_event *full = NULL, *fwd = NULL;
    long n_full, n_fwd;
    int rc = load(name, &t);

    memset(s, 0, sizeof *s);
    if (rc < 0)
        return rc;
    full = malloc(t.n * sizeof *full);
    fwd = malloc(t.n * sizeof *fwd);
    rc = DM_ENOMEM;
    if (full != NULL && fwd != NULL) {
        n_full = decode(&t, FULL_REPLAY, full, t.n);
        n_fwd = decode(&t, how, fwd, t.n);
        rc = n_full < 0 || n_fwd != n_full ? DM_ENOMEM : 0;
        for (long i = 0; rc == 0 && i < n_full; i++) {
            int rw = fwd[i].request != DM_REQ_FLUSH;
            int named = (fwd[i].flags & DM_EV_HAS_FILE) != 0;

            if (fwd[i].irp != full[i].irp || fwd[i].time_ns != full[i].time_ns) {
                rc = DM_ECORRUPT; /* not the same completion: cannot compare */
                break;
            }
            s->total++;
            s->rw += (size_t)rw;
            s->named += (size_t)named;
            s->rw_named += (size_t)(rw && named);
            s->same_pid += (size_t)same_process(&fwd[i], &full[i]);
            /* A name forward should be the name replay gives. */
            if (named && strcmp(fwd[i].file, full[i].file) != 0) {
                s->name_differs++;
                if (s->name_differs <= 5)
                    printf("    %s: completion %ld: forward %s, replay %s\n",
                           name, i, fwd[i].file, full[i].file);
            }
            /* What a start-time rundown still leaves unnamed. */
            if (how != FORWARD_AS_RECORDED && !named && rw &&
                s->unnamed_shown++ < 10)
                printf("    %s: completion %ld (irp %" PRIx64 ", %.6f s) unnamed;"
                       " replay: \"%s\"\n", name, i, full[i].irp,
                       (double)full[i].time_ns / 1e9, full[i].file);
        }
    }
    free(full);
    free(fwd);
    trace_free(&t);
    return rc;
}

static void print_share(const char *name, const char *how, const struct share *s)
{
    printf("    %s, %s: file named %zu/%zu Read/Write/Flush (%zu/%zu Read/Write, "
           "%.1f%%), same process as replay %zu/%zu, other name %zu\n",
           name, how, s->named, s->total, s->rw_named, s->rw,
           s->rw ? 100.0 * (double)s->rw_named / (double)s->rw : 0.0,
           s->same_pid, s->total, s->name_differs);
}

/* At least 95% of Read/Write named: the live path's target. */
static int enough(const struct share *s)
{
    return s->rw > 0 && 100 * s->rw_named >= 95 * s->rw;
}

/* As recorded, the end-only FileRundown names nearly nothing forward: the
 * issue measured 3 of 1,231 (win8) and 45 of 119 (win11). */
DM_TEST(forward_as_recorded)
{
    struct share w8, w11;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_ASSERT_EQ_INT(measure(WIN8, FORWARD_AS_RECORDED, &w8), 0);
    DM_ASSERT_EQ_INT(measure(WIN11, FORWARD_AS_RECORDED, &w11), 0);
    print_share(WIN8, "rundown at the end", &w8);
    print_share(WIN11, "rundown at the end", &w11);
    DM_ASSERT_EQ_U64(w8.total, 1231);
    DM_ASSERT_EQ_U64(w11.total, 119);
    DM_ASSERT_EQ_U64(w8.named, 3);
    DM_ASSERT_EQ_U64(w11.named, 45);
    DM_ASSERT_EQ_U64(w8.same_pid, w8.total);
    DM_ASSERT_EQ_U64(w11.same_pid, w11.total);
    DM_ASSERT_EQ_U64(w8.name_differs + w11.name_differs, 0);
}

DM_TEST(forward_rundown_first)
{
    struct share w8, w11;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_ASSERT_EQ_INT(measure(WIN8, FORWARD_RUNDOWN_FIRST, &w8), 0);
    DM_ASSERT_EQ_INT(measure(WIN11, FORWARD_RUNDOWN_FIRST, &w11), 0);
    print_share(WIN8, "rundown at the start", &w8);
    print_share(WIN11, "rundown at the start", &w11);
    DM_ASSERT(enough(&w8));
    DM_ASSERT(enough(&w11));
    DM_ASSERT_EQ_U64(w8.same_pid, w8.total);
    DM_ASSERT_EQ_U64(w11.same_pid, w11.total);
    DM_ASSERT_EQ_U64(w8.name_differs + w11.name_differs, 0);
}

DM_TEST(forward_alive_at_start)
{
    struct share w8, w11;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_ASSERT_EQ_INT(measure(WIN8, FORWARD_ALIVE_AT_START, &w8), 0);
    DM_ASSERT_EQ_INT(measure(WIN11, FORWARD_ALIVE_AT_START, &w11), 0);
    print_share(WIN8, "start rundown of the objects older than the trace", &w8);
    print_share(WIN11, "start rundown of the objects older than the trace", &w11);
    DM_ASSERT(enough(&w8));
    DM_ASSERT(enough(&w11));
    DM_ASSERT_EQ_U64(w8.same_pid, w8.total);
    DM_ASSERT_EQ_U64(w11.same_pid, w11.total);
    DM_ASSERT_EQ_U64(w8.name_differs + w11.name_differs, 0);
}

/* ---- the reorder stage on real records --------------------------------- */

struct sink_ctx {
    struct dm_kdecoder *kd;
    struct dm_event *ev;
    size_t n, max;
};

static int to_decoder(void *ctx, const struct dm_krecord *rec)
{
    struct sink_ctx *c = ctx;

    if (c->n < c->max && dm_kdecode(c->kd, rec, &c->ev[c->n]) == 1)
        dmt_keep_names(&c->ev[c->n++]);
    return 0;
}

/*
 * Deliver t the way a real-time session with per-processor buffers does:
 * each CPU's records in order, but the CPUs' buffers out of global order
 * (docs/etw.md §7). *overtaken counts the records that arrived after a
 * newer one. Trace time is cut into slices of one FlushTimer period (1 s);
 * in each slice every CPU's records of the slice arrive as one batch, the
 * CPUs in an order that changes every slice and starts with the CPU that
 * was last before, and the stage's clock ("now") is the end of the slice.
 * Then the stage must give the decoder the trace's own order.
 */
static int reorder_and_decode(const struct trace *t, struct dm_event *ev,
                              size_t max, size_t *n, uint64_t *late,
                              uint64_t *overtaken)
{
    uint64_t period = t->ts_freq; /* FlushTimer 1 s */
    struct dm_reorder *ro = dm_reorder_create(
        t->n_cpus, dm_reorder_window_ticks(t->ts_freq, 1), 65536);
    struct sink_ctx c;
    size_t *next = calloc(t->n_cpus, sizeof *next);
    uint64_t slice_end = t->start_ts + period, newest = 0;
    size_t done = 0;
    int rc = 0;

    *overtaken = 0;
    memset(&c, 0, sizeof c);
    c.kd = dm_kdecoder_create(t->ts_freq, t->start_ts, t->qpc_freq);
    c.ev = ev;
    c.max = max;
    if (ro == NULL || next == NULL || c.kd == NULL)
        rc = DM_ENOMEM;
    for (unsigned slice = 0; rc == 0 && done < t->n; slice++) {
        for (unsigned j = 0; rc == 0 && j < t->n_cpus; j++) {
            unsigned cpu = (t->n_cpus - 1 - j + slice) % t->n_cpus;
            /* this CPU's records of the slice, from where it stopped */
            for (size_t i = next[cpu]; rc == 0 && i < t->n; i++) {
                if (t->cpu[i] != cpu)
                    continue;
                if (t->recs[i].timestamp >= slice_end)
                    break;
                if (t->recs[i].timestamp < newest)
                    (*overtaken)++;
                else
                    newest = t->recs[i].timestamp;
                rc = dm_reorder_push(ro, cpu, &t->recs[i], to_decoder, &c);
                next[cpu] = i + 1;
                done++;
            }
            /* skip ahead to this CPU's next record */
            while (next[cpu] < t->n && t->cpu[next[cpu]] != cpu)
                next[cpu]++;
        }
        if (rc == 0)
            rc = dm_reorder_release(ro, slice_end, to_decoder, &c);
        slice_end += period;
    }
    if (rc == 0)
        rc = dm_reorder_flush(ro, to_decoder, &c);
    *n = c.n;
    *late = ro != NULL ? dm_reorder_late(ro) : 0;
    dm_reorder_destroy(ro);
    dm_kdecoder_destroy(c.kd);
    free(next);
    return rc;
}

DM_TEST(reorder_restores_trace_order)
{
    static const char *const names[] = {WIN8, WIN11};

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    for (int k = 0; k < 2; k++) {
        struct trace t;
        struct dm_event *sorted, *got;
        size_t n_got = 0;
        uint64_t late = 0, overtaken = 0;
        long n_sorted;

        DM_ASSERT_EQ_INT(load(names[k], &t), 0);
        sorted = malloc(t.n * sizeof *sorted);
        got = malloc(t.n * sizeof *got);
        DM_ASSERT(sorted != NULL && got != NULL);
        n_sorted = decode(&t, FORWARD_AS_RECORDED, sorted, t.n);
        DM_ASSERT_EQ_INT(reorder_and_decode(&t, got, t.n, &n_got, &late,
                                            &overtaken), 0);
        printf("    %s: %u CPUs, %zu records (%" PRIu64 " arrived after a newer "
               "one), %zu completions, %" PRIu64 " late\n",
               names[k], t.n_cpus, t.n, overtaken, n_got, late);
        DM_ASSERT(t.n_cpus > 1);
        DM_ASSERT(overtaken > 0);
        DM_ASSERT_EQ_U64(late, 0);
        DM_ASSERT_EQ_U64(n_got, (uint64_t)n_sorted);
        for (size_t i = 0; i < n_got; i++) {
            DM_ASSERT_EQ_U64(got[i].irp, sorted[i].irp);
            DM_ASSERT_EQ_U64(got[i].time_ns, sorted[i].time_ns);
            DM_ASSERT_EQ_U64(got[i].duration_ns, sorted[i].duration_ns);
            DM_ASSERT_EQ_U64(got[i].pid, sorted[i].pid);
            DM_ASSERT_EQ_U64(got[i].tid, sorted[i].tid);
            DM_ASSERT_EQ_INT(got[i].flags, sorted[i].flags);
            DM_ASSERT_STR_EQ(got[i].file, sorted[i].file);
        }
        free(sorted);
        free(got);
        trace_free(&t);
    }
}

const struct dmt_case dm_suite_forward[] = {
    {"forward_as_recorded", forward_as_recorded},
    {"forward_rundown_first", forward_rundown_first},
    {"forward_alive_at_start", forward_alive_at_start},
    {"reorder_restores_trace_order", reorder_restores_trace_order},
    {NULL, NULL},
};
