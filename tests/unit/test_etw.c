/*
 * test_etw.c - the live ETW source (src/etw) against the FAKE ETW API of
 * etw_fake.c, plus one run against the real advapi32 when under Wine.
 *
 * Built only for Windows; runs under Wine through CTest. The fake replays
 * the sample traces through the real EventRecordCallback, so these tests
 * check the session rules, the callback's decoding and filtering path, the
 * stop paths and the loss accounting. Expected values come from the
 * reference CSVs and README of ../shared/etl and from docs/etw.md, never
 * from diskmon's own output.
 */
#include <fcntl.h>
#include <io.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "cli/options.h"
#include "core/pipeline.h"
#include "core/ring.h"
#include "core/sink.h"
#include "etw/etw_session.h"
#include "etw/etw_source_internal.h"
#include "platform/platform.h"

#include "dmtest.h"
#include "etw_fake.h"

#define WIN8_ETL "perfview-net452-x64-win8.etl"
#define WIN8_CSV "reference/perfview-net452-x64-win8.diskio.csv"
#define WIN11_ETL "filtrace-diskio-win11.etl"

/* Values from docs/etw.md §1 (evntrace.h, evntcons.h). */
#define F_PROCESS 0x1u
#define F_THREAD 0x2u
#define F_DISK_IO 0x100u
#define F_DISK_FILE_IO 0x200u
#define F_DISK_IO_INIT 0x400u
#define M_REAL_TIME 0x100u
#define M_SYSTEM_LOGGER 0x02000000u
#define M_NO_PER_PROCESSOR 0x10000000u
#define TSI_ENABLE_FLAGS 4u /* TraceSystemTraceEnableFlagsInfo [MS-tic] */
#define PT_REAL_TIME 0x100u
#define PT_RAW_TIMESTAMP 0x1000u
#define PT_EVENT_RECORD 0x10000000u
#define CTL_QUERY 0u
#define CTL_STOP 1u
#define CTL_UPDATE 2u
#define CTL_FLUSH 3u
#define M_MS_FLUSH_TIMER 0x10u /* EVENT_TRACE_USE_MS_FLUSH_TIMER, ntwmi.h */

static const uint8_t system_trace_guid_bytes[16] = {
    /* {9e814aad-3204-11d2-9a82-006008a86939}, little-endian Data1..3 */
    0xad, 0x4a, 0x81, 0x9e, 0x04, 0x32, 0xd2, 0x11,
    0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39};

static void sample_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dmt_shared_etl_dir(), name);
}

static void default_options(struct dm_options *opt, const char *extra)
{
    char a0[] = "diskmon", a1[32] = "";
    char *argv[3] = {a0, a1, NULL};
    char err[256];

    if (extra != NULL)
        snprintf(a1, sizeof a1, "%s", extra);
    dm_options_parse(opt, extra != NULL ? 2 : 1, argv, err, sizeof err);
}

/* A file in %TEMP% for captured text (tmpfile() would use the drive root,
 * which a non-admin cannot write on Windows). */
static FILE *temp_file(const char *tag, char *path, size_t len)
{
    char dir[MAX_PATH];
    DWORD n = GetTempPathA((DWORD)sizeof dir, dir);

    snprintf(path, len, "%sdm_test_etw_%s_%lu.txt", n > 0 ? dir : ".\\", tag,
             (unsigned long)GetCurrentProcessId());
    return fopen(path, "w+b");
}

static size_t read_all(FILE *f, char *buf, size_t len)
{
    size_t n;

    fflush(f);
    rewind(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    return n;
}

/* --- driving the source directly ---------------------------------------- */

struct live {
    struct dm_source src;
    struct dm_sink sink;
    volatile int stop;
    int run_rc;
    int open_rc;
    dm_thread *thr;
};

static void live_thread(void *arg)
{
    struct live *lv = arg;

    lv->run_rc = lv->src.ops->run(&lv->src, &lv->sink);
}

static int live_open(struct live *lv, const struct dm_options *opt)
{
    memset(lv, 0, sizeof *lv);
    lv->src.ops = &dm_etw_source;
    lv->sink.ring = dm_ring_create((1u << 14) * DM_RING_RECORD_MAX);
    lv->sink.stop_flag = &lv->stop;
    lv->open_rc = lv->src.ops->open(&lv->src, opt);
    return lv->open_rc;
}

static int live_start(struct live *lv)
{
    return dm_thread_start(&lv->thr, live_thread, lv);
}

/* Stop (as main does on Ctrl+C), wait for run() to return, close. Returns 0
 * or -1 if run() did not return in time. */
static int live_finish(struct live *lv, int call_stop)
{
    int rc = 0;

    if (call_stop) {
        dm_atomic_store_int(&lv->stop, DM_SINK_STOP_ASKED);
        lv->src.ops->stop(&lv->src);
    }
    if (lv->thr != NULL && dm_thread_join_timeout(lv->thr, 15000) != 0)
        rc = -1;
    if (rc == 0)
        lv->src.ops->close(&lv->src);
    return rc;
}

static void live_free(struct live *lv)
{
    if (lv->sink.ring != NULL)
        dm_ring_destroy(lv->sink.ring);
    lv->sink.ring = NULL;
}

/* Drain the ring into a malloc'd array. */
static struct dm_event *drain(struct dm_ring *ring, size_t *count)
{
    size_t cap = 2048, n = 0;
    struct dm_event *all = malloc(cap * sizeof *all);

    while (all != NULL) {
        struct dm_event *m;

        n += dmt_ring_take(ring, all + n, cap - n);
        if (n < cap)
            break; /* the ring is empty */
        m = realloc(all, (cap *= 2) * sizeof *all);
        if (m == NULL) {
            free(all);
            return NULL;
        }
        all = m;
    }
    *count = n;
    return all;
}

/* --- the reference CSV ---------------------------------------------------- */

struct io_key {
    uint64_t irp;
    uint64_t byte_offset;
    uint64_t duration_ns;
    uint32_t transfer_size;
    uint32_t request;
};

static int key_cmp(const void *pa, const void *pb)
{
    const struct io_key *a = pa, *b = pb;

    if (a->irp != b->irp)
        return a->irp < b->irp ? -1 : 1;
    if (a->request != b->request)
        return a->request < b->request ? -1 : 1;
    if (a->byte_offset != b->byte_offset)
        return a->byte_offset < b->byte_offset ? -1 : 1;
    if (a->transfer_size != b->transfer_size)
        return a->transfer_size < b->transfer_size ? -1 : 1;
    if (a->duration_ns != b->duration_ns)
        return a->duration_ns < b->duration_ns ? -1 : 1;
    return 0;
}

static uint64_t qpc_frequency(void)
{
    LARGE_INTEGER f;

    QueryPerformanceFrequency(&f);
    return (uint64_t)f.QuadPart;
}

/* Completions (opcodes 10, 11, 14) of the reference CSV as keys. Durations:
 * HighResResponseTime is in QPC ticks of the machine that traced
 * (docs/etw.md §3); the live path reads them with this machine's
 * QueryPerformanceFrequency, so that is what the expectation uses. */
static struct io_key *csv_keys(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    char line[512];
    size_t cap = 2048, n = 0;
    struct io_key *keys = malloc(cap * sizeof *keys);
    uint64_t freq = qpc_frequency();

    if (f == NULL || keys == NULL) {
        if (f != NULL)
            fclose(f);
        free(keys);
        return NULL;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        char *field[18];
        int nf = 0;
        char *p = line;
        unsigned opcode;
        uint64_t hrrt;

        while (nf < 18) {
            field[nf++] = p;
            p = strchr(p, ',');
            if (p == NULL)
                break;
            *p++ = '\0';
        }
        if (nf < 18 || line[0] < '0' || line[0] > '9')
            continue;
        opcode = (unsigned)strtoul(field[4], NULL, 10);
        if (opcode != 10 && opcode != 11 && opcode != 14)
            continue;
        if (n == cap) {
            struct io_key *m = realloc(keys, (cap *= 2) * sizeof *keys);

            if (m == NULL)
                break;
            keys = m;
        }
        memset(&keys[n], 0, sizeof keys[n]);
        keys[n].request = opcode == 10 ? DM_REQ_READ
                          : opcode == 11 ? DM_REQ_WRITE
                                         : DM_REQ_FLUSH;
        keys[n].irp = strtoull(field[14], NULL, 16);
        if (opcode != 14) {
            keys[n].byte_offset = strtoull(field[12], NULL, 10);
            keys[n].transfer_size = (uint32_t)strtoul(field[10], NULL, 10);
        }
        hrrt = strtoull(field[15], NULL, 10);
        keys[n].duration_ns = hrrt / freq * 1000000000u + hrrt % freq * 1000000000u / freq;
        n++;
    }
    fclose(f);
    *count = n;
    return keys;
}

/* --- tests --------------------------------------------------------------- */

static void install_or_fail(const struct dm_fake_config *cfg, int *ok)
{
    char err[256];

    *ok = dm_fake_install(cfg, err, sizeof err) == 0;
    if (!*ok)
        dmt_fail_at(__FILE__, __LINE__, "fake install: %s", err);
}

/* A whole sample through the fake as a live capture: install, open, run
 * until the fake has delivered every buffer, stop, and count the requests
 * that reached the ring. *ran is 1 when it got that far (lv->src stays
 * readable: losses, malformed). */
static void capture_counts(const struct dm_fake_config *cfg, struct live *lv,
                           unsigned counts[DM_REQ_COUNT], int *ran)
{
    struct dm_options opt;
    struct dm_event *evs;
    size_t n = 0;
    int ok;

    *ran = 0;
    install_or_fail(cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(lv), 0);
    DM_ASSERT_EQ_INT(dm_fake_wait_replayed(30000), 0);
    DM_ASSERT_EQ_INT(live_finish(lv, 1), 0);
    evs = drain(lv->sink.ring, &n);
    live_free(lv);
    dm_fake_uninstall();
    DM_ASSERT(evs != NULL);
    for (size_t i = 0; i < n; i++)
        if (evs[i].request < DM_REQ_COUNT)
            counts[evs[i].request]++;
    free(evs);
    *ran = 1;
}

DM_TEST(start_and_replay_win8_sample)
{
    struct dm_fake_config cfg;
    struct dm_fake_call calls[64];
    struct dm_options opt;
    struct live lv;
    char etl[1024], csv[1024];
    struct dm_event *evs;
    struct io_key *want, *got;
    size_t n_ev = 0, n_want = 0, n_calls;
    unsigned counts[DM_REQ_COUNT] = {0};
    int ok;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    DM_REQUIRE(dmt_shared_file_present(WIN8_CSV),
               "the reference decoding " WIN8_CSV " is not in the traces folder");
    sample_path(etl, sizeof etl, WIN8_ETL);
    sample_path(csv, sizeof csv, WIN8_CSV);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);

    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT(lv.src.is_live);
    DM_ASSERT(lv.src.start_wall_ns > 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(dm_fake_wait_replayed(30000), 0);
    DM_ASSERT(dm_fake_in_process()); /* a live session runs until stopped */
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    DM_ASSERT_EQ_INT(lv.run_rc, 0);
    DM_ASSERT(!dm_fake_kernel_running());
    DM_ASSERT_EQ_U64(lv.src.lost_events, 0);

    /* What the session was started with (docs/etw.md §1). */
    n_calls = dm_fake_calls(calls, 64);
    DM_ASSERT(n_calls >= 4);
    DM_ASSERT_EQ_INT(calls[0].kind, DM_FAKE_START);
    DM_ASSERT_STR_EQ(calls[0].name, "NT Kernel Logger");
    DM_ASSERT_MEM_EQ(&calls[0].guid, system_trace_guid_bytes, 16);
    DM_ASSERT(calls[0].log_file_mode & M_REAL_TIME);
    DM_ASSERT(!(calls[0].log_file_mode & M_SYSTEM_LOGGER));
    DM_ASSERT_EQ_INT(calls[0].enable_flags & (F_PROCESS | F_THREAD | F_DISK_IO | F_DISK_FILE_IO),
                     F_PROCESS | F_THREAD | F_DISK_IO | F_DISK_FILE_IO);
    DM_ASSERT_EQ_INT(calls[0].client_context, 1); /* QPC */
    /* Per-processor buffers: no EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING
     * (the logging-mode page, docs/etw.md §7). */
    DM_ASSERT(!(calls[0].log_file_mode & M_NO_PER_PROCESSOR));
    /* What Windows set up is read back at once, by handle. */
    DM_ASSERT_EQ_INT(calls[1].kind, DM_FAKE_CONTROL);
    DM_ASSERT_EQ_INT(calls[1].code, CTL_QUERY);
    DM_ASSERT(!calls[1].by_name);
    DM_ASSERT_EQ_INT(calls[2].kind, DM_FAKE_OPEN);
    DM_ASSERT_EQ_U64(calls[2].log_file_mode, PT_REAL_TIME | PT_EVENT_RECORD | PT_RAW_TIMESTAMP);
    /* After OpenTrace, the file rundown toggle: an all-zero
     * PERFINFO_GROUPMASK, then the real flags in its first ULONG (fibratus
     * internal/etw/trace.go); Windows 8+ only (TraceSetInformation page). */
    if (dm_etw_is_win8_or_later()) {
        DM_ASSERT_EQ_INT(calls[3].kind, DM_FAKE_SET_INFO);
        DM_ASSERT_EQ_INT(calls[3].code, TSI_ENABLE_FLAGS);
        DM_ASSERT_EQ_INT(calls[3].enable_flags, 0);
        DM_ASSERT_EQ_INT(calls[3].rc, 0);
        DM_ASSERT_EQ_INT(calls[4].kind, DM_FAKE_SET_INFO);
        DM_ASSERT_EQ_INT(calls[4].enable_flags, calls[0].enable_flags);
        DM_ASSERT(dm_fake_rundown_triggered());
        DM_ASSERT_EQ_INT(dm_fake_rundown_lost(), 0);
    }
    /* The fake did deliver buffers out of global time order. */
    DM_ASSERT(dm_fake_out_of_order_buffers() > 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 1);
    /* QUERY: right after the start, and before the STOP (is it ours?). */
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_QUERY), 2);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_FLUSH), 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CLOSE, NULL, 0), 1);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_PROCESS, NULL, 0), 1);

    evs = drain(lv.sink.ring, &n_ev);
    want = csv_keys(csv, &n_want);
    got = calloc(n_ev + 1, sizeof *got);
    live_free(&lv);
    dm_fake_uninstall();
    if (evs == NULL || want == NULL || got == NULL) {
        free(evs);
        free(want);
        free(got);
        dmt_fail_at(__FILE__, __LINE__, "out of memory or reference CSV missing");
        return;
    }
    for (size_t i = 0; i < n_ev; i++) {
        if (evs[i].request < DM_REQ_COUNT)
            counts[evs[i].request]++;
        got[i].irp = evs[i].irp;
        got[i].request = evs[i].request;
        got[i].duration_ns = evs[i].duration_ns;
        if (evs[i].request != DM_REQ_FLUSH) {
            got[i].byte_offset = evs[i].byte_offset;
            got[i].transfer_size = evs[i].transfer_size;
        }
        ok = i == 0 || evs[i].time_ns >= evs[i - 1].time_ns;
        if (!ok)
            break;
    }
    free(evs);
    /* README.md of ../shared/etl: 1208 reads, 21 writes, 2 flushes. */
    if (ok && n_ev == n_want) {
        qsort(want, n_want, sizeof *want, key_cmp);
        qsort(got, n_ev, sizeof *got, key_cmp);
        ok = memcmp(want, got, n_ev * sizeof *got) == 0;
        if (!ok)
            for (size_t i = 0; i < n_ev; i++)
                if (key_cmp(&want[i], &got[i]) != 0) {
                    fprintf(stderr, "    first difference: irp %llx want dur %llu got %llu\n",
                            (unsigned long long)want[i].irp,
                            (unsigned long long)want[i].duration_ns,
                            (unsigned long long)got[i].duration_ns);
                    break;
                }
    }
    free(want);
    free(got);
    DM_ASSERT_EQ_INT(counts[DM_REQ_READ], 1208);
    DM_ASSERT_EQ_INT(counts[DM_REQ_WRITE], 21);
    DM_ASSERT_EQ_INT(counts[DM_REQ_FLUSH], 2);
    DM_ASSERT_EQ_U64(n_ev, n_want);
    DM_ASSERT(ok); /* time order, and every (irp, offset, size, duration) */
}

