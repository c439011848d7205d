/*
 * bench_callback.c - how long the live callback path takes per event.
 *
 * The path every kernel record takes on the source thread: decode
 * (dm_kdecode), filter (dm_filter_match, the default keep-everything
 * filter), enqueue (dm_ring_try_push, which copies the event's 64 fixed
 * bytes and its names into the ring). The records of the sample traces are
 * read with the .etl reader and kept in memory first, so only that path is
 * timed; the figure is the time of the loop divided by the records fed.
 * Three figures per trace:
 *   - "all records": every record of the trace, in file order, through a
 *     new decoder (its tables are cold: their pages are first touched in
 *     the timed loop);
 *   - "DiskIo records only": the figure the 50 ns goal is for. Init and completion
 *     records alike, on a decoder that already knows the trace's threads,
 *     processes and files and has seen the DiskIo records once (untimed):
 *     the steady state of a live session, tables and ring in memory. A
 *     completion does the IRP lookup and removal, thread -> process ->
 *     name, the file lookup, the event fill and the push; an Init one table
 *     put. Profile it with valgrind --tool=callgrind
 *     --toggle-collect='timed_diskio*': that counts both runs, so divide
 *     by twice the records;
 *   - "reorder+decode+filter+enqueue": the reorder stage (decode/reorder.h)
 *     in front of decode, as the live source does: records pushed in file
 *     order with each record's own CPU, but not those the decoder ignores
 *     (dm_kdecode_ignores: classes and opcodes it does not decode, which the
 *     live source keeps out of the stage too), a release every 64 records
 *     (as if a buffer ended), the flush at the end. Once for all records (a new
 *     stage and decoder), once for the DiskIo records only, warm as above
 *     (the live path's cost per DiskIo record: the copy into the stage,
 *     the merge out of it, and the rest).
 * On Windows builds the real EventRecordCallback of the ETW source is
 * timed as well, fed pre-built EVENT_RECORDs by the FAKE ETW API of
 * tests/unit/etw_fake.c (the fake's ProcessTrace loop is a plain loop over
 * an array; Windows' own delivery cost is not included). That figure
 * covers the whole live path: the copy into the reorder stage, the
 * releases at each buffer, and the final flush, from the start of run() to
 * its return (the fake ends the session itself after the replay).
 *
 * Each figure is the median of ROUNDS rounds (default DM_BENCH_ROUNDS,
 * 301). The live path's figure, "DiskIo records only ... reorder+decode+
 * filter+enqueue", is held to 50 ns per record, and a median of a few
 * rounds swung 2x between runs (36-95 ns over 20 rounds), so a figure
 * needs at least DM_BENCH_MIN_ROUNDS rounds; fewer (bench/run.sh --short
 * runs 1 to check the output) are marked as a check, not a figure. The
 * reorder lines also give the 10th and 90th percentile of the rounds, so
 * the spread is seen beside the median.
 * The events go into a ring of the live size (DM_RING_LIVE_BYTES). Its
 * write position moves on with every round, as a live session's does, so
 * the lines it writes were last touched a lap before. With a ring of twice
 * that size the win11 figure was 34 ns in some runs and 110-125 ns in
 * others, with no page faults in the timed loop (getrusage): the ring's
 * cold lines had or had not left the shared host's cache.
 *
 * Usage: bench_callback [ETL_DIR] [ROUNDS]. Not a test: prints figures.
 * Run it on a quiet machine: tests/bench/run.sh does (its table's row 1).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "core/filter.h"
#include "cli/options.h"
#include "core/ring.h"
#include "decode/nt_kernel.h"
#include "decode/reorder.h"
#include "etl/etl.h"
#include "etl/replay.h"
#include "platform/platform.h"

#ifdef _WIN32
#include "core/sink.h"
#include "etw/etw_session.h"
#include "etw_fake.h"
#endif

#define DM_BENCH_ROUNDS 301
#define DM_BENCH_MIN_ROUNDS 300

static const char *const samples[] = {
    "perfview-net452-x64-win8.etl",
    "filtrace-diskio-win11.etl",
};

struct loaded {
    struct dm_krecord *recs;
    size_t n;
    uint8_t *arena;
    uint64_t perf_freq, start_ts, qpc_freq;
    unsigned *cpu; /* the processor of each record's buffer */
    unsigned n_cpus;
    /* The DiskIo records among recs, in order: the DiskIo-only loop walks
     * these, so the records it skips cost it nothing. */
    const struct dm_krecord **diskio;
    size_t n_diskio;
};