DM_TEST(start_and_replay_win11_sample)
{
    struct dm_fake_config cfg;
    struct live lv;
    char etl[1024];
    unsigned counts[DM_REQ_COUNT] = {0};
    int ok;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    sample_path(etl, sizeof etl, WIN11_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    capture_counts(&cfg, &lv, counts, &ok);
    if (!ok)
        return;
    /* README.md of ../shared/etl: 2 reads, 117 writes, 0 flushes. */
    DM_ASSERT_EQ_INT(counts[DM_REQ_READ], 2);
    DM_ASSERT_EQ_INT(counts[DM_REQ_WRITE], 117);
    DM_ASSERT_EQ_INT(counts[DM_REQ_FLUSH], 0);
}

DM_TEST(filter_applies_in_callback)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct dm_filter filter;
    struct live lv;
    char etl[1024];
    struct dm_event *evs;
    size_t n = 0, writes = 0;
    int ok;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    {
        char a0[] = "diskmon", a1[] = "--op", a2[] = "write";
        char *argv[] = {a0, a1, a2, NULL};
        char err[128];

        DM_ASSERT_EQ_INT(dm_options_parse(&opt, 3, argv, err, sizeof err), 0);
    }
    dm_filter_init(&filter, &opt);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    lv.sink.filter = &filter;
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(dm_fake_wait_replayed(30000), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    evs = drain(lv.sink.ring, &n);
    live_free(&lv);
    dm_fake_uninstall();
    DM_ASSERT(evs != NULL);
    for (size_t i = 0; i < n; i++)
        writes += evs[i].request == DM_REQ_WRITE;
    free(evs);
    DM_ASSERT_EQ_U64(n, 21); /* README: 21 writes */
    DM_ASSERT_EQ_U64(writes, 21);
    DM_ASSERT_EQ_U64(lv.sink.filtered_out, 1208 + 2);
}

DM_TEST(already_exists_falls_back_to_private_logger)
{
    struct dm_fake_config cfg;
    struct dm_fake_call calls[16];
    struct dm_etw_session s;
    char msg[512];
    size_t n;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 0, 1 /* Windows 8+ */, msg, sizeof msg);
    n = dm_fake_calls(calls, 16);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_INT(s.logger, DM_ETW_PRIVATE_LOGGER);
    DM_ASSERT(n >= 3);
    DM_ASSERT_EQ_INT(calls[0].kind, DM_FAKE_START);
    DM_ASSERT_STR_EQ(calls[0].name, "NT Kernel Logger");
    DM_ASSERT_EQ_INT(calls[0].rc, 183);
    /* Whose is it: a QUERY, which changes nothing. */
    DM_ASSERT_EQ_INT(calls[1].kind, DM_FAKE_CONTROL);
    DM_ASSERT_EQ_INT(calls[1].code, CTL_QUERY);
    DM_ASSERT_EQ_INT(calls[2].kind, DM_FAKE_START);
    DM_ASSERT_STR_EQ(calls[2].name, "diskmon");
    DM_ASSERT_EQ_INT(calls[2].rc, 0);
    DM_ASSERT(calls[2].log_file_mode & M_SYSTEM_LOGGER);
    DM_ASSERT(memcmp(&calls[2].guid, system_trace_guid_bytes, 16) != 0);
    DM_ASSERT(strstr(s.notice, "private") != NULL);
    DM_ASSERT(strstr(s.notice, "another program") != NULL); /* not ours */
    dm_etw_session_free(&s);
    /* The other program's session was left alone; ours was stopped. */
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "diskmon", CTL_STOP), 1);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT(!dm_fake_private_running());
    dm_fake_uninstall();
}

DM_TEST(both_sessions_exist_names_cleanup)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.private_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 0, 1, msg, sizeof msg);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(rc, DM_EEXISTS);
    DM_ASSERT(strstr(msg, "--cleanup") != NULL);
    DM_ASSERT(strstr(msg, "--force") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_STOP), 0);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT(dm_fake_private_running());
    dm_fake_uninstall();
}

/* The same fallback through the source: the consumer opens "diskmon" and
 * the note reaches the source's notes, which dm_run prints on stderr.
 * open() asks the OS for its version, so this needs a Windows 8+ answer (Wine 8's default prefix
 * says Windows 7; tests/scripts/windows.sh sets win10). */
DM_TEST(already_exists_notice_on_stderr)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    char text[1024];
    int ok;

    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8 (no private "
                "system loggers); covered by already_exists_falls_back_to_private_logger");
    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    ok = live_open(&lv, &opt);
    snprintf(text, sizeof text, "%s", lv.src.notes.text);
    DM_ASSERT_EQ_INT(ok, 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_OPEN, "diskmon", 0), 1);
    DM_ASSERT(strstr(text, "private") != NULL);
    DM_ASSERT(strstr(text, "NT Kernel Logger") != NULL);
    /* Nothing is said to be missing, and no helper is started up front:
     * the rundown is asked for in run() (private_session_names_*). */
    DM_ASSERT(strstr(text, "may show no name") == NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "diskmon rundown", 0), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    live_free(&lv);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "diskmon", CTL_STOP), 1);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT(!dm_fake_private_running());
    dm_fake_uninstall();
}

DM_TEST(win7_source_names_force)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok, rc;

    if (dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports Windows 8 or later; covered by "
                "win7_already_exists_names_force");
    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    rc = live_open(&lv, &opt);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    DM_ASSERT_EQ_INT(rc, DM_EEXISTS);
    DM_ASSERT(strstr(lv.src.errmsg, "--force") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_STOP), 0);
    DM_ASSERT(dm_fake_kernel_running());
    dm_fake_uninstall();
}

DM_TEST(force_stops_kernel_logger_then_starts)
{
    struct dm_fake_config cfg;
    struct dm_fake_call calls[16];
    struct dm_options opt;
    struct live lv;
    char text[1024];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, "--force");
    DM_ASSERT(opt.force);
    rc = live_open(&lv, &opt);
    snprintf(text, sizeof text, "%s", lv.src.notes.text);
    dm_fake_calls(calls, 16);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT(strstr(text, "--force") != NULL); /* the user is told */
    DM_ASSERT_EQ_INT(calls[0].kind, DM_FAKE_CONTROL);
    DM_ASSERT_STR_EQ(calls[0].name, "NT Kernel Logger");
    DM_ASSERT_EQ_INT(calls[0].code, CTL_STOP);
    DM_ASSERT_EQ_INT(calls[1].kind, DM_FAKE_START);
    DM_ASSERT_STR_EQ(calls[1].name, "NT Kernel Logger");
    DM_ASSERT_EQ_INT(calls[1].rc, 0);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    live_free(&lv);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

DM_TEST(win7_already_exists_names_force)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 0, 0 /* Windows 7 */, msg, sizeof msg);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(rc, DM_EEXISTS);
    DM_ASSERT(strstr(msg, "--force") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "diskmon", 0), 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_STOP), 0);
    DM_ASSERT(dm_fake_kernel_running());
    dm_fake_uninstall();
}

DM_TEST(init_events_only_before_win8)
{
    struct dm_fake_config cfg;
    struct dm_fake_call calls[8];
    struct dm_etw_session s;
    char msg[512];
    int ok;

    memset(&cfg, 0, sizeof cfg);
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 0, msg, sizeof msg), 0);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 1, msg, sizeof msg), 0);
    dm_etw_session_free(&s);
    DM_ASSERT(dm_fake_calls(calls, 8) >= 2);
    dm_fake_uninstall();
    /* DiskIo v2 (Windows 7) completions lack IssuingThreadId: Init events
     * attribute them (docs/etw.md §3). */
    DM_ASSERT(calls[0].enable_flags & F_DISK_IO_INIT);
    DM_ASSERT(calls[0].kind == DM_FAKE_START);
    for (size_t i = 1; i < 8; i++)
        if (calls[i].kind == DM_FAKE_START) {
            DM_ASSERT(!(calls[i].enable_flags & F_DISK_IO_INIT));
            return;
        }
    dmt_fail_at(__FILE__, __LINE__, "second StartTrace not found");
}

DM_TEST(access_denied_says_elevate)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.start_error = ERROR_ACCESS_DENIED;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    rc = live_open(&lv, &opt);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    DM_ASSERT_EQ_INT(rc, DM_EACCESS);
    DM_ASSERT(strstr(lv.src.errmsg, "elevated") != NULL);
    DM_ASSERT(strstr(lv.src.errmsg, "error 5") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_OPEN, NULL, 0), 0);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

DM_TEST(out_of_sessions_says_logman)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.start_error = 1450; /* ERROR_NO_SYSTEM_RESOURCES */
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    rc = live_open(&lv, &opt);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    dm_fake_uninstall();
    DM_ASSERT(rc < 0);
    DM_ASSERT(strstr(lv.src.errmsg, "error 1450") != NULL);
    DM_ASSERT(strstr(lv.src.errmsg, "logman") != NULL);
}

DM_TEST(open_trace_failure_stops_session)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok, rc, stops_at_open;

    memset(&cfg, 0, sizeof cfg);
    cfg.open_error = ERROR_INVALID_PARAMETER;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    rc = live_open(&lv, &opt);
    stops_at_open = dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    DM_ASSERT(rc < 0);
    DM_ASSERT(strstr(lv.src.errmsg, "OpenTrace") != NULL);
    DM_ASSERT(strstr(lv.src.errmsg, "error 87") != NULL);
    DM_ASSERT_EQ_INT(stops_at_open, 1);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 1);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

DM_TEST(process_trace_failure_stops_session)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    cfg.process_error = ERROR_NOACCESS; /* 998, any failure will do */
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 0), 0); /* run() ends on its own */
    live_free(&lv);
    DM_ASSERT(lv.run_rc < 0);
    DM_ASSERT(strstr(lv.src.errmsg, "ProcessTrace") != NULL);
    DM_ASSERT(strstr(lv.src.errmsg, "error 998") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 1);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

/* Item 2: ProcessTrace returns on its own because another program stopped
 * the session and started its own under the same name. diskmon must say
 * so, exit with an error and never QUERY or STOP by that name again: it
 * would act on the other program's session [MS-ctl]. Losses then come from
 * the in-stream RT_LostEvent records only. */
DM_TEST(session_stopped_from_outside_is_left_alone)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    cfg.end_after_replay = 1;
    cfg.outside_restart = 1;
    cfg.events_lost = 50;      /* what a QUERY of *their* session would say */
    cfg.rt_lost[0] = 2;        /* in-stream: ours */
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 0), 0); /* run() ends on its own */
    dm_atomic_store_int(&lv.stop, DM_SINK_STOP_ASKED); /* main's stop, later: */
    lv.src.ops->stop(&lv.src);                /* harmless */
    live_free(&lv);
    DM_ASSERT(lv.run_rc < 0);
    DM_ASSERT(strstr(lv.src.errmsg, "stopped from outside") != NULL);
    DM_ASSERT(strstr(lv.src.errmsg, "NT Kernel Logger") != NULL);
    /* Only the QUERY right after the start, while it was ours. */
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, ULONG_MAX), 1);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_QUERY), 1);
    DM_ASSERT_EQ_INT(dm_fake_touched_other(), 0);
    DM_ASSERT(dm_fake_kernel_running()); /* the other program's session lives */
    DM_ASSERT_EQ_U64(lv.src.lost_events, 2);
    dm_fake_uninstall();
}

DM_TEST(stop_before_run_and_twice)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    dm_atomic_store_int(&lv.stop, DM_SINK_STOP_ASKED);
    lv.src.ops->stop(&lv.src);
    lv.src.ops->stop(&lv.src);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    live_free(&lv);
    DM_ASSERT_EQ_INT(lv.run_rc, 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_STOP), 1);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CLOSE, NULL, 0), 1);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

/* Losses: each kind counts the larger of the session counter and the
 * in-stream RT_LostEvent records (they report the same losses). */
static uint64_t lost_with(ULONG events_lost, ULONG buffers_lost,
                          unsigned ev32, unsigned buf33, unsigned file34, int *ok,
                          uint64_t *lost_buffers)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    uint64_t lost = UINT64_MAX;

    memset(&cfg, 0, sizeof cfg);
    cfg.events_lost = events_lost;
    cfg.rt_buffers_lost = buffers_lost;
    cfg.rt_lost[0] = ev32;
    cfg.rt_lost[1] = buf33;
    cfg.rt_lost[2] = file34;
    install_or_fail(&cfg, ok);
    if (!*ok)
        return lost;
    default_options(&opt, NULL);
    if (live_open(&lv, &opt) == 0 && live_start(&lv) == 0 &&
        dm_fake_wait_replayed(10000) == 0 && live_finish(&lv, 1) == 0) {
        lost = lv.src.lost_events;
        *lost_buffers = lv.src.lost_buffers;
    }
    live_free(&lv);
    dm_fake_uninstall();
    return lost;
}

DM_TEST(loss_accounting)
{
    uint64_t buffers = 0;
    int ok;

    /* Session counters larger: 5 events, plus 1 lost file; 3 buffers are
     * buffers, not events (RealTimeBuffersLost, docs/etw.md §8). */
    DM_ASSERT_EQ_U64(lost_with(5, 3, 2, 1, 1, &ok, &buffers), 5 + 1);
    DM_ASSERT_EQ_U64(buffers, 3);
    /* In-stream records larger: 7 events, 4 buffers. */
    DM_ASSERT_EQ_U64(lost_with(5, 1, 7, 4, 0, &ok, &buffers), 7);
    DM_ASSERT_EQ_U64(buffers, 4);
    /* Nothing lost. */
    DM_ASSERT_EQ_U64(lost_with(0, 0, 0, 0, 0, &ok, &buffers), 0);
    DM_ASSERT_EQ_U64(buffers, 0);
}

DM_TEST(cleanup_stops_leftover_session)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.private_running = 1;
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, "--cleanup");
    DM_ASSERT(opt.cleanup);
    rc = live_open(&lv, &opt);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    DM_ASSERT_EQ_INT(rc, DM_ESTOPPED);
    DM_ASSERT(strstr(lv.src.errmsg, "stopped") != NULL);
    DM_ASSERT(!dm_fake_private_running());
    DM_ASSERT(dm_fake_kernel_running()); /* not ours to stop */
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, NULL, 0), 0);
    /* Nothing left: says so, still not an error. */
    rc = live_open(&lv, &opt);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    DM_ASSERT_EQ_INT(rc, DM_ESTOPPED);
    DM_ASSERT(strstr(lv.src.errmsg, "no trace session") != NULL);
    dm_fake_uninstall();
}

/* --- whole runs through dm_run -------------------------------------------- */

struct whole_run {
    struct dm_options opt;
    FILE *out, *errf;
    volatile int done;
    int rc;
};

static void whole_run_thread(void *arg)
{
    struct whole_run *w = arg;

    w->rc = dm_run(&w->opt, &dm_etw_source, w->out, w->errf);
    dm_atomic_store_int(&w->done, 1);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

DM_TEST(ctrl_c_stops_session)
{
    struct dm_fake_config cfg;
    struct whole_run w;
    dm_thread *thr;
    char etl[1024], out_path[MAX_PATH + 64], err_path[MAX_PATH + 64];
    static char text[1 << 20];
    int ok, joined;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    memset(&w, 0, sizeof w);
    default_options(&w.opt, "--no-header");
    w.out = temp_file("out", out_path, sizeof out_path);
    w.errf = temp_file("err", err_path, sizeof err_path);
    DM_ASSERT(w.out != NULL && w.errf != NULL);
    dm_interrupt_clear();
    DM_ASSERT_EQ_INT(dm_thread_start(&thr, whole_run_thread, &w), 0);
    ok = dm_fake_wait_replayed(30000) == 0;
    dm_sleep_ms(300); /* let the printer catch up: nothing may be lost */
    dm_interrupt_raise();
    joined = dm_thread_join_timeout(thr, 15000) == 0;
    dm_interrupt_clear();
    DM_ASSERT(ok);
    DM_ASSERT(joined);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 1);
    DM_ASSERT(!dm_fake_in_process());
    DM_ASSERT(!dm_fake_kernel_running());
    DM_ASSERT_EQ_INT(w.rc, DM_EXIT_OK);
    read_all(w.out, text, sizeof text);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    dm_fake_uninstall();
    DM_ASSERT_EQ_U64(count_lines(text), 1208 + 21 + 2); /* README counts */
}

DM_TEST(blocked_printer_still_stops_session)
{
    struct dm_fake_config cfg;
    struct whole_run w;
    dm_thread *thr;
    char etl[1024], err_path[MAX_PATH + 64];
    int fds[2], ok, joined, stopped = 0;
    uint64_t raised;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    /* A 4 KB pipe nobody reads: the 1231 lines fill it and the printer
     * blocks in fwrite. */
    DM_ASSERT_EQ_INT(_pipe(fds, 4096, _O_BINARY), 0);
    memset(&w, 0, sizeof w);
    default_options(&w.opt, NULL);
    w.out = _fdopen(fds[1], "wb");
    w.errf = temp_file("blocked", err_path, sizeof err_path);
    DM_ASSERT(w.out != NULL && w.errf != NULL);
    dm_interrupt_clear();
    DM_ASSERT_EQ_INT(dm_thread_start(&thr, whole_run_thread, &w), 0);
    ok = dm_fake_wait_replayed(30000) == 0;
    dm_sleep_ms(300);
    raised = dm_monotonic_ns();
    dm_interrupt_raise();
    for (int i = 0; i < 300 && !stopped; i++) {
        stopped = dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP) > 0;
        if (!stopped)
            dm_sleep_ms(10);
    }
    joined = dm_thread_join_timeout(thr, 15000) == 0;
    dm_interrupt_clear();
    /* Unblock the printer left behind; it ends on the write error. The
     * FILE stays open: that thread may still hold it. */
    _close(fds[0]);
    DM_ASSERT(ok);
    DM_ASSERT(stopped);
    DM_ASSERT(dm_fake_first_ns(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP) - raised <
              3000000000u);
    DM_ASSERT(joined); /* dm_run gave up on the printer and returned */
    DM_ASSERT(!dm_fake_kernel_running());
    fclose(w.errf);
    remove(err_path);
    dm_fake_uninstall();
}

/* --- file names, ordering, --force, ends, pointer size ------------------- */

/* The replay decoding of a sample: the oracle for process and file names
 * (replay is checked against PerfView's baseline by test_replay and
 * cli.sh). */
static struct dm_event *replay_events(const char *path, size_t *n)
{
    struct dm_options opt;
    struct dm_source src;
    struct dm_sink sink;
    struct dm_event *evs = NULL;
    int rc;

    memset(&opt, 0, sizeof opt);
    opt.replay_path = path;
    memset(&src, 0, sizeof src);
    src.ops = &dm_replay_source;
    memset(&sink, 0, sizeof sink);
    sink.ring = dm_ring_create((1u << 14) * DM_RING_RECORD_MAX);
    sink.wait_when_full = 1;
    *n = 0;
    if (sink.ring == NULL)
        return NULL;
    rc = src.ops->open(&src, &opt);
    if (rc == 0)
        rc = src.ops->run(&src, &sink);
    src.ops->close(&src);
    dm_ring_close(sink.ring);
    if (rc == 0)
        evs = drain(sink.ring, n);
    dm_ring_destroy(sink.ring);
    return evs;
}

/* Order for matching one I/O across the two decodings: what the kernel
 * recorded about it, then its time (both time bases are monotonic). */
static int io_cmp(const void *pa, const void *pb)
{
    const struct dm_event *a = pa, *b = pb;

    if (a->irp != b->irp)
        return a->irp < b->irp ? -1 : 1;
    if (a->request != b->request)
        return a->request < b->request ? -1 : 1;
    if (a->byte_offset != b->byte_offset)
        return a->byte_offset < b->byte_offset ? -1 : 1;
    if (a->transfer_size != b->transfer_size)
        return a->transfer_size < b->transfer_size ? -1 : 1;
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns ? -1 : 1;
    return 0;
}

/* The path inside its volume: "C:\dir\f" and "\Device\HarddiskVolume2\dir\f"
 * both give "\dir\f". The live path maps volumes to drive letters with
 * this machine's QueryDosDevice (under Wine: Z:), replay with the trace's
 * own VolumeMapping records, so only the part inside the volume can agree. */
static const char *path_on_volume(const char *path)
{
    static const char device[] = "\\Device\\";

    if (path[0] != '\0' && path[1] == ':')
        return path + 2;
    if (strncmp(path, device, sizeof device - 1) == 0) {
        const char *p = strchr(path + sizeof device - 1, '\\');

        return p != NULL ? p : path;
    }
    return path;
}

struct names_result {
    size_t ios;          /* Read/Write I/Os */
    size_t named;        /* ... whose file the live path named */
    size_t named_same;   /* ... named as replay names it */
    size_t process_same; /* I/Os with replay's pid and process name */
    size_t total;        /* all events, and replay's */
    size_t replay_total;
    int in_order;        /* live lines in time order */
    int helper_started, helper_left;
    uint64_t helper_delivered;
    int rundown_triggered, rundown_lost;
    struct dm_fake_call calls[128]; /* the calls of the run */
    size_t n_calls;
};

/* Run the live source over the sample with the fake, forward only (the
 * decoder never sees the end rundown before the I/O), and compare each I/O
 * with replay's decoding. toggle: whether the start-time rundown works
 * (else TraceSetInformation fails, as on Windows 7 or Wine). */
static int named_share_ex(const char *etl_name, int toggle, int private_helper,
                          struct names_result *r);

static int named_share(const char *etl_name, int toggle, struct names_result *r)
{
    return named_share_ex(etl_name, toggle, 0, r);
}

/* private_helper: another tool holds the NT Kernel Logger, so diskmon runs
 * the private session; 1: its own handle takes the kernel rundown
 * provider, 2: it refuses it, so the names come from the helper session. */