/* Read every record of a trace into memory as dm_krecords. */
static int load(const char *path, struct loaded *out)
{
    struct dm_etl *etl;
    struct dm_etl_record r;
    char err[512];
    size_t cap = 0, alen = 0, acap = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (dm_etl_open(&etl, path, err, sizeof err) < 0) {
        fprintf(stderr, "bench_callback: %s\n", err);
        return -1;
    }
    out->perf_freq = dm_etl_info(etl)->perf_freq;
    out->qpc_freq = dm_etl_info(etl)->qpc_freq;
    out->start_ts = dm_etl_info(etl)->header_timestamp;
    while ((rc = dm_etl_next(etl, &r, err, sizeof err)) == 1) {
        struct dm_krecord *k;

        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            struct dm_krecord *m = realloc(out->recs, ncap * sizeof *m);
            unsigned *c;

            if (m == NULL)
                break;
            out->recs = m;
            c = realloc(out->cpu, ncap * sizeof *c);
            if (c == NULL)
                break;
            out->cpu = c;
            cap = ncap;
        }
        if (alen + r.payload_len > acap) {
            size_t ncap = acap ? acap * 2 : 1u << 20;
            uint8_t *m;

            while (ncap < alen + r.payload_len)
                ncap *= 2;
            m = realloc(out->arena, ncap);
            if (m == NULL)
                break;
            out->arena = m;
            acap = ncap;
        }
        out->cpu[out->n] = r.cpu;
        if (r.cpu >= out->n_cpus)
            out->n_cpus = r.cpu + 1;
        k = &out->recs[out->n++];
        dm_etl_krecord(&r, k);
        k->payload = (const uint8_t *)(uintptr_t)alen; /* fixed up below */
        if (r.payload_len > 0)
            memcpy(out->arena + alen, r.payload, r.payload_len);
        alen += r.payload_len;
    }
    dm_etl_close(etl);
    if (rc < 0)
        fprintf(stderr, "bench_callback: %s (using the records before it)\n", err);
    for (size_t i = 0; i < out->n; i++)
        out->recs[i].payload = out->arena + (uintptr_t)out->recs[i].payload;
    out->diskio = malloc((out->n > 0 ? out->n : 1) * sizeof *out->diskio);
    if (out->diskio == NULL) {
        free(out->recs);
        free(out->cpu);
        free(out->arena);
        return -1;
    }
    for (size_t i = 0; i < out->n; i++)
        if (out->recs[i].kclass == DM_K_DISKIO)
            out->diskio[out->n_diskio++] = &out->recs[i];
    return 0;
}

/*
 * The timed loops, each in a function of its own so that a profiler can
 * count exactly them (valgrind --tool=callgrind
 * --toggle-collect=timed_diskio). Return completions that passed the
 * filter; *timed = records fed.
 */
#if defined(__GNUC__) || defined(__clang__)
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NOINLINE
#endif

static BENCH_NOINLINE uint64_t timed_all(const struct loaded *l,
                                         struct dm_kdecoder *kd,
                                         const struct dm_filter *f,
                                         struct dm_ring *ring, uint64_t *timed)
{
    struct dm_event ev;
    uint64_t n = 0;

    for (size_t i = 0; i < l->n; i++) {
        if (dm_kdecode(kd, &l->recs[i], &ev) == 1 && dm_filter_match(f, &ev)) {
            dm_ring_try_push(ring, &ev);
            n++;
        }
    }
    *timed = l->n;
    return n;
}

static BENCH_NOINLINE uint64_t timed_diskio(const struct loaded *l,
                                            struct dm_kdecoder *kd,
                                            const struct dm_filter *f,
                                            struct dm_ring *ring,
                                            uint64_t *timed)
{
    struct dm_event ev;
    uint64_t n = 0;

    for (size_t i = 0; i < l->n_diskio; i++) {
        if (dm_kdecode(kd, l->diskio[i], &ev) == 1 && dm_filter_match(f, &ev)) {
            dm_ring_try_push(ring, &ev);
            n++;
        }
    }
    *timed = l->n_diskio;
    return n;
}

static void drain(struct dm_ring *ring)
{
    struct dm_event first[256];

    while (dm_ring_peek(ring, first, 256) > 0)
        dm_ring_release(ring);
}