static int named_share_ex(const char *etl_name, int toggle, int private_helper,
                          struct names_result *r)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    char etl[1024], err[256];
    struct dm_event *live_ev, *ref;
    size_t n_live = 0, n_ref = 0;

    memset(r, 0, sizeof *r);
    sample_path(etl, sizeof etl, etl_name);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    if (!toggle)
        cfg.set_info_error = ERROR_NOT_SUPPORTED;
    cfg.kernel_running = private_helper != 0;
    if (private_helper == 2)
        cfg.private_enable_error = ERROR_NOT_SUPPORTED;
    if (dm_fake_install(&cfg, err, sizeof err) < 0)
        return -1;
    default_options(&opt, NULL);
    if (live_open(&lv, &opt) != 0 || live_start(&lv) != 0 ||
        dm_fake_wait_replayed(30000) != 0 || live_finish(&lv, 1) != 0) {
        live_free(&lv);
        dm_fake_uninstall();
        return -1;
    }
    live_ev = drain(lv.sink.ring, &n_live);
    live_free(&lv);
    r->helper_started = dm_fake_count(DM_FAKE_START, "diskmon rundown", 0);
    r->helper_delivered = dm_fake_helper_delivered();
    r->helper_left = dm_fake_helper_running();
    r->rundown_triggered = dm_fake_rundown_triggered();
    r->rundown_lost = dm_fake_rundown_lost();
    r->n_calls = dm_fake_calls(r->calls, sizeof r->calls / sizeof r->calls[0]);
    dm_fake_uninstall();
    ref = replay_events(etl, &n_ref);
    if (live_ev == NULL || ref == NULL) {
        free(live_ev);
        free(ref);
        return -1;
    }
    r->total = n_live;
    r->replay_total = n_ref;
    r->in_order = 1;
    for (size_t i = 1; i < n_live; i++)
        if (live_ev[i].time_ns < live_ev[i - 1].time_ns)
            r->in_order = 0;
    if (n_live == n_ref) {
        qsort(live_ev, n_live, sizeof *live_ev, io_cmp);
        qsort(ref, n_ref, sizeof *ref, io_cmp);
        for (size_t i = 0; i < n_live; i++) {
            const struct dm_event *a = &live_ev[i], *b = &ref[i];
            int same_proc = a->pid == b->pid &&
                            (a->flags & DM_EV_HAS_PID) == (b->flags & DM_EV_HAS_PID) &&
                            strcmp(a->process, b->process) == 0;

            r->process_same += same_proc != 0;
            if (a->request != DM_REQ_READ && a->request != DM_REQ_WRITE)
                continue;
            r->ios++;
            if (a->flags & DM_EV_HAS_FILE) {
                r->named++;
                r->named_same += strcmp(path_on_volume(a->file), path_on_volume(b->file)) == 0;
            }
        }
    }
    free(live_ev);
    free(ref);
    return 0;
}

static void check_named_files(const char *etl_name, const char *label)
{
    struct names_result before, after;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8, where diskmon "
                "does not ask for the start rundown (no "
                "TraceSystemTraceEnableFlagsInfo)");
    DM_ASSERT_EQ_INT(named_share(etl_name, 0, &before), 0);
    DM_ASSERT_EQ_INT(named_share(etl_name, 1, &after), 0);
    fprintf(stderr,
            "    %s, forward only: file named for %u of %u Read/Write I/Os "
            "without the start rundown (%.1f%%), %u with it (%.1f%%; %u "
            "named as replay names them)\n",
            label, (unsigned)before.named, (unsigned)before.ios,
            before.ios ? 100.0 * (double)before.named / (double)before.ios : 0.0,
            (unsigned)after.named,
            after.ios ? 100.0 * (double)after.named / (double)after.ios : 0.0,
            (unsigned)after.named_same);
    DM_ASSERT_EQ_U64(after.total, after.replay_total);
    DM_ASSERT(after.in_order);
    DM_ASSERT(after.ios > 0);
    /* >= 95% named, each as replay names it; the right process for every
     * I/O. */
    DM_ASSERT(after.named_same * 100 >= after.ios * 95);
    DM_ASSERT_EQ_U64(after.named_same, after.named);
    DM_ASSERT_EQ_U64(after.process_same, after.total);
    DM_ASSERT_EQ_U64(before.process_same, before.total);
    /* Without the toggle the names come too late (the end rundown). */
    DM_ASSERT(before.named < after.named);
}

DM_TEST(file_names_from_start_win8)
{
    check_named_files(WIN8_ETL, "Windows 8 sample");
}

DM_TEST(file_names_from_start_win11)
{
    check_named_files(WIN11_ETL, "Windows 11 sample");
}

/* {3b9c9951-3480-4220-9377-9c8e5184f5cd} KernelRundownGuid, little-endian
 * Data1..3 (System Informer etwmon.c). */
static const uint8_t kernel_rundown_bytes[16] = {
    0x51, 0x99, 0x9c, 0x3b, 0x80, 0x34, 0x20, 0x42,
    0x93, 0x77, 0x9c, 0x8e, 0x51, 0x84, 0xf5, 0xcd};

/* Index of the first call of kind on name (NULL: any) at or after from,
 * or n when none. */
static size_t call_index(const struct dm_fake_call *calls, size_t n, size_t from,
                         enum dm_fake_call_kind kind, const char *name)
{
    for (size_t i = from; i < n; i++)
        if (calls[i].kind == kind && (name == NULL || strcmp(calls[i].name, name) == 0))
            return i;
    return n;
}

/* The private session (another tool holds the NT Kernel Logger): its own
 * handle takes the kernel rundown provider (KernelRundownGuid,
 * KERNEL_FILE_KEYWORD_FILENAME; System Informer EtStartEtwRundown), after
 * OpenTrace and before ProcessTrace, and the names come in its own stream;
 * no helper session is started. */
DM_TEST(private_session_names_from_own_handle)
{
    struct names_result r;
    size_t open, enable, process;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8 (no private system loggers)");
    DM_ASSERT_EQ_INT(named_share_ex(WIN8_ETL, 0, 1, &r), 0);
    fprintf(stderr, "    private session, own handle: file named for %u of %u Read/Write I/Os\n",
            (unsigned)r.named, (unsigned)r.ios);
    DM_ASSERT_EQ_INT(r.helper_started, 0);
    DM_ASSERT(r.rundown_triggered);
    DM_ASSERT_EQ_INT(r.rundown_lost, 0);
    DM_ASSERT(r.ios > 0);
    DM_ASSERT(r.named_same * 100 >= r.ios * 95);
    DM_ASSERT_EQ_U64(r.named_same, r.named);
    open = call_index(r.calls, r.n_calls, 0, DM_FAKE_OPEN, "diskmon");
    enable = call_index(r.calls, r.n_calls, 0, DM_FAKE_ENABLE, "diskmon");
    process = call_index(r.calls, r.n_calls, 0, DM_FAKE_PROCESS, "diskmon");
    DM_ASSERT(open < enable && enable < process && process < r.n_calls);
    DM_ASSERT_MEM_EQ(&r.calls[enable].guid, kernel_rundown_bytes, 16);
    DM_ASSERT(r.calls[enable].match_any & 0x10u);
    DM_ASSERT_EQ_INT(r.calls[enable].rc, 0);
}

/* ...and where the private session refuses it, the helper session "diskmon
 * rundown": started, its consumer opened, and only then the provider
 * enabled on it (a rundown with no consumer is lost: System Informer
 * etwmon.c), names fed to the decoder; stopped again at the end. Fails
 * with the old order (enabled inside StartTrace's step): the fake loses
 * that rundown and the names are missing. */
DM_TEST(private_session_names_from_rundown_helper)
{
    struct names_result r;
    size_t start, open, enable;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8 (no private system loggers)");
    DM_ASSERT_EQ_INT(named_share_ex(WIN8_ETL, 0, 2, &r), 0);
    fprintf(stderr, "    private session, helper: file named for %u of %u Read/Write I/Os "
                    "(%u as replay names them), %llu rundown names from the helper\n",
            (unsigned)r.named, (unsigned)r.ios, (unsigned)r.named_same,
            (unsigned long long)r.helper_delivered);
    DM_ASSERT_EQ_INT(r.helper_started, 1);
    DM_ASSERT_EQ_INT(r.rundown_lost, 0);
    DM_ASSERT(r.helper_delivered > 0);
    DM_ASSERT(!r.helper_left);
    DM_ASSERT(r.ios > 0);
    DM_ASSERT(r.named_same * 100 >= r.ios * 95);
    DM_ASSERT_EQ_U64(r.named_same, r.named);
    start = call_index(r.calls, r.n_calls, 0, DM_FAKE_START, "diskmon rundown");
    open = call_index(r.calls, r.n_calls, 0, DM_FAKE_OPEN, "diskmon rundown");
    enable = call_index(r.calls, r.n_calls, 0, DM_FAKE_ENABLE, "diskmon rundown");
    DM_ASSERT(start < open && open < enable && enable < r.n_calls);
    DM_ASSERT(!(r.calls[start].log_file_mode & M_SYSTEM_LOGGER)); /* takes no slot */
    DM_ASSERT_MEM_EQ(&r.calls[enable].guid, kernel_rundown_bytes, 16);
    DM_ASSERT(r.calls[enable].match_any & 0x10u);
    DM_ASSERT_EQ_INT(r.calls[enable].rc, 0);
}

/* A whole live run over the Win8 sample with cfg, stopped after the replay;
 * notes and info copied out before close. Returns 0 when it ran. */
static int sample_run(struct dm_fake_config *cfg, char *notes, size_t nlen,
                      char *info, size_t ilen)
{
    struct dm_options opt;
    struct live lv;
    char etl[1024], err[256];
    int ok;

    sample_path(etl, sizeof etl, WIN8_ETL);
    cfg->etl_path = etl;
    if (dm_fake_install(cfg, err, sizeof err) < 0)
        return -1;
    default_options(&opt, NULL);
    ok = live_open(&lv, &opt) == 0 && live_start(&lv) == 0 &&
         dm_fake_wait_replayed(30000) == 0 && live_finish(&lv, 1) == 0;
    snprintf(notes, nlen, "%s", lv.src.notes.text);
    snprintf(info, ilen, "%s", lv.src.info.text);
    live_free(&lv);
    return ok ? 0 : -1;
}

/* When neither way can be had, the note says what may be missing. */
DM_TEST(private_session_without_helper_says_so)
{
    struct dm_fake_config cfg;
    char notes[DM_NOTES_MAX], info[DM_NOTES_MAX];

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8 (no private system loggers)");
    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.enable_error = ERROR_ACCESS_DENIED; /* own handle and helper refuse */
    DM_ASSERT_EQ_INT(sample_run(&cfg, notes, sizeof notes, info, sizeof info), 0);
    DM_ASSERT(strstr(notes, "may show no name") != NULL);
    DM_ASSERT(strstr(notes, "error 5") != NULL);
    DM_ASSERT(strstr(info, "start rundown: refused") != NULL);
    DM_ASSERT(!dm_fake_helper_running()); /* started, then stopped again */
    DM_ASSERT(!dm_fake_private_running());
    dm_fake_uninstall();
}

/* The start rundown's toggle (all zeros, then back) gives the session
 * back its whole group mask, not only the EnableFlags of its first ULONG:
 * the fake's session holds bits of its own in Masks[3] and Masks[6] (what
 * a session holds there is not documented). And where the mask cannot be
 * read first, nothing is toggled: the rundown is refused with a note, the
 * session keeps its flags. */
DM_TEST(rundown_toggle_restores_whole_group_mask)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    ULONG before[8], after[8];
    char msg[512];
    int ok;

    memset(&cfg, 0, sizeof cfg);
    cfg.group_mask_extra[3] = 0x00000040u;
    cfg.group_mask_extra[6] = 0x80000001u;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 1, msg, sizeof msg), 0);
    DM_ASSERT(dm_fake_group_mask(before));
    DM_ASSERT_EQ_INT(dm_etw_start_rundown(&s, msg, sizeof msg), 0);
    DM_ASSERT(dm_fake_group_mask(after));
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_SET_INFO, NULL, 0), 2);
    for (int k = 0; k < 8; k++)
        DM_ASSERT_EQ_INT(after[k], before[k]);
    DM_ASSERT_EQ_INT(after[6], 0x80000001u);
    dm_etw_session_free(&s);
    dm_fake_uninstall();

    cfg.query_info_error = ERROR_NOT_SUPPORTED;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 1, msg, sizeof msg), 0);
    DM_ASSERT_EQ_INT(dm_etw_start_rundown(&s, msg, sizeof msg), 0);
    DM_ASSERT_EQ_INT(s.rundown, DM_ETW_RUNDOWN_REFUSED);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_SET_INFO, NULL, 0), 0);
    DM_ASSERT(dm_fake_group_mask(after));
    DM_ASSERT_EQ_INT(after[6], 0x80000001u);
    dm_etw_session_free(&s);
    dm_fake_uninstall();
}

/* The rundown toggle cannot work (Windows 7 has no such class; Wine's
 * TraceSetInformation is a stub): a note, not a failure. */
DM_TEST(rundown_toggle_failure_is_a_note)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512], notes[DM_NOTES_MAX], info[DM_NOTES_MAX];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.set_info_error = ERROR_NOT_SUPPORTED;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 0, 1, msg, sizeof msg);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_INT(dm_etw_start_rundown(&s, msg, sizeof msg), 0);
    DM_ASSERT(!s.rundown_forced);
    DM_ASSERT_EQ_INT(s.rundown, DM_ETW_RUNDOWN_REFUSED);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_SET_INFO, NULL, 0), 1); /* no second call */
    DM_ASSERT(dm_fake_kernel_running()); /* the session goes on */
    dm_etw_session_free(&s);
    /* Windows 7: not even tried. */
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 0, msg, sizeof msg), 0);
    DM_ASSERT_EQ_INT(dm_etw_start_rundown(&s, msg, sizeof msg), 0);
    DM_ASSERT_EQ_INT(s.rundown, DM_ETW_RUNDOWN_NOT_ASKED);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_SET_INFO, NULL, 0), 1);
    dm_fake_uninstall();
    /* Through the source, the user is told. */
    if (!dm_etw_is_win8_or_later() || !dmt_shared_etl_present())
        return;
    memset(&cfg, 0, sizeof cfg);
    cfg.set_info_error = ERROR_NOT_SUPPORTED;
    DM_ASSERT_EQ_INT(sample_run(&cfg, notes, sizeof notes, info, sizeof info), 0);
    dm_fake_uninstall();
    DM_ASSERT(strstr(notes, "names of files already open") != NULL);
    DM_ASSERT(strstr(info, "start rundown: refused (TraceSetInformation error 50)") != NULL);
}

/* Item 3: STOP, then StartTrace still answers 183 twice while the old
 * session winds down: retried every 100 ms, started on the third try. */
DM_TEST(force_retries_while_old_session_stops)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    uint64_t t0, took;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.busy_after_stop = 2;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    t0 = dm_monotonic_ns();
    rc = dm_etw_session_start(&s, 1, 1, msg, sizeof msg);
    took = dm_monotonic_ns() - t0;
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_INT(s.logger, DM_ETW_KERNEL_LOGGER);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "NT Kernel Logger", 0), 3);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "diskmon", 0), 0);
    DM_ASSERT(took >= 2u * DM_ETW_RESTART_WAIT_MS * 1000000u * 9u / 10u);
    dm_etw_session_free(&s);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

/* ...and gives up within the bound when the name never frees up. */
DM_TEST(force_gives_up_within_bound)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    uint64_t t0, took;
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.busy_after_stop = 1000;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    t0 = dm_monotonic_ns();
    rc = dm_etw_session_start(&s, 1, 1, msg, sizeof msg);
    took = dm_monotonic_ns() - t0;
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(rc, DM_EEXISTS);
    DM_ASSERT(strstr(msg, "another program restarts it") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "NT Kernel Logger", 0),
                     (int)DM_ETW_RESTART_TRIES);
    DM_ASSERT(took < (uint64_t)(DM_ETW_RESTART_TRIES + 10u) * DM_ETW_RESTART_WAIT_MS * 1000000u);
    dm_fake_uninstall();
}

/* STOP says 2402 ERROR_ACTIVE_CONNECTIONS: already stopping, which is
 * what --force wants. */
DM_TEST(force_takes_2402_as_stopping)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.stop_active_connections = 1;
    cfg.busy_after_stop = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 1, 1, msg, sizeof msg);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_INT(s.logger, DM_ETW_KERNEL_LOGGER);
    DM_ASSERT(strstr(s.notice, "--force") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, "NT Kernel Logger", 0), 2);
    dm_etw_session_free(&s);
    dm_fake_uninstall();
}

/* A session whose QUERY shows a clock other than QPC (ClientContext 2
 * system time, 3 CPU cycles; WNODE_HEADER page) is refused with one line
 * naming the clock, and stopped; QPC is taken, as 1 or as 0 (the page:
 * "the default value is QPC"; Wine's QUERY leaves it 0). diskmon reads
 * every stamp as QPC ticks (etw_source.c), so another clock would give
 * wrong times silently. */
DM_TEST(clock_other_than_qpc_refused)
{
    static const ULONG clocks[] = {2, 3, 1, 0};

    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        struct dm_fake_config cfg;
        struct dm_etw_session s;
        char msg[512] = "";
        int ok, rc;

        memset(&cfg, 0, sizeof cfg);
        cfg.clock_answered = 1;
        cfg.clock_answer = clocks[i];
        install_or_fail(&cfg, &ok);
        if (!ok)
            return;
        rc = dm_etw_session_start(&s, 0, 1, msg, sizeof msg);
        if (clocks[i] <= 1) {
            DM_ASSERT_EQ_INT(rc, 0);
            DM_ASSERT(dm_fake_kernel_running());
        } else {
            DM_ASSERT(rc < 0);
            DM_ASSERT(strstr(msg, "clock") != NULL && strstr(msg, "QPC") != NULL);
            DM_ASSERT(strchr(msg, '\n') == NULL);
            DM_ASSERT(!dm_fake_kernel_running());
        }
        dm_etw_session_free(&s);
        dm_fake_uninstall();
    }
}

/* Item 8: STOP denied while already elevated means a protected owner; the
 * advice to elevate stays for who is not. */
DM_TEST(force_denied_names_protected_owner)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.stop_error = ERROR_ACCESS_DENIED;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    dm_etw_elevated_override = 1;
    rc = dm_etw_session_start(&s, 1, 1, msg, sizeof msg);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(rc, DM_EACCESS);
    DM_ASSERT(strstr(msg, "protected process") != NULL);
    DM_ASSERT(strstr(msg, "without --force") != NULL);
    DM_ASSERT(strstr(msg, "Run as administrator") == NULL);
    dm_etw_elevated_override = 0;
    rc = dm_etw_session_start(&s, 1, 1, msg, sizeof msg);
    dm_etw_session_free(&s);
    dm_etw_elevated_override = -1;
    DM_ASSERT_EQ_INT(rc, DM_EACCESS);
    DM_ASSERT(strstr(msg, "elevated prompt") != NULL);
    DM_ASSERT(strstr(msg, "protected") == NULL);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_START, NULL, 0), 0);
    dm_fake_uninstall();
}

/* Item 8: 1450 on the private fallback is the cap of 8 system loggers. */
DM_TEST(private_fallback_1450_names_system_logger_cap)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[768];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    cfg.kernel_running = 1;
    cfg.private_start_error = 1450; /* ERROR_NO_SYSTEM_RESOURCES */
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    rc = dm_etw_session_start(&s, 0, 1, msg, sizeof msg);
    dm_etw_session_free(&s);
    dm_fake_uninstall();
    DM_ASSERT(rc < 0);
    DM_ASSERT(strstr(msg, "1450") != NULL);
    DM_ASSERT(strstr(msg, "only 8") != NULL);
    DM_ASSERT(strstr(msg, "Process Monitor") != NULL);
    DM_ASSERT(strstr(msg, "Sysmon") != NULL);
    DM_ASSERT(strstr(msg, "logman query -ets") != NULL);
}

/* Item 6: records without the 32/64-bit header flag, and a logfile header
 * that says PointerSize 4 (as real-time sessions do on x64): the payload
 * layout must come from the OS bitness. The Windows 8 sample is 64-bit. */
DM_TEST(pointer_size_fallback_is_os_bitness)
{
    struct dm_fake_config cfg;
    struct live lv;
    char etl[1024];
    unsigned counts[DM_REQ_COUNT] = {0};
    int ok;
#if !defined(_WIN64)
    BOOL wow64 = FALSE;

    if (!(IsWow64Process(GetCurrentProcess(), &wow64) && wow64))
        DM_SKIP("32-bit Windows: the 64-bit sample is not this OS's own layout");
#endif

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    cfg.strip_pointer_flags = 1;
    capture_counts(&cfg, &lv, counts, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(counts[DM_REQ_READ], 1208);
    DM_ASSERT_EQ_INT(counts[DM_REQ_WRITE], 21);
    DM_ASSERT_EQ_INT(counts[DM_REQ_FLUSH], 2);
    DM_ASSERT_EQ_U64(lv.src.malformed, 0);
}

/* Item 5: a whole run through dm_run with the last `queued` buffers of the
 * sample still queued when the session is stopped. */
struct queued_run {
    int rc;
    size_t lines;
    uint64_t after_stop, delivered;
    size_t records, copies;
    int stops;
};

static int run_with_queue(const char *extra, size_t queued, int interrupt,
                          struct queued_run *q)
{
    struct dm_fake_config cfg;
    struct whole_run w;
    dm_thread *thr = NULL;
    char etl[1024], out_path[MAX_PATH + 64], err_path[MAX_PATH + 64], err[256];
    static char text[1 << 20];
    int ok, joined;

    memset(q, 0, sizeof *q);
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    cfg.queued_buffers = queued;
    if (dm_fake_install(&cfg, err, sizeof err) < 0)
        return -1;
    q->records = dm_fake_records();
    q->copies = dm_fake_copy_records();
    memset(&w, 0, sizeof w);
    default_options(&w.opt, extra);
    w.opt.no_header = 1;
    w.out = temp_file("queued_out", out_path, sizeof out_path);
    w.errf = temp_file("queued_err", err_path, sizeof err_path);
    dm_interrupt_clear();
    if (w.out == NULL || w.errf == NULL || dm_thread_start(&thr, whole_run_thread, &w) != 0) {
        dm_fake_uninstall();
        return -1;
    }
    ok = dm_fake_wait_replayed(30000) == 0;
    if (interrupt) {
        dm_sleep_ms(100);
        dm_interrupt_raise();
    }
    joined = dm_thread_join_timeout(thr, 15000) == 0;
    dm_interrupt_clear();
    if (ok && joined) {
        read_all(w.out, text, sizeof text);
        q->lines = count_lines(text);
    }
    q->rc = w.rc;
    q->after_stop = dm_fake_delivered_after_stop();
    q->delivered = dm_fake_delivered();
    if (!dm_fake_rundown_triggered())
        q->records -= q->copies; /* no start rundown (before Windows 8) */
    q->stops = dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    dm_fake_uninstall();
    return ok && joined ? 0 : -1;
}

/* Ctrl+C stops the session; the buffers still queued and the end rundown
 * are delivered before ProcessTrace returns, and their events are
 * printed: every line of the sample, none lost. */
DM_TEST(ctrl_c_prints_queued_buffers)
{
    struct queued_run q;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    DM_ASSERT_EQ_INT(run_with_queue(NULL, 8, 1, &q), 0);
    DM_ASSERT_EQ_INT(q.rc, DM_EXIT_OK);
    DM_ASSERT_EQ_INT(q.stops, 1);
    DM_ASSERT(q.after_stop > 0);               /* some came only after STOP */
    DM_ASSERT_EQ_U64(q.delivered, q.records);  /* ... and all of them came */
    DM_ASSERT_EQ_U64(q.lines, 1208 + 21 + 2);  /* README counts: none lost */
}

/* ...while -n ends at once: the BufferCallback says FALSE, and what is
 * still queued (and the end rundown) is dropped. */
DM_TEST(count_limit_drops_queued_buffers)
{
    struct queued_run q;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    DM_ASSERT_EQ_INT(run_with_queue("-n10", 8, 0, &q), 0);
    DM_ASSERT_EQ_INT(q.rc, DM_EXIT_OK);
    DM_ASSERT_EQ_U64(q.lines, 10);
    DM_ASSERT_EQ_INT(q.stops, 1);
    DM_ASSERT(q.delivered < q.records);
}

/* Item 2 through dm_run: the user sees the message on stderr and exit 1. */
DM_TEST(outside_stop_exits_1)
{
    struct dm_fake_config cfg;
    struct whole_run w;
    dm_thread *thr = NULL;
    char out_path[MAX_PATH + 64], err_path[MAX_PATH + 64], text[2048];
    int ok, joined;

    memset(&cfg, 0, sizeof cfg);
    cfg.end_after_replay = 1;
    cfg.outside_restart = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    memset(&w, 0, sizeof w);
    default_options(&w.opt, NULL);
    w.out = temp_file("outside_out", out_path, sizeof out_path);
    w.errf = temp_file("outside_err", err_path, sizeof err_path);
    DM_ASSERT(w.out != NULL && w.errf != NULL);
    dm_interrupt_clear();
    DM_ASSERT_EQ_INT(dm_thread_start(&thr, whole_run_thread, &w), 0);
    joined = dm_thread_join_timeout(thr, 15000) == 0;
    DM_ASSERT(joined);
    read_all(w.errf, text, sizeof text);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    DM_ASSERT_EQ_INT(w.rc, DM_EXIT_ERROR);
    DM_ASSERT(strstr(text, "was stopped from outside") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_STOP), 0);
    DM_ASSERT_EQ_INT(dm_fake_touched_other(), 0);
    DM_ASSERT(dm_fake_kernel_running());
    dm_fake_uninstall();
}


/* --- delivery timing through the fake's live model -------------------------- */

static uint64_t qpc_now(void)
{
    LARGE_INTEGER now;

    QueryPerformanceCounter(&now);
    return (uint64_t)now.QuadPart;
}

/* One I/O on CPU 1 of 4, 200 ms into the run, then nothing at all, with
 * cfg's answers: how many ms after its timestamp its event reached the ring
 * (UINT64_MAX: never, within 5 s). The info lines are copied out. */