/*
 * Write every byte of the ring once, as a live session's ring is written
 * after its first lap: otherwise the timed runs take the page faults of
 * fresh ring pages (about one per 30 events, each as long as dozens of
 * records' decoding), which a session pays once, not per record.
 */
static void warm_ring(struct dm_ring *ring)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.disk_name = ev.process = ev.file = "";
    for (int lap = 0; lap < 2; lap++) {
        while (dm_ring_try_push(ring, &ev) == 1)
            ;
        drain(ring);
    }
}

/* A decoder as the live source makes one for the default output (text
 * lines, no -d, --top --by partition or --metrics): nothing reads the
 * partition then, so it is not looked up (dm_options_read_partition). */
static struct dm_kdecoder *new_decoder(const struct loaded *l)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(l->perf_freq, l->start_ts, l->qpc_freq);

    if (kd != NULL)
        dm_kdecoder_name_partitions(kd, 0);
    return kd;
}

/*
 * One timed pass: records through decode, filter, ring. only_diskio = 0
 * times every record of the trace through a new decoder, whose tables are
 * cold (their pages are first touched then). only_diskio = 1 measures the
 * steady state of a live session, where a busy disk multiplies the DiskIo
 * records: it first feeds the other records (so the thread, process and
 * file tables are filled) and the DiskIo records once, untimed, so that
 * the tables and the ring are in memory and in cache, and then times the
 * DiskIo records (Init and completion records alike) a second time. Each
 * completion finds its Init again, and the same names, so the work is the
 * first run's. The ring is drained after each run (outside the timing) so
 * pushes never hit a full ring. Returns nanoseconds; *timed = records
 * timed, *emitted = completions produced.
 */
static uint64_t pass(const struct loaded *l, const struct dm_filter *f,
                     struct dm_ring *ring, int only_diskio, uint64_t *timed,
                     uint64_t *emitted)
{
    struct dm_kdecoder *kd = new_decoder(l);
    struct dm_event ev;
    uint64_t t0, t1, n, m = 0;

    if (kd == NULL)
        return 0;
    if (only_diskio) {
        for (size_t i = 0; i < l->n; i++)
            if (l->recs[i].kclass != DM_K_DISKIO)
                dm_kdecode(kd, &l->recs[i], &ev);
        (void)timed_diskio(l, kd, f, ring, &m);
        drain(ring);
    }
    t0 = dm_monotonic_ns();
    if (only_diskio)
        n = timed_diskio(l, kd, f, ring, &m);
    else
        n = timed_all(l, kd, f, ring, &m);
    t1 = dm_monotonic_ns();
    drain(ring);
    dm_kdecoder_destroy(kd);
    *timed = m;
    *emitted = n;
    return t1 - t0;
}

struct reorder_ctx {
    struct dm_kdecoder *kd;
    const struct dm_filter *f;
    struct dm_ring *ring;
    uint64_t emitted;
};

static int decode_released(void *ctx, const struct dm_krecord *rec)
{
    struct reorder_ctx *c = ctx;
    struct dm_event ev;

    if (dm_kdecode(c->kd, rec, &ev) == 1 && dm_filter_match(c->f, &ev)) {
        dm_ring_try_push(c->ring, &ev);
        c->emitted++;
    }
    return 0;
}

/* Every record through reorder (push; release every 64 records, as a
 * buffer's worth), then decode, filter, enqueue. Returns nanoseconds. */
static uint64_t reorder_pass(const struct loaded *l, const struct dm_filter *f,
                             struct dm_ring *ring, uint64_t *emitted)
{
    struct reorder_ctx c;
    struct dm_reorder *ro = dm_reorder_create(
        l->n_cpus, dm_reorder_window_ticks(l->perf_freq, 1), 65536);
    uint64_t t0, t1;

    c.kd = new_decoder(l);
    c.f = f;
    c.ring = ring;
    c.emitted = 0;
    if (ro == NULL || c.kd == NULL) {
        dm_reorder_destroy(ro);
        dm_kdecoder_destroy(c.kd);
        return 0;
    }
    t0 = dm_monotonic_ns();
    for (size_t i = 0; i < l->n; i++) {
        /* As the live source (etw_source.c on_event): a record the decoder
         * ignores is not held (nt_kernel.h, dm_kdecode_ignores). */
        if (!dm_kdecode_ignores(&l->recs[i]))
            dm_reorder_push(ro, l->cpu[i], &l->recs[i], decode_released, &c);
        if (i % 64 == 63)
            dm_reorder_release(ro, l->recs[i].timestamp, decode_released, &c);
    }
    dm_reorder_flush(ro, decode_released, &c);
    t1 = dm_monotonic_ns();
    drain(ring);
    dm_reorder_destroy(ro);
    dm_kdecoder_destroy(c.kd);
    *emitted = c.emitted;
    return t1 - t0;
}