static uint64_t one_io_ms(struct dm_fake_config *cfg, char *info, size_t ilen, int *ok)
{
    struct dm_options opt;
    struct live lv;
    struct dm_event ev;
    uint64_t seen = 0, io, freq = qpc_frequency(), deadline;
    size_t got = 0;

    cfg->load.n_cpus = 4;
    cfg->load.single_io_ms = 200;
    install_or_fail(cfg, ok);
    if (!*ok)
        return UINT64_MAX;
    default_options(&opt, NULL);
    *ok = live_open(&lv, &opt) == 0 && live_start(&lv) == 0;
    deadline = qpc_now() + 5 * freq;
    while (*ok && got == 0 && qpc_now() < deadline) {
        got = dmt_ring_take(lv.sink.ring, &ev, 1);
        if (got == 0)
            dm_sleep_ms(1);
        else
            seen = qpc_now();
    }
    io = dm_fake_single_io_qpc();
    *ok = live_finish(&lv, 1) == 0 && *ok;
    snprintf(info, ilen, "%s", lv.src.info.text);
    live_free(&lv);
    if (got != 1 || io == 0 || seen < io)
        return UINT64_MAX;
    return (seen - io) * 1000u / freq;
}

/* One I/O, then nothing at all: Windows delivers its buffer only when the
 * FlushTimer expires (the FlushTrace page), and no other buffer ever comes
 * to call us back. Its event must still reach the ring within 0.4 s of its
 * timestamp (the printer's 100 ms then make the 0.5 s of the README). */
DM_TEST(one_io_then_silence_within_half_second)
{
    struct dm_fake_config cfg;
    char info[DM_NOTES_MAX];
    uint64_t ms;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    ms = one_io_ms(&cfg, info, sizeof info, &ok);
    DM_ASSERT(ok);
    /* The session asked for a sub-second flush and Windows (the fake)
     * confirmed it, so no FLUSH was needed ... */
    DM_ASSERT(dm_fake_flush_ms() > 0 && dm_fake_flush_ms() <= 250);
    DM_ASSERT(strstr(info, "flush mode: ms-timer (checked)\n") != NULL);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_FLUSH), 0);
    /* ... the fake delivered the one record only because it expired ... */
    DM_ASSERT_EQ_U64(dm_fake_logged(), 1);
    DM_ASSERT_EQ_U64(dm_fake_timer_buffers(), 1);
    DM_ASSERT_EQ_U64(dm_fake_full_buffers(), 0);
    dm_fake_uninstall();
    /* ... and its event came within the bound, by the QPC clock. */
    if (ms != UINT64_MAX)
        fprintf(stderr, "    one I/O: in the ring %llu ms after its timestamp\n",
                (unsigned long long)ms);
    DM_ASSERT(ms <= 400u);
}

/* The same bound whatever Windows makes of EVENT_TRACE_USE_MS_FLUSH_TIMER
 * (not on the Logging Mode Constants page): flag dropped with FlushTimer
 * 100 (that is 100 s), the timer read back as 0, clamped to 1 s, and a
 * QUERY that fails. In each, diskmon finds the 100 ms timer unconfirmed,
 * says so (flush mode), sends FLUSH by handle every 100 ms to its own
 * session only, and sets the documented FlushTimer of 1 s where the unit
 * is known to be seconds, keeping the session's flags and real-time mode
 * (the ControlTraceW page's UPDATE). Fails with the old code, which trusted
 * the flag: nothing comes for 100 s. */
DM_TEST(one_io_within_half_second_whatever_the_flush_answer)
{
    static const struct {
        enum dm_fake_flush_answer answer;
        ULONG query_error;
        const char *label;
        int update; /* an UPDATE to FlushTimer 1 s is expected */
    } cases[] = {
        {DM_FAKE_FLUSH_FLAG_DROPPED, 0, "flag dropped, FlushTimer 100", 1},
        {DM_FAKE_FLUSH_TIMER_ZERO, 0, "flag kept, FlushTimer reads 0", 0},
        {DM_FAKE_FLUSH_CLAMPED_TO_1, 0, "flag dropped, FlushTimer reads 1", 0},
        {DM_FAKE_FLUSH_FLAG_DROPPED, ERROR_INVALID_PARAMETER, "QUERY fails", 0},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct dm_fake_config cfg;
        struct dm_fake_call calls[64];
        char info[DM_NOTES_MAX];
        uint64_t ms;
        size_t n, update;
        int ok, flushes, other;
        unsigned period;

        memset(&cfg, 0, sizeof cfg);
        cfg.flush_answer = cases[i].answer;
        cfg.query_error = cases[i].query_error;
        ms = one_io_ms(&cfg, info, sizeof info, &ok);
        n = dm_fake_calls(calls, 64);
        flushes = dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_FLUSH);
        other = dm_fake_touched_other();
        period = dm_fake_flush_period_ms();
        dm_fake_uninstall();
        fprintf(stderr, "    %s: in the ring %lld ms after its timestamp, %d FLUSH, "
                        "session flush period %u ms\n",
                cases[i].label, ms == UINT64_MAX ? -1LL : (long long)ms, flushes, period);
        DM_ASSERT(ok);
        DM_ASSERT(ms <= 400u);
        DM_ASSERT(strstr(info, "flush mode: FLUSH by handle every 100 ms (fallback)\n") != NULL);
        DM_ASSERT(flushes >= 2);
        DM_ASSERT_EQ_INT(other, 0);
        DM_ASSERT_EQ_INT(dm_fake_count_by_name(NULL, CTL_FLUSH), 0);
        update = n;
        for (size_t k = 0; k < n && k < 64; k++)
            if (calls[k].kind == DM_FAKE_CONTROL && calls[k].code == CTL_UPDATE)
                update = k;
        if (cases[i].update) {
            DM_ASSERT(update < n);
            if (update < n) {
                DM_ASSERT_EQ_INT(calls[update].flush_timer, 1);
                DM_ASSERT(!calls[update].by_name);
                DM_ASSERT_EQ_INT(calls[update].enable_flags, calls[0].enable_flags);
                DM_ASSERT(calls[update].log_file_mode & M_REAL_TIME);
            }
            DM_ASSERT_EQ_INT(period, 1000);
            DM_ASSERT(strstr(info, "flush timer queried: 100 (seconds") != NULL);
        } else {
            DM_ASSERT_EQ_U64(update, n); /* 1 might mean 1 ms, or unknown */
        }
        if (cases[i].query_error != 0)
            DM_ASSERT(strstr(info, "logger thread id: unknown") != NULL);
    }
}

/* The same through dm_run and the printer, to a file: the line itself is
 * in the output within 0.5 s of the I/O's timestamp (the README's
 * "Latency"), with no other event. */
/* flush_answer: how Windows answers the ms flush timer (the fallback's
 * FLUSH every 100 ms must keep the same bound). */
static void one_io_line(enum dm_fake_flush_answer flush_answer)
{
    struct dm_fake_config cfg;
    struct whole_run w;
    dm_thread *thr = NULL;
    char out_path[MAX_PATH + 64], err_path[MAX_PATH + 64], text[4096];
    uint64_t seen = 0, io, freq = qpc_frequency(), deadline;
    size_t lines = 0;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    cfg.flush_answer = flush_answer;
    cfg.load.n_cpus = 4;
    cfg.load.single_io_ms = 200;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    memset(&w, 0, sizeof w);
    default_options(&w.opt, "--no-header");
    w.out = temp_file("line_out", out_path, sizeof out_path);
    w.errf = temp_file("line_err", err_path, sizeof err_path);
    DM_ASSERT(w.out != NULL && w.errf != NULL);
    dm_interrupt_clear();
    DM_ASSERT_EQ_INT(dm_thread_start(&thr, whole_run_thread, &w), 0);
    deadline = qpc_now() + 5 * freq;
    while (seen == 0 && qpc_now() < deadline) {
        FILE *f = fopen(out_path, "rb");
        size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;

        if (f != NULL)
            fclose(f);
        text[n] = '\0';
        if (strchr(text, '\n') != NULL)
            seen = qpc_now();
        else
            dm_sleep_ms(2);
    }
    io = dm_fake_single_io_qpc();
    dm_interrupt_raise();
    DM_ASSERT(dm_thread_join_timeout(thr, 15000) == 0);
    dm_interrupt_clear();
    read_all(w.out, text, sizeof text);
    lines = count_lines(text);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    dm_fake_uninstall();
    DM_ASSERT_EQ_INT(w.rc, DM_EXIT_OK);
    DM_ASSERT_EQ_U64(lines, 1);
    DM_ASSERT(io != 0 && seen >= io);
    if (seen >= io)
        fprintf(stderr, "    one I/O (%s): its line out %llu ms after its timestamp\n",
                flush_answer == DM_FAKE_FLUSH_HONOURED ? "ms timer" : "FLUSH fallback",
                (unsigned long long)((seen - io) * 1000u / freq));
    DM_ASSERT((seen - io) * 1000u / freq <= 500u);
}

DM_TEST(one_io_then_silence_line_within_half_second)
{
    one_io_line(DM_FAKE_FLUSH_HONOURED);
    one_io_line(DM_FAKE_FLUSH_FLAG_DROPPED);
}

/* A 100,000-file start rundown (a busy server; a Windows 11 desktop's has
 * about 26,000, docs/etw.md §8), then one read of the first file: it is
 * named, and no table said it was full. */
DM_TEST(rundown_100k_files_then_io_named)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    struct dm_event ev;
    uint64_t deadline, freq = qpc_frequency();
    size_t got = 0;
    char file[256] = "", notes[1024] = "", info[DM_NOTES_MAX] = "";
    int ok, named = 0;

    /* The product asks for the start rundown on Windows 8+ only (the
     * TraceSystemTraceEnableFlagsInfo class; etw_session.c), as a Wine
     * prefix that reports Windows 7 shows. */
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8, where diskmon "
                "does not ask for the start rundown (tests/scripts/windows.sh "
                "sets win10)");
    memset(&cfg, 0, sizeof cfg);
    cfg.load.n_cpus = 4;
    cfg.load.single_io_ms = 300;
    cfg.load.rundown_files = 100000;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT(!dm_fake_rundown_triggered()); /* not before the consumer */
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    deadline = qpc_now() + 10 * freq;
    while (got == 0 && qpc_now() < deadline) {
        got = dmt_ring_take(lv.sink.ring, &ev, 1);
        if (got == 0)
            dm_sleep_ms(2);
    }
    if (got == 1) {
        named = (ev.flags & DM_EV_HAS_FILE) != 0;
        snprintf(file, sizeof file, "%s", ev.file);
    }
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    snprintf(notes, sizeof notes, "%s", lv.src.notes.text);
    snprintf(info, sizeof info, "%s", lv.src.info.text);
    live_free(&lv);
    DM_ASSERT(dm_fake_rundown_triggered());
    DM_ASSERT_EQ_INT(dm_fake_rundown_lost(), 0);
    DM_ASSERT(dm_fake_delivered() >= 100001);
    dm_fake_uninstall();
    /* every name of the rundown was in before the one I/O's line */
    DM_ASSERT(strstr(info, "rundown names: 100000 (before the first I/O line)") != NULL);
    DM_ASSERT_EQ_U64(got, 1);
    DM_ASSERT(named);
    DM_ASSERT_STR_EQ(file, "\\Device\\DmTest\\f0.txt");
    DM_ASSERT(strstr(notes, "tables were full") == NULL);
}

/* 8 CPUs, 2 of them busy at 200,000 records/s together, 6 quiet (a few
 * records a second, delivered only by the FlushTimer): no record may come
 * late, every one reaches the ring in time order, and the stage holds no
 * more than its count bound (so nothing was pushed out early). */
DM_TEST(two_busy_of_eight_cpus_none_late)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    static struct dm_event evs[4096];
    uint64_t n = 0, last_ns = 0, late, logged;
    size_t peak;
    int ok, in_order = 1, done = 0;

    memset(&cfg, 0, sizeof cfg);
    cfg.load.n_cpus = 8;
    cfg.load.busy_cpus = 2;
    cfg.load.busy_rate = 200000;
    cfg.load.quiet_rate = 20;
    cfg.load.duration_ms = 1000;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    /* Drain as the printer would, until the load ended and a hold period
     * more has passed. */
    for (;;) {
        size_t got = dmt_ring_take(lv.sink.ring, evs, sizeof evs / sizeof evs[0]);

        for (size_t i = 0; i < got; i++) {
            in_order &= evs[i].time_ns >= last_ns;
            last_ns = evs[i].time_ns;
        }
        n += got;
        if (got == 0) {
            if (done)
                break;
            if (dm_fake_wait_replayed(0) == 0) {
                dm_sleep_ms(600);
                done = 1;
            } else {
                dm_sleep_ms(1);
            }
        }
    }
    late = dm_etw_source_late(&lv.src);
    peak = dm_etw_source_peak_held(&lv.src);
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    n += dmt_ring_take(lv.sink.ring, evs, sizeof evs / sizeof evs[0]);
    logged = dm_fake_logged();
    fprintf(stderr, "    %llu logged, %llu in the ring, %llu buffers out of order, "
                    "%llu timer buffers, peak held %lu, late %llu\n",
            (unsigned long long)logged, (unsigned long long)n,
            (unsigned long long)dm_fake_out_of_order_buffers(),
            (unsigned long long)dm_fake_timer_buffers(), (unsigned long)peak,
            (unsigned long long)late);
    DM_ASSERT(dm_fake_out_of_order_buffers() > 0); /* the model did mix */
    DM_ASSERT(dm_fake_timer_buffers() > 0);        /* quiet CPUs by timer */
    live_free(&lv);
    dm_fake_uninstall();
    DM_ASSERT(logged >= 150000);
    DM_ASSERT_EQ_U64(late, 0);
    DM_ASSERT(in_order);
    DM_ASSERT(peak < 65536);
    DM_ASSERT_EQ_U64(lv.src.lost_events, 0);
}


/* --- sessions: by handle, leftovers, lost buffers ----------------------------- */

/* A whole run in a thread; Ctrl+C once the fake delivered everything and
 * after_ms more passed. Returns 0, or -1 when the run did not end. */
static int run_with_ctrl_c(const struct dm_fake_config *cfg, unsigned after_ms,
                           int *rc, char *errtext, size_t errlen)
{
    struct whole_run w;
    dm_thread *thr = NULL;
    char out_path[MAX_PATH + 64], err_path[MAX_PATH + 64], err[256];
    int joined;

    if (dm_fake_install(cfg, err, sizeof err) < 0)
        return -1;
    memset(&w, 0, sizeof w);
    default_options(&w.opt, NULL);
    w.out = temp_file("ctrl_c_out", out_path, sizeof out_path);
    w.errf = temp_file("ctrl_c_err", err_path, sizeof err_path);
    dm_interrupt_clear();
    if (w.out == NULL || w.errf == NULL || dm_thread_start(&thr, whole_run_thread, &w) != 0)
        return -1;
    dm_fake_wait_replayed(30000);
    dm_sleep_ms(after_ms);
    dm_interrupt_raise();
    joined = dm_thread_join_timeout(thr, 15000) == 0;
    dm_interrupt_clear();
    read_all(w.errf, errtext, errlen);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    *rc = w.rc;
    return joined ? 0 : -1;
}

/* Another tool stops our session and starts its own under the same name;
 * ProcessTrace has not returned yet [MS-proc] when Ctrl+C comes. diskmon's
 * QUERY and STOP go by handle, and the NT Kernel Logger's handle is its
 * fixed id 0xFFFF (evntrace.h), so the handle names the other tool's
 * instance: only the LoggerThreadId check keeps diskmon's STOP off it, and
 * nothing is ever named. */
DM_TEST(outside_stop_then_ctrl_c_no_stop_by_name)
{
    struct dm_fake_config cfg;
    char text[2048];
    int rc = -1;

    memset(&cfg, 0, sizeof cfg);
    cfg.end_after_replay = 1;
    cfg.outside_restart = 1;
    cfg.outside_lag_ms = 3000;
    DM_ASSERT_EQ_INT(run_with_ctrl_c(&cfg, 200, &rc, text, sizeof text), 0);
    DM_ASSERT_EQ_INT(dm_fake_count_by_name(NULL, ULONG_MAX), 0);
    DM_ASSERT(dm_fake_count(DM_FAKE_CONTROL, NULL, CTL_QUERY) >= 2); /* is it ours? */
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 0);
    DM_ASSERT_EQ_INT(dm_fake_touched_other(), 0);
    DM_ASSERT(dm_fake_kernel_running()); /* theirs */
    DM_ASSERT(strstr(text, "left it alone") != NULL);
    DM_ASSERT(rc == DM_EXIT_OK || rc == DM_EXIT_ERROR);
    dm_fake_uninstall();
}

/* A diskmon killed while it ran: its session stays, with its settings. */
static int leave_killed_session(int win8)
{
    struct dm_etw_session s;
    char msg[512];
    int rc = dm_etw_session_start(&s, 0, win8, msg, sizeof msg);

    /* Killed: no stop, nothing freed but the lock. */
    if (s.lock_ready)
        DeleteCriticalSection(&s.lock);
    return rc;
}

static int cleanup_run(char *msg, size_t len)
{
    struct dm_options opt;
    struct live lv;
    int rc;

    default_options(&opt, "--cleanup");
    rc = live_open(&lv, &opt);
    snprintf(msg, len, "%s", lv.src.errmsg);
    lv.src.ops->close(&lv.src);
    live_free(&lv);
    return rc;
}

/* A machine of two processor groups (64 and 16 processors): a diskmon
 * put in group 0 was killed; --cleanup run from group 1 still recognises
 * its NT Kernel Logger. Buffers are sized for every processor of the
 * machine, whichever group diskmon runs in (GetSystemInfo counts only the
 * caller's group: SYSTEM_INFO and Processor Groups pages). */
DM_TEST(leftover_recognised_across_processor_groups)
{
    struct dm_fake_config cfg;
    char msg[512];
    int ok;

    memset(&cfg, 0, sizeof cfg);
    cfg.group_cpus[0] = 64;
    cfg.group_cpus[1] = 16;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(leave_killed_session(1), 0);
    dm_fake_set_process_group(1);
    dm_etw_other_diskmon_override = 0;
    DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
    dm_etw_other_diskmon_override = -1;
    DM_ASSERT(strstr(msg, "stopped the NT Kernel Logger") != NULL);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();
}

/* --cleanup stops an NT Kernel Logger with exactly diskmon's settings when
 * no other diskmon runs; never one with other settings, nor while another
 * diskmon runs (it may be that one's). */
DM_TEST(cleanup_stops_leftover_kernel_logger_only)
{
    struct dm_fake_config cfg;
    char msg[512];
    int ok;

    memset(&cfg, 0, sizeof cfg);
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(leave_killed_session(1), 0);
    DM_ASSERT(dm_fake_kernel_running());
    dm_etw_other_diskmon_override = 1; /* another diskmon runs: hands off */
    DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT(strstr(msg, "nothing to clean up") != NULL);
    dm_etw_other_diskmon_override = 0;
    DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
    DM_ASSERT(!dm_fake_kernel_running());
    DM_ASSERT(strstr(msg, "stopped the NT Kernel Logger") != NULL);
    dm_fake_uninstall();

    /* Windows 7's flags (with DISK_IO_INIT) are diskmon's too. */
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(leave_killed_session(0), 0);
    DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
    DM_ASSERT(!dm_fake_kernel_running());
    dm_fake_uninstall();

    /* Another tool's session (other settings): untouched. */
    cfg.kernel_running = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
    DM_ASSERT(dm_fake_kernel_running());
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 0);
    DM_ASSERT(strstr(msg, "another program") != NULL);
    dm_etw_other_diskmon_override = -1;
    dm_fake_uninstall();
}

/* The start message names a leftover for what it is: Windows 8+ falls back
 * to the private session and says --cleanup; Windows 7 stops and says so. */
DM_TEST(start_recognises_leftover_kernel_logger)
{
    struct dm_fake_config cfg;
    struct dm_etw_session s;
    char msg[512];
    int ok, rc;

    memset(&cfg, 0, sizeof cfg);
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    dm_etw_other_diskmon_override = 0;
    DM_ASSERT_EQ_INT(leave_killed_session(1), 0);
    rc = dm_etw_session_start(&s, 0, 1, msg, sizeof msg);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_INT(s.logger, DM_ETW_PRIVATE_LOGGER);
    DM_ASSERT(strstr(s.notice, "killed or crashed") != NULL);
    DM_ASSERT(strstr(s.notice, "--cleanup") != NULL);
    dm_etw_session_free(&s);
    rc = dm_etw_session_start(&s, 0, 0, msg, sizeof msg);
    dm_etw_session_free(&s);
    DM_ASSERT_EQ_INT(rc, DM_EEXISTS);
    DM_ASSERT(strstr(msg, "killed or crashed") != NULL);
    DM_ASSERT(strstr(msg, "--cleanup") != NULL);
    DM_ASSERT(dm_fake_kernel_running()); /* only --cleanup stops it */
    dm_etw_other_diskmon_override = -1;
    dm_fake_uninstall();
}

/* RealTimeBuffersLost counts buffers: reported as buffers of up to 64 KB,
 * exit 3, even with no event counted lost. */
DM_TEST(lost_buffers_reported_as_buffers_exit_3)
{
    struct dm_fake_config cfg;
    char text[2048];
    int rc = -1;

    memset(&cfg, 0, sizeof cfg);
    cfg.rt_buffers_lost = 3;
    DM_ASSERT_EQ_INT(run_with_ctrl_c(&cfg, 100, &rc, text, sizeof text), 0);
    dm_fake_uninstall();
    DM_ASSERT_EQ_INT(rc, DM_EXIT_LOST);
    DM_ASSERT(strstr(text, "3 whole buffers of up to 64 KB") != NULL);
    DM_ASSERT(strstr(text, "3 events lost") == NULL);
}

/* The fake's rule (System Informer etwmon.c, krabsetw etw.hpp): a rundown
 * asked for while no consumer of the session is open is lost, as the old
 * order (the toggle inside the start) did. The product asks after
 * OpenTrace and before ProcessTrace, so nothing is lost. */
DM_TEST(start_rundown_only_after_open_trace)
{
    struct dm_fake_config cfg;
    struct dm_fake_call calls[64];
    struct dm_etw_session s;
    struct live lv;
    struct dm_options opt;
    char msg[512];
    size_t n, open, toggle, process;
    int ok;

    memset(&cfg, 0, sizeof cfg);
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    DM_ASSERT_EQ_INT(dm_etw_session_start(&s, 0, 1, msg, sizeof msg), 0);
    DM_ASSERT_EQ_INT(dm_etw_start_rundown(&s, msg, sizeof msg), 0); /* no consumer yet */
    DM_ASSERT_EQ_INT(dm_fake_rundown_lost(), 1);
    DM_ASSERT(!dm_fake_rundown_triggered());
    dm_etw_session_free(&s);
    dm_fake_uninstall();

    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8: the source asks for no rundown");
    memset(&cfg, 0, sizeof cfg);
    cfg.load.n_cpus = 2;
    cfg.load.single_io_ms = 100;
    cfg.load.rundown_files = 10;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(dm_fake_wait_replayed(10000), 0);
    DM_ASSERT_EQ_INT(live_finish(&lv, 1), 0);
    live_free(&lv);
    n = dm_fake_calls(calls, 64);
    open = call_index(calls, n, 0, DM_FAKE_OPEN, "NT Kernel Logger");
    toggle = call_index(calls, n, 0, DM_FAKE_SET_INFO, NULL);
    process = call_index(calls, n, 0, DM_FAKE_PROCESS, "NT Kernel Logger");
    DM_ASSERT(open < toggle && toggle < process && process < n);
    DM_ASSERT_EQ_INT(dm_fake_rundown_lost(), 0);
    DM_ASSERT(dm_fake_rundown_triggered());
    dm_fake_uninstall();
}

/* What the session set up and what Windows answered, as "key: value" info
 * lines (for --self-test). Expected values from the documented rules the
 * start follows (MinimumBuffers 2 per CPU + 16 spare, EVENT_TRACE_PROPERTIES)
 * and from the fake's own counts, not from diskmon's output. */
DM_TEST(info_lines_say_what_windows_answered)
{
    struct dm_fake_config cfg;
    char notes[DM_NOTES_MAX], info[DM_NOTES_MAX], want[128];
    static const char *const keys[] = {
        "logger: ", "session kind: ", "log file mode asked: ", "log file mode queried: ",
        "flush timer asked: ", "flush timer queried: ", "flush mode: ", "buffer size kb: ",
        "minimum buffers: ", "maximum buffers: ", "start rundown: ", "rundown names: ",
        "clock: ", "logger thread id: ",
    };
    unsigned min_buffers;
    size_t copies;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    /* 2 per processor of the machine, every group's (EVENT_TRACE_PROPERTIES:
     * at least two per processor), plus diskmon's 16 spare. */
    min_buffers = 2u * (unsigned)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS) + 16u;
    memset(&cfg, 0, sizeof cfg);
    DM_ASSERT_EQ_INT(sample_run(&cfg, notes, sizeof notes, info, sizeof info), 0);
    copies = dm_fake_copy_records();
    dm_fake_uninstall();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char line[64];

        snprintf(line, sizeof line, "\n%s", keys[i]);
        if (strncmp(info, keys[i], strlen(keys[i])) != 0 && strstr(info, line) == NULL)
            dmt_fail_at(__FILE__, __LINE__, "no info line \"%s...\" in:\n%s", keys[i], info);
    }
    DM_ASSERT(strstr(info, "logger: NT Kernel Logger\n") != NULL);
    DM_ASSERT(strstr(info, "log file mode asked: 0x00000110\n") != NULL);
    DM_ASSERT(strstr(info, "log file mode queried: 0x00000110\n") != NULL);
    DM_ASSERT(strstr(info, "flush timer queried: 100\n") != NULL);
    DM_ASSERT(strstr(info, "flush mode: ms-timer (checked)\n") != NULL);
    DM_ASSERT(strstr(info, "buffer size kb: 64\n") != NULL);
    snprintf(want, sizeof want, "minimum buffers: %u\n", min_buffers);
    DM_ASSERT(strstr(info, want) != NULL);
    snprintf(want, sizeof want, "maximum buffers: %u\n", min_buffers + 240u);
    DM_ASSERT(strstr(info, want) != NULL);
    DM_ASSERT(strstr(info, "clock: QPC (ClientContext asked 1, queried 1)\n") != NULL);
    if (dm_etw_is_win8_or_later()) {
        DM_ASSERT(strstr(info, "start rundown: asked (TraceSetInformation group-mask toggle)\n") != NULL);
        snprintf(want, sizeof want, "rundown names: %u (before the first I/O line)\n",
                 (unsigned)copies);
        DM_ASSERT(strstr(info, want) != NULL);
    }
    /* The fallback, said as such. */
    memset(&cfg, 0, sizeof cfg);
    cfg.flush_answer = DM_FAKE_FLUSH_FLAG_DROPPED;
    DM_ASSERT_EQ_INT(sample_run(&cfg, notes, sizeof notes, info, sizeof info), 0);
    dm_fake_uninstall();
    DM_ASSERT(strstr(info, "log file mode queried: 0x00000100\n") != NULL);
    DM_ASSERT(strstr(info, "flush mode: FLUSH by handle every 100 ms (fallback)\n") != NULL);
}