/* The DiskIo records alone through the reorder stage, then decode, filter,
 * enqueue: the live source's whole path per DiskIo record. recs[i] is
 * l->diskio[i] or a copy of it (with its own CPU). */
static BENCH_NOINLINE void timed_reorder_diskio(const struct loaded *l,
                                                const struct dm_krecord *recs,
                                                struct dm_reorder *ro,
                                                struct reorder_ctx *c)
{
    for (size_t i = 0; i < l->n_diskio; i++) {
        dm_reorder_push(ro, l->cpu[l->diskio[i] - l->recs], &recs[i],
                        decode_released, c);
        if (i % 64 == 63)
            dm_reorder_release(ro, recs[i].timestamp, decode_released, c);
    }
    dm_reorder_flush(ro, decode_released, c);
}

/*
 * As pass() with only_diskio, with the reorder stage in front: a warm
 * decoder and a warm stage (the DiskIo records went through both once,
 * untimed), then the DiskIo records again, timed, with their timestamps
 * moved past the trace's end so that the stage holds and orders them as
 * new records (not as late ones). Returns nanoseconds.
 */
static uint64_t reorder_diskio_pass(const struct loaded *l, const struct dm_filter *f,
                                    struct dm_ring *ring, uint64_t *emitted)
{
    struct reorder_ctx c;
    struct dm_reorder *ro = dm_reorder_create(
        l->n_cpus, dm_reorder_window_ticks(l->perf_freq, 1), 65536);
    size_t n = l->n_diskio > 0 ? l->n_diskio : 1;
    struct dm_krecord *first = malloc(n * sizeof *first);
    struct dm_krecord *later = malloc(n * sizeof *later);
    struct dm_event ev;
    uint64_t t0 = 0, t1 = 0, span;

    c.kd = new_decoder(l);
    c.f = f;
    c.ring = ring;
    c.emitted = 0;
    if (ro != NULL && c.kd != NULL && first != NULL && later != NULL && l->n > 0) {
        span = l->recs[l->n - 1].timestamp - l->recs[0].timestamp + 1;
        for (size_t i = 0; i < l->n; i++)
            if (l->recs[i].kclass != DM_K_DISKIO)
                dm_kdecode(c.kd, &l->recs[i], &ev);
        for (size_t i = 0; i < l->n_diskio; i++) {
            first[i] = later[i] = *l->diskio[i];
            later[i].timestamp += span;
        }
        timed_reorder_diskio(l, first, ro, &c);
        drain(ring);
        c.emitted = 0;
        t0 = dm_monotonic_ns();
        timed_reorder_diskio(l, later, ro, &c);
        t1 = dm_monotonic_ns();
        drain(ring);
    }
    free(first);
    free(later);
    dm_reorder_destroy(ro);
    dm_kdecoder_destroy(c.kd);
    *emitted = c.emitted;
    return t1 - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* One line of figures: the median of the rounds' times, per record, and
 * with spread the 10th and 90th percentiles too. run.sh reads these lines
 * (trace, which records, what was timed). */
static void report(const char *trace, int only_diskio, uint64_t records,
                   uint64_t emitted, const char *path_name, uint64_t *times,
                   int rounds, int spread)
{
    uint64_t med;
    double per = records ? 1.0 / (double)records : 0.0;

    qsort(times, (size_t)rounds, sizeof *times, cmp_u64);
    med = times[rounds / 2];
    printf("%s: %s: %" PRIu64 " records, %" PRIu64 " completions; "
           "%s %.1f ns/record",
           trace, only_diskio ? "DiskIo records only" : "all records", records,
           emitted, path_name, (double)med * per);
    if (spread)
        printf(" (p10 %.1f, p90 %.1f, %d rounds)", (double)times[rounds / 10] * per,
               (double)times[rounds - 1 - rounds / 10] * per, rounds);
    printf("\n");
}

#ifdef _WIN32
struct etw_run {
    struct dm_source src;
    struct dm_sink sink;
    volatile int stop;
    uint64_t run_ns;
};

static void etw_thread(void *arg)
{
    struct etw_run *r = arg;
    uint64_t t0 = dm_monotonic_ns();

    r->src.ops->run(&r->src, &r->sink);
    r->run_ns = dm_monotonic_ns() - t0;
}

/* The real ETW source, fed by the fake's pre-built EVENT_RECORDs. Returns
 * the replay loop's nanoseconds, 0 on failure. */
static uint64_t etw_pass(const char *path, const struct dm_options *opt,
                         const struct dm_filter *filter, size_t *records)
{
    struct dm_fake_config cfg;
    struct etw_run r;
    dm_thread *t;
    char err[512];
    uint64_t ns = 0;

    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = path;
    /* run() returns right after the last record (the fake plays another
     * tool stopping the session), so its time is all callback work. */
    cfg.end_after_replay = 1;
    if (dm_fake_install(&cfg, err, sizeof err) < 0) {
        fprintf(stderr, "bench_callback: %s\n", err);
        return 0;
    }
    memset(&r, 0, sizeof r);
    r.src.ops = &dm_etw_source;
    r.sink.ring = dm_ring_create(DM_RING_LIVE_BYTES);
    if (r.sink.ring != NULL)
        warm_ring(r.sink.ring);
    r.sink.stop_flag = &r.stop;
    r.sink.filter = filter;
    if (r.sink.ring != NULL && r.src.ops->open(&r.src, opt) == 0 &&
        dm_thread_start(&t, etw_thread, &r) == 0) {
        dm_thread_join(t);
        ns = r.run_ns;
    }
    r.src.ops->close(&r.src);
    *records = dm_fake_records();
    if (r.sink.ring != NULL)
        dm_ring_destroy(r.sink.ring);
    dm_fake_uninstall();
    return ns;
}
#endif

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("DM_SHARED_ETL");
    int rounds = argc > 2 ? atoi(argv[2]) : DM_BENCH_ROUNDS;
    char a0[] = "diskmon", err[256];
    char *args[] = {a0, NULL};
    struct dm_options opt;
    struct dm_filter filter;
    struct dm_ring *ring = dm_ring_create(DM_RING_LIVE_BYTES);
    uint64_t *times;

    if (dir == NULL || dir[0] == '\0')
        dir = DM_SOURCE_DIR "/../shared/etl";
    if (rounds < 1)
        rounds = 1;
    times = calloc((size_t)rounds, sizeof *times);
    if (ring == NULL || times == NULL ||
        dm_options_parse(&opt, 1, args, err, sizeof err) != 0)
        return 1;
    dm_filter_init(&filter, &opt);
    warm_ring(ring);
    printf("bench_callback: %d rounds per trace, median reported%s\n", rounds,
           rounds < DM_BENCH_MIN_ROUNDS ? " (fewer than 300 rounds: a check of the "
                                          "output, not a figure)"
                                        : "");
    for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++) {
        char path[1024];
        struct loaded l;
        uint64_t emitted = 0;

        snprintf(path, sizeof path, "%s/%s", dir, samples[s]);
        if (load(path, &l) < 0)
            continue;
        for (int only = 0; only <= 1; only++) {
            uint64_t timed = 0;

            for (int i = 0; i < rounds; i++)
                times[i] = pass(&l, &filter, ring, only, &timed, &emitted);
            report(samples[s], only, timed, emitted, "decode+filter+enqueue", times,
                   rounds, 0);
        }
        for (int i = 0; i < rounds; i++)
            times[i] = reorder_pass(&l, &filter, ring, &emitted);
        report(samples[s], 0, l.n, emitted, "reorder+decode+filter+enqueue", times,
               rounds, 1);
        for (int i = 0; i < rounds; i++)
            times[i] = reorder_diskio_pass(&l, &filter, ring, &emitted);
        report(samples[s], 1, l.n_diskio, emitted, "reorder+decode+filter+enqueue",
               times, rounds, 1);
#ifdef _WIN32
        {
            size_t recs = 0;
            uint64_t med;

            for (int i = 0; i < rounds; i++)
                times[i] = etw_pass(path, &opt, &filter, &recs);
            qsort(times, (size_t)rounds, sizeof *times, cmp_u64);
            med = times[rounds / 2];
            if (med > 0 && recs > 0)
                printf("%s: EventRecordCallback + reorder (fake delivery) %.1f ns/record\n",
                       samples[s], (double)med / (double)recs);
        }
#endif
        free(l.recs);
        free(l.diskio);
        free(l.cpu);
        free(l.arena);
    }
    free(times);
    dm_ring_destroy(ring);
    return 0;
}