/* --cleanup recognises a killed diskmon's NT Kernel Logger in either flush
 * mode: where Windows kept the ms timer (FlushTimer 100 and the flag) and
 * where the fallback set FlushTimer 1 s, or found it so. Fails with the old check, which required the flag. */
DM_TEST(leftover_recognised_in_both_flush_modes)
{
    static const enum dm_fake_flush_answer answers[] = {
        DM_FAKE_FLUSH_HONOURED, DM_FAKE_FLUSH_FLAG_DROPPED, DM_FAKE_FLUSH_CLAMPED_TO_1,
    };

    dm_etw_other_diskmon_override = 0;
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        struct dm_fake_config cfg;
        char msg[512];
        int ok;

        memset(&cfg, 0, sizeof cfg);
        cfg.flush_answer = answers[i];
        install_or_fail(&cfg, &ok);
        if (!ok)
            break;
        DM_ASSERT_EQ_INT(leave_killed_session(1), 0);
        DM_ASSERT_EQ_INT(cleanup_run(msg, sizeof msg), DM_ESTOPPED);
        DM_ASSERT(!dm_fake_kernel_running());
        DM_ASSERT(strstr(msg, "stopped the NT Kernel Logger") != NULL);
        dm_fake_uninstall();
    }
    dm_etw_other_diskmon_override = -1;
}

/* The flush fallback runs, and another tool stops diskmon's NT Kernel
 * Logger and starts its own, which has the same handle (0xFFFF);
 * ProcessTrace lags [MS-proc], then Ctrl+C. Neither the releaser's FLUSH
 * nor the STOP may reach the other tool's instance:
 * each is preceded by a QUERY whose LoggerThreadId is not diskmon's. */
DM_TEST(outside_restart_flush_fallback_leaves_theirs_alone)
{
    struct dm_fake_config cfg;
    char text[2048];
    int rc = -1;

    memset(&cfg, 0, sizeof cfg);
    cfg.end_after_replay = 1;
    cfg.outside_restart = 1;
    cfg.outside_lag_ms = 3000;
    cfg.flush_answer = DM_FAKE_FLUSH_FLAG_DROPPED;
    DM_ASSERT_EQ_INT(run_with_ctrl_c(&cfg, 500, &rc, text, sizeof text), 0);
    DM_ASSERT_EQ_INT(dm_fake_touched_other(), 0);
    DM_ASSERT_EQ_INT(dm_fake_count(DM_FAKE_CONTROL, "NT Kernel Logger", CTL_STOP), 0);
    DM_ASSERT(dm_fake_kernel_running()); /* theirs */
    DM_ASSERT(strstr(text, "left it alone") != NULL);
    dm_fake_uninstall();
}

/* The end of a run on the private session while its naming helper still
 * delivers names (helper_trickle): the final flush decodes under ro_lock,
 * as the helper's callback does, so the decoder is never used by two
 * threads at once. Under Wine there is no TSan, so
 * the source counts every use of the reorder stage or the decoder by a
 * thread that does not hold ro_lock (dm_etw_source_unguarded); the old
 * final flush took no lock and is counted. */
DM_TEST(final_flush_under_lock_while_helper_delivers)
{
    struct dm_fake_config cfg;
    struct dm_options opt;
    struct live lv;
    struct dm_event *evs;
    char etl[1024];
    size_t n = 0;
    long unguarded = -1;
    uint64_t helper_names;
    int ok, joined;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    if (!dm_etw_is_win8_or_later())
        DM_SKIP("the OS reports a version before Windows 8 (no private system loggers)");
    sample_path(etl, sizeof etl, WIN8_ETL);
    memset(&cfg, 0, sizeof cfg);
    cfg.etl_path = etl;
    cfg.kernel_running = 1;
    cfg.private_enable_error = ERROR_NOT_SUPPORTED; /* the helper, then */
    cfg.helper_trickle = 1;
    install_or_fail(&cfg, &ok);
    if (!ok)
        return;
    default_options(&opt, NULL);
    DM_ASSERT_EQ_INT(live_open(&lv, &opt), 0);
    DM_ASSERT_EQ_INT(live_start(&lv), 0);
    DM_ASSERT_EQ_INT(dm_fake_wait_replayed(30000), 0);
    dm_sleep_ms(50);
    dm_atomic_store_int(&lv.stop, DM_SINK_STOP_ASKED);
    lv.src.ops->stop(&lv.src);
    joined = dm_thread_join_timeout(lv.thr, 15000) == 0;
    DM_ASSERT(joined);
    if (!joined)
        return;
    unguarded = dm_etw_source_unguarded(&lv.src);
    lv.src.ops->close(&lv.src);
    evs = drain(lv.sink.ring, &n);
    free(evs);
    live_free(&lv);
    helper_names = dm_fake_helper_delivered();
    DM_ASSERT(helper_names > dm_fake_copy_records()); /* it trickled on */
    dm_fake_uninstall();
    DM_ASSERT_EQ_U64(n, 1208 + 21 + 2); /* README counts: all flushed */
    DM_ASSERT_EQ_INT(lv.run_rc, 0);
    DM_ASSERT_EQ_INT(unguarded, 0);
}

/* --- the real advapi32, only under Wine ----------------------------------- */

static int under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");

    return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

DM_TEST(real_api_under_wine_fails_cleanly)
{
    struct whole_run w;
    dm_thread *thr;
    char out_path[MAX_PATH + 64], err_path[MAX_PATH + 64], text[2048];
    int joined;

    if (!under_wine())
        DM_SKIP("not under Wine: the real ETW API would start a real kernel "
                "session (Wine's ETW is a stub whose OpenTrace fails)");
    dm_fake_uninstall(); /* dm_etw = the real advapi32 */
    memset(&w, 0, sizeof w);
    default_options(&w.opt, NULL);
    w.out = temp_file("wine_out", out_path, sizeof out_path);
    w.errf = temp_file("wine_err", err_path, sizeof err_path);
    DM_ASSERT(w.out != NULL && w.errf != NULL);
    dm_interrupt_clear();
    DM_ASSERT_EQ_INT(dm_thread_start(&thr, whole_run_thread, &w), 0);
    joined = dm_thread_join_timeout(thr, 20000) == 0;
    DM_ASSERT(joined);
    read_all(w.errf, text, sizeof text);
    fclose(w.out);
    fclose(w.errf);
    remove(out_path);
    remove(err_path);
    /* Wine 8: StartTrace "succeeds", OpenTrace fails with 5 (docs/etw.md
     * §5). */
    DM_ASSERT_EQ_INT(w.rc, DM_EXIT_ERROR);
    DM_ASSERT(strstr(text, "OpenTraceW") != NULL);
    DM_ASSERT(strstr(text, "error 5") != NULL);
    DM_ASSERT(strstr(text, "elevated") != NULL);
}

/* The volume extents read at start (etw_volumes.c), here through the real
 * Win32 calls: on Windows the machine's volumes, under Wine whatever its
 * mount manager answers (no disk extents): either way no crash, and the
 * decoder's map still takes a volume after it. */
DM_TEST(disk_volumes_read_at_start)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(10000000, 0, 10000000);

    DM_ASSERT(kd != NULL);
    dm_etw_add_disk_volumes(kd);
    DM_ASSERT_EQ_INT(dm_kdecoder_add_disk_volume(kd, 99, 0, 4096, "Z:"), 0);
    dm_kdecoder_destroy(kd);
}

const struct dmt_case dm_suite_etw[] = {
    {"disk_volumes_read_at_start", disk_volumes_read_at_start},
    {"start_and_replay_win8_sample", start_and_replay_win8_sample},
    {"start_and_replay_win11_sample", start_and_replay_win11_sample},
    {"filter_applies_in_callback", filter_applies_in_callback},
    {"already_exists_falls_back_to_private_logger", already_exists_falls_back_to_private_logger},
    {"both_sessions_exist_names_cleanup", both_sessions_exist_names_cleanup},
    {"already_exists_notice_on_stderr", already_exists_notice_on_stderr},
    {"win7_source_names_force", win7_source_names_force},
    {"force_stops_kernel_logger_then_starts", force_stops_kernel_logger_then_starts},
    {"win7_already_exists_names_force", win7_already_exists_names_force},
    {"init_events_only_before_win8", init_events_only_before_win8},
    {"access_denied_says_elevate", access_denied_says_elevate},
    {"out_of_sessions_says_logman", out_of_sessions_says_logman},
    {"open_trace_failure_stops_session", open_trace_failure_stops_session},
    {"process_trace_failure_stops_session", process_trace_failure_stops_session},
    {"session_stopped_from_outside_is_left_alone", session_stopped_from_outside_is_left_alone},
    {"stop_before_run_and_twice", stop_before_run_and_twice},
    {"file_names_from_start_win8", file_names_from_start_win8},
    {"file_names_from_start_win11", file_names_from_start_win11},
    {"rundown_toggle_failure_is_a_note", rundown_toggle_failure_is_a_note},
    {"private_session_names_from_own_handle", private_session_names_from_own_handle},
    {"private_session_names_from_rundown_helper", private_session_names_from_rundown_helper},
    {"private_session_without_helper_says_so", private_session_without_helper_says_so},
    {"force_retries_while_old_session_stops", force_retries_while_old_session_stops},
    {"force_gives_up_within_bound", force_gives_up_within_bound},
    {"force_takes_2402_as_stopping", force_takes_2402_as_stopping},
    {"force_denied_names_protected_owner", force_denied_names_protected_owner},
    {"clock_other_than_qpc_refused", clock_other_than_qpc_refused},
    {"rundown_toggle_restores_whole_group_mask", rundown_toggle_restores_whole_group_mask},
    {"leftover_recognised_across_processor_groups",
     leftover_recognised_across_processor_groups},
    {"private_fallback_1450_names_system_logger_cap", private_fallback_1450_names_system_logger_cap},
    {"pointer_size_fallback_is_os_bitness", pointer_size_fallback_is_os_bitness},
    {"ctrl_c_prints_queued_buffers", ctrl_c_prints_queued_buffers},
    {"count_limit_drops_queued_buffers", count_limit_drops_queued_buffers},
    {"outside_stop_exits_1", outside_stop_exits_1},
    {"loss_accounting", loss_accounting},
    {"cleanup_stops_leftover_session", cleanup_stops_leftover_session},
    {"ctrl_c_stops_session", ctrl_c_stops_session},
    {"blocked_printer_still_stops_session", blocked_printer_still_stops_session},
    {"one_io_then_silence_within_half_second", one_io_then_silence_within_half_second},
    {"two_busy_of_eight_cpus_none_late", two_busy_of_eight_cpus_none_late},
    {"one_io_then_silence_line_within_half_second", one_io_then_silence_line_within_half_second},
    {"rundown_100k_files_then_io_named", rundown_100k_files_then_io_named},
    {"outside_stop_then_ctrl_c_no_stop_by_name", outside_stop_then_ctrl_c_no_stop_by_name},
    {"cleanup_stops_leftover_kernel_logger_only", cleanup_stops_leftover_kernel_logger_only},
    {"start_recognises_leftover_kernel_logger", start_recognises_leftover_kernel_logger},
    {"lost_buffers_reported_as_buffers_exit_3", lost_buffers_reported_as_buffers_exit_3},
    {"one_io_within_half_second_whatever_the_flush_answer",
     one_io_within_half_second_whatever_the_flush_answer},
    {"start_rundown_only_after_open_trace", start_rundown_only_after_open_trace},
    {"info_lines_say_what_windows_answered", info_lines_say_what_windows_answered},
    {"leftover_recognised_in_both_flush_modes", leftover_recognised_in_both_flush_modes},
    {"outside_restart_flush_fallback_leaves_theirs_alone",
     outside_restart_flush_fallback_leaves_theirs_alone},
    {"final_flush_under_lock_while_helper_delivers", final_flush_under_lock_while_helper_delivers},
    {"real_api_under_wine_fails_cleanly", real_api_under_wine_fails_cleanly},
    {NULL, NULL},
};
