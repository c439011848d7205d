/*
 * test_top.c - --top: the interval rules, the (other) row, %util and aqu-sz
 * worked out by hand, the json keys, and the command line of --top/--by.
 * The whole path on the real traces is checked by tests/scripts/top.sh.
 */
#include "cli/options.h"
#include "views/top.h"
#include "views/top_render.h"
#include "dmtest.h"

#define MS 1000000ull

/* What the emit callback saw. */
struct seen {
    int intervals;
    uint64_t start_ns[16], end_ns[16];
    int gap[16];
    int counts_only[16];
    int n_rows[16];
    struct dm_top_group rows[16][4]; /* the first rows of each interval */
    struct dm_top_group last_row[16];
};

static void record(void *ctx, const struct dm_top_interval *iv)
{
    struct seen *s = ctx;
    int i = s->intervals++;

    if (i >= 16)
        return;
    s->start_ns[i] = iv->start_ns;
    s->end_ns[i] = iv->end_ns;
    s->gap[i] = iv->gap;
    s->counts_only[i] = iv->counts_only;
    s->n_rows[i] = iv->n_rows;
    for (int r = 0; r < iv->n_rows && r < 4; r++) {
        s->rows[i][r] = *iv->rows[r];
        s->rows[i][r].busy.spans = NULL;
    }
    if (iv->n_rows > 0) {
        s->last_row[i] = *iv->rows[iv->n_rows - 1];
        s->last_row[i].busy.spans = NULL;
    }
}

static struct dm_event req(uint64_t time_ns, uint64_t dur_ns, int request, uint32_t pid)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.time_ns = time_ns;
    ev.duration_ns = dur_ns;
    ev.request = (uint8_t)request;
    ev.transfer_size = request == DM_REQ_FLUSH ? 0 : 4096;
    ev.pid = pid;
    ev.flags = DM_EV_HAS_PID | DM_EV_HAS_PROCESS;
    /* Names that outlive the event (diskmon.h: the source's storage). */
    static char names[512][16];
    snprintf(names[pid % 512], sizeof names[0], "p%u", (unsigned)pid);
    ev.process = names[pid % 512];
    ev.disk_name = ev.file = "";
    return ev;
}

/*
 * Interval 0 (1 s), disk 0, requests as [start, end) in ms:
 *   [100,300) [200,400) [600,700) [850,900), then [50,750) arriving late.
 * The last one joins the first three: union [50,750) + [850,900) = 750 ms,
 * %util 75.00. aqu-sz: 200+200+100+50+700 = 1250 ms / 1000 ms = 1.250.
 * Interval 1: [700,1200) is clipped to [1000,1200): 200 ms, 20.00 %, 0.200.
 */
DM_TEST(util_and_queue_by_hand)
{
    struct seen s;
    struct dm_top *t;
    struct dm_event evs[] = {
        req(300 * MS, 200 * MS, DM_REQ_READ, 1),  req(400 * MS, 200 * MS, DM_REQ_WRITE, 1),
        req(700 * MS, 100 * MS, DM_REQ_READ, 2),  req(900 * MS, 50 * MS, DM_REQ_FLUSH, 2),
        req(750 * MS, 700 * MS, DM_REQ_READ, 3),  req(1200 * MS, 500 * MS, DM_REQ_WRITE, 3),
    };

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_DISK, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        DM_ASSERT_EQ_INT(dm_top_add(t, &evs[i], 0), 0);
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 2);
    DM_ASSERT_EQ_INT(s.n_rows[0], 1);
    DM_ASSERT_STR_EQ(s.rows[0][0].disk, "0");
    DM_ASSERT_EQ_U64(s.rows[0][0].reads, 3);
    DM_ASSERT_EQ_U64(s.rows[0][0].writes, 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].flushes, 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].busy_ns, 750 * MS);
    DM_ASSERT_EQ_U64(s.rows[0][0].overlap_ns, 1250 * MS);
    DM_ASSERT_EQ_U64(s.rows[0][0].max_ns, 700 * MS);
    DM_ASSERT_EQ_U64(s.rows[0][0].read_latency_ns, 1000 * MS);
    DM_ASSERT_EQ_U64(s.start_ns[1], 1000 * MS);
    DM_ASSERT_EQ_U64(s.rows[1][0].busy_ns, 200 * MS);
    DM_ASSERT_EQ_U64(s.rows[1][0].overlap_ns, 200 * MS);
}

/* --by partition: a row per partition of each disk, and the disk's own row
 * (partition "") for the requests in none; the same partition name on two
 * disks is two rows. The bytes by hand. */
DM_TEST(by_partition_rows)
{
    struct seen s;
    struct dm_top *t;
    struct dm_event evs[5];
    const char *disk[5] = {"sda", "sda", "sda", "sdb", "sda"};
    const char *part[5] = {"sda1", "sda2", "", "sda1", "sda1"};

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_PARTITION, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (int i = 0; i < 5; i++) {
        evs[i] = req((uint64_t)(100 + i) * MS, MS, DM_REQ_WRITE, (uint32_t)i + 1);
        evs[i].disk_name = disk[i];
        evs[i].partition = part[i];
        evs[i].transfer_size = 4096u << i;
        DM_ASSERT_EQ_INT(dm_top_add(t, &evs[i], 0), 0);
    }
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT_EQ_INT(s.n_rows[0], 4);
    /* by bytes: sda1 (4 KiB + 64 KiB), sdb's sda1 (32 KiB), sda whole
     * (16 KiB), sda2 (8 KiB) */
    DM_ASSERT_STR_EQ(s.rows[0][0].partition, "sda1");
    DM_ASSERT_STR_EQ(s.rows[0][0].disk, "sda");
    DM_ASSERT_EQ_U64(s.rows[0][0].write_bytes, 4096u + 65536u);
    DM_ASSERT_STR_EQ(s.rows[0][1].disk, "sdb");
    DM_ASSERT_EQ_U64(s.rows[0][1].write_bytes, 32768u);
    DM_ASSERT_STR_EQ(s.rows[0][2].partition, "");
    DM_ASSERT_STR_EQ(s.rows[0][2].disk, "sda");
    DM_ASSERT_EQ_U64(s.rows[0][2].write_bytes, 16384u);
    DM_ASSERT_STR_EQ(s.rows[0][3].partition, "sda2");
    DM_ASSERT_EQ_U64(s.rows[0][3].write_bytes, 8192u);
}

/*
 * The busy-span union against brute force: 3000 requests of random start
 * and length (whole microseconds, some reaching back before the interval)
 * in random completion order; every microsecond of the interval is marked
 * busy or not by hand and counted.
 */
DM_TEST(util_random_against_bitmap)
{
    enum { US = 1000000 }; /* microseconds in the 1 s interval */
    static unsigned char busy[US];
    struct seen s;
    struct dm_top *t;
    uint64_t want = 0, overlap = 0;
    uint32_t x = 12345; /* xorshift32: the same numbers on every run */

    memset(busy, 0, sizeof busy);
    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_DISK, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (int i = 0; i < 3000; i++) {
        uint64_t end_us, len_us, start_us;
        struct dm_event ev;

        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        end_us = 1000000 + x % US;   /* interval 1: [1 s, 2 s) */
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        len_us = x % 2000 + (i % 97 == 0 ? 400000 : 0);
        start_us = end_us - len_us;
        ev = req(end_us * 1000, len_us * 1000, DM_REQ_READ, 1);
        DM_ASSERT_EQ_INT(dm_top_add(t, &ev, 0), 0);
        for (uint64_t u = start_us < 1000000 ? 1000000 : start_us; u < end_us; u++) {
            busy[u - 1000000] = 1;
            overlap++;
        }
    }
    dm_top_finish(t);
    dm_top_destroy(t);
    for (int u = 0; u < US; u++)
        want += busy[u];
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].busy_ns, want * 1000);
    DM_ASSERT_EQ_U64(s.rows[0][0].overlap_ns, overlap * 1000);
    DM_ASSERT(want > 0 && want < US); /* neither empty nor all busy */
}

/* 300 processes in one interval: the first 256 get rows, the other 44 are
 * one (other) row, last; the rows are sorted by bytes. */
DM_TEST(bounded_groups_other_row)
{
    struct seen s;
    struct dm_top *t;

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (uint32_t pid = 0; pid < 300; pid++) {
        struct dm_event ev = req(10 * MS, MS, DM_REQ_READ, pid);

        ev.transfer_size = 512 * (pid + 1);
        dm_top_add(t, &ev, 0);
    }
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT_EQ_INT(s.n_rows[0], DM_TOP_GROUPS_MAX + 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].pid, 255);
    DM_ASSERT_EQ_U64(s.rows[0][1].pid, 254);
    DM_ASSERT(s.last_row[0].is_other);
    DM_ASSERT_EQ_U64(s.last_row[0].reads, 44);
    /* pids 256..299: 512 * (257 + ... + 300) bytes */
    DM_ASSERT_EQ_U64(s.last_row[0].read_bytes, 512ull * (257 + 300) * 44 / 2);
}

/* Replay skips empty intervals; live draws them (and ticks close them). A
 * discard is not counted. */
DM_TEST(empty_intervals_live_and_replay)
{
    struct seen s;
    struct dm_top *t;
    struct dm_event a = req(500 * MS, MS, DM_REQ_READ, 7);
    struct dm_event b = req(3500 * MS, MS, DM_REQ_WRITE, 7);
    struct dm_event d = req(3600 * MS, MS, DM_REQ_DISCARD, 7);

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, &s);
    dm_top_add(t, &a, 0);
    dm_top_add(t, &b, 0);
    dm_top_add(t, &d, 0);
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 2);
    DM_ASSERT_EQ_U64(s.start_ns[1], 3000 * MS);
    DM_ASSERT_EQ_U64(s.rows[1][0].writes, 1);
    DM_ASSERT_EQ_U64(s.rows[1][0].reads, 0);

    /* Live: 1 and 2 are empty, drawn once as a gap [1 s, 3 s); 3 has b;
     * the tick closes 3 and the one empty interval 4, drawn as usual. */
    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, &s);
    dm_top_add(t, &a, 1);
    dm_top_add(t, &b, 1);
    dm_top_tick(t, 5200 * MS); /* closes 3 (one row) and 4 (none) */
    dm_top_finish(t);         /* 5 is empty: nothing more */
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 4);
    DM_ASSERT_EQ_INT(s.n_rows[1], 0);
    DM_ASSERT(s.gap[1]);
    DM_ASSERT_EQ_U64(s.start_ns[1], 1000 * MS);
    DM_ASSERT_EQ_U64(s.end_ns[1], 3000 * MS);
    DM_ASSERT_EQ_INT(s.n_rows[2], 1);
    DM_ASSERT(!s.gap[2]);
    DM_ASSERT_EQ_INT(s.n_rows[3], 0);
    DM_ASSERT(!s.gap[3]);
    DM_ASSERT_EQ_U64(s.start_ns[3], 4000 * MS);
}

/* The run stops 12 ms into interval 6 (--top -t 6.012): that last
 * interval is cut to [6 s, 6.012 s) and, under a tenth of the interval,
 * marked for counts, not rates; a cut at exactly a tenth keeps its rates. */
DM_TEST(short_last_interval_counts_only)
{
    static const struct {
        uint64_t end_ms;
        int counts_only;
    } cuts[] = {{6012, 1}, {6099, 1}, {6100, 0}, {6500, 0}};

    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        struct seen s;
        struct dm_top *t;
        struct dm_event a = req(5500 * MS, MS, DM_REQ_READ, 7);
        struct dm_event b = req(6005 * MS, MS, DM_REQ_WRITE, 7);

        memset(&s, 0, sizeof s);
        t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, &s);
        dm_top_add(t, &a, 0);
        dm_top_add(t, &b, 0);
        dm_top_finish_at(t, cuts[i].end_ms * MS, 0);
        dm_top_destroy(t);
        DM_ASSERT_EQ_INT(s.intervals, 2);
        DM_ASSERT(!s.counts_only[0]);
        DM_ASSERT_EQ_U64(s.start_ns[1], 6000 * MS);
        DM_ASSERT_EQ_U64(s.end_ns[1], cuts[i].end_ms * MS);
        DM_ASSERT_EQ_U64(s.rows[1][0].writes, 1);
        DM_ASSERT_EQ_INT(s.counts_only[1], cuts[i].counts_only);
    }
}

/* Live --top at 1 ms after the clock jumped 10 hours (suspend and resume):
 * one interval for the whole gap, not 36 million, and the blocks say how
 * long it was in the time line. */
DM_TEST(time_jump_one_gap_interval)
{
    struct seen s;
    struct dm_top *t;
    struct dm_event a = req(MS / 2, MS / 4, DM_REQ_READ, 7);
    const uint64_t jump = 36000ull * 1000 * MS;
    struct dm_top_view v;
    struct dm_top_interval iv;
    char buf[4096];
    size_t n;

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_PROCESS, MS, record, &s);
    dm_top_add(t, &a, 1);
    dm_top_tick(t, jump + MS / 2); /* now inside interval 36,000,000 */
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 2);
    DM_ASSERT_EQ_INT(s.n_rows[0], 1);
    DM_ASSERT(!s.gap[0]);
    DM_ASSERT(s.gap[1]);
    DM_ASSERT_EQ_U64(s.start_ns[1], MS);
    DM_ASSERT_EQ_U64(s.end_ns[1], jump);

    memset(&iv, 0, sizeof iv);
    iv.start_ns = MS;
    iv.end_ns = jump;
    iv.gap = 1;
    iv.by = DM_TOP_BY_PROCESS;
    memset(&v, 0, sizeof v);
    v.mode = DM_TOP_BLOCKS;
    v.by = DM_TOP_BY_PROCESS;
    dm_top_render(&v, &iv, 0);
    n = v.out.len < sizeof buf - 1 ? v.out.len : sizeof buf - 1;
    memcpy(buf, v.out.data != NULL ? v.out.data : "", n);
    buf[n] = '\0';
    dm_text_free(&v.out);
    /* time line, titles, the empty line after the block */
    DM_ASSERT(strstr(buf, "0.001-36000.000 s: 0.0 reads/s") == buf);
    DM_ASSERT(strstr(buf, "a gap of 35999.999 s drawn as one interval") != NULL);
    DM_ASSERT(strstr(buf, "\n") < strstr(buf, "PID"));
}

/* --by disk keeps memory bounded: 5 million separate 1 us requests, 1 us
 * apart, in one 20 s interval keep at most DM_TOP_SPANS_MAX spans (80 MB
 * before), and %util stays exact: 5 s busy of 20. A request in flight across
 * the last 100 of them still merges them. */
DM_TEST(disk_spans_bounded)
{
    struct seen s;
    struct dm_top *t;
    const uint64_t us = 1000, n = 5000000;

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_DISK, 20000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (uint64_t i = 0; i < n; i++) {
        struct dm_event ev = req((2 * i + 1) * us, us, DM_REQ_READ, 1);

        DM_ASSERT_EQ_INT(dm_top_add(t, &ev, 0), 0);
    }
    {   /* [2(n-100) us, 2n us): covers the last 100 and their gaps */
        struct dm_event ev = req(2 * n * us, 200 * us, DM_REQ_WRITE, 1);

        DM_ASSERT_EQ_INT(dm_top_add(t, &ev, 0), 0);
    }
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT(s.rows[0][0].busy.cap <= DM_TOP_SPANS_MAX);
    DM_ASSERT_EQ_U64(s.rows[0][0].busy_ns, (n - 100) * us + 200 * us);
    DM_ASSERT_EQ_U64(s.rows[0][0].reads, n);
}

/* The json row of --by disk: the key names, exact figures. */
DM_TEST(json_disk_row)
{
    struct dm_top_group g;
    const struct dm_top_group *rows[1] = {&g};
    struct dm_top_interval iv;
    struct dm_top_view v;
    char text[1024];
    size_t n;

    memset(&g, 0, sizeof g);
    snprintf(g.disk, sizeof g.disk, "sda");
    g.reads = 3;
    g.writes = 1;
    g.read_bytes = 12288;
    g.write_bytes = 4096;
    g.latency_ns = 10 * MS + 1;  /* / 4 = 2.50000025 ms: 2.500000 */
    g.max_ns = 7 * MS;
    g.read_latency_ns = 2 * MS;  /* / 3 = 666666.67 ns: 0.666667 ms */
    g.write_latency_ns = 8 * MS;
    g.overlap_ns = 1234500 * 1000ull; /* / 2 s = 0.61725: 0.617 */
    g.busy_ns = 333335 * 1000ull;     /* 16.66675 %: 16.67 */
    memset(&iv, 0, sizeof iv);
    iv.start_ns = 2000 * MS;
    iv.end_ns = 4000 * MS;
    iv.by = DM_TOP_BY_DISK;
    iv.rows = rows;
    iv.n_rows = 1;
    memset(&v, 0, sizeof v);
    v.mode = DM_TOP_JSON;
    v.by = DM_TOP_BY_DISK;
    dm_top_render(&v, &iv, 0);
    n = v.out.len < sizeof text - 1 ? v.out.len : sizeof text - 1;
    memcpy(text, v.out.data != NULL ? v.out.data : "", n);
    text[n] = '\0';
    dm_text_free(&v.out);
    DM_ASSERT_STR_EQ(text,
        "{\"interval_start\":2.000000000,\"interval_end\":4.000000000,\"disk\":\"sda\","
        "\"reads\":3,\"writes\":1,\"flushes\":0,\"read_bytes\":12288,\"write_bytes\":4096,"
        "\"avg_ms\":2.500000,\"max_ms\":7.000000,\"r_await_ms\":0.666667,"
        "\"w_await_ms\":8.000000,\"aqu_sz\":0.617,\"util_pct\":16.67}\n");
}

/* The commit of docs/linux-live.md "Flushes that ride on writes": flush,
 * preflush|fua write, flush. Two flushes (the device's), one write. */
DM_TEST(preflush_write_is_one_write)
{
    struct seen s;
    struct dm_top *t;
    struct dm_event evs[] = {
        req(100 * MS, 2 * MS, DM_REQ_FLUSH, 7),
        req(101 * MS, 3 * MS, DM_REQ_WRITE, 8),
        req(102 * MS, 1 * MS, DM_REQ_FLUSH, 7),
    };

    evs[0].req_flags = evs[2].req_flags = DM_RQ_PREFLUSH;
    evs[1].req_flags = DM_RQ_PREFLUSH | DM_RQ_FUA;
    evs[1].transfer_size = 1024;
    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_DISK, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        DM_ASSERT_EQ_INT(dm_top_add(t, &evs[i], 0), 0);
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT_EQ_INT(s.n_rows[0], 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].writes, 1);
    DM_ASSERT_EQ_U64(s.rows[0][0].write_bytes, 1024);
    DM_ASSERT_EQ_U64(s.rows[0][0].flushes, 2);
    DM_ASSERT_EQ_U64(s.rows[0][0].write_latency_ns, 3 * MS);
}

/* --by cgroup: one row per cgroup, whichever processes issued its I/O;
 * the csv key column is the path (empty when unknown). */
DM_TEST(by_cgroup_rows_and_csv)
{
    static const char *const in[] = {"/a", "/a/b", "/a", "", "/a"};
    struct dm_top_group g;
    const struct dm_top_group *rows[1] = {&g};
    struct dm_top_interval iv;
    struct dm_top_view v;
    struct seen s;
    struct dm_top *t;
    char text[1024];
    size_t n;

    memset(&s, 0, sizeof s);
    t = dm_top_create(DM_TOP_BY_CGROUP, 1000 * MS, record, &s);
    DM_ASSERT(t != NULL);
    for (uint32_t i = 0; i < 5; i++) {
        struct dm_event ev = req(10 * MS, MS, DM_REQ_WRITE, 100 + i);

        ev.cgroup = in[i];
        dm_top_add(t, &ev, 0);
    }
    dm_top_finish(t);
    dm_top_destroy(t);
    DM_ASSERT_EQ_INT(s.intervals, 1);
    DM_ASSERT_EQ_INT(s.n_rows[0], 3);
    DM_ASSERT_STR_EQ(s.rows[0][0].cgroup, "/a");
    DM_ASSERT_EQ_U64(s.rows[0][0].writes, 3);
    DM_ASSERT_EQ_U64(s.rows[0][0].write_bytes, 3 * 4096);
    DM_ASSERT_EQ_U64(s.rows[0][1].writes + s.rows[0][2].writes, 2);

    g = s.rows[0][0];
    memset(&iv, 0, sizeof iv);
    iv.end_ns = 1000 * MS;
    iv.by = DM_TOP_BY_CGROUP;
    iv.rows = rows;
    iv.n_rows = 1;
    memset(&v, 0, sizeof v);
    v.mode = DM_TOP_CSV;
    v.by = DM_TOP_BY_CGROUP;
    dm_top_render_begin(&v);
    dm_top_render(&v, &iv, 0);
    n = v.out.len < sizeof text - 1 ? v.out.len : sizeof text - 1;
    memcpy(text, v.out.data != NULL ? v.out.data : "", n);
    text[n] = '\0';
    dm_text_free(&v.out);
    DM_ASSERT(strstr(text, "interval_start,interval_end,cgroup,") == text);
    DM_ASSERT(strstr(text, "\r\n0.000000000,1.000000000,/a,0,3,0,0,12288,") != NULL);
}

static int parse(struct dm_options *o, int argc, const char *const *args)
{
    char *argv[8];
    char copies[8][32];
    char err[256];

    for (int i = 0; i < argc; i++) {
        snprintf(copies[i], sizeof copies[i], "%s", args[i]);
        argv[i] = copies[i];
    }
    return dm_options_parse(o, argc, argv, err, sizeof err);
}

DM_TEST(command_line)
{
    struct dm_options o;
    const char *plain[] = {"diskmon", "--top"};
    const char *half[] = {"diskmon", "--top", "0.5", "--by", "DISK"};
    const char *eq[] = {"diskmon", "--top=2", "-s"};
    const char *then_opt[] = {"diskmon", "--top", "-s"};
    const char *zero[] = {"diskmon", "--top", "0"};
    const char *abc[] = {"diskmon", "--top", "abc"};
    const char *with_n[] = {"diskmon", "--top", "-n", "5"};
    const char *by_alone[] = {"diskmon", "--by", "disk"};
    const char *by_bad[] = {"diskmon", "--top", "--by", "thread"};
    const char *by_part[] = {"diskmon", "--top", "--by", "partition"};
    const char *too_long[] = {"diskmon", "--top", "86401"};

    DM_ASSERT_EQ_INT(parse(&o, 2, plain), 0);
    DM_ASSERT_EQ_U64(o.top_ns, 1000 * MS);
    DM_ASSERT_EQ_INT(o.top_by, DM_TOP_BY_PROCESS);
    DM_ASSERT_EQ_INT(parse(&o, 5, half), 0);
    DM_ASSERT_EQ_U64(o.top_ns, 500 * MS);
    DM_ASSERT_EQ_INT(o.top_by, DM_TOP_BY_DISK);
    DM_ASSERT_EQ_INT(parse(&o, 3, eq), 0);
    DM_ASSERT_EQ_U64(o.top_ns, 2000 * MS);
    DM_ASSERT_EQ_INT(parse(&o, 3, then_opt), 0);
    DM_ASSERT_EQ_U64(o.top_ns, 1000 * MS);
    DM_ASSERT_EQ_INT(o.summary, 1);
    DM_ASSERT_EQ_INT(parse(&o, 3, zero), DM_EUSAGE);
    DM_ASSERT_EQ_INT(parse(&o, 3, abc), DM_EUSAGE);
    DM_ASSERT_EQ_INT(parse(&o, 4, with_n), DM_EUSAGE);
    DM_ASSERT_EQ_INT(parse(&o, 3, by_alone), DM_EUSAGE);
    DM_ASSERT_EQ_INT(parse(&o, 4, by_bad), DM_EUSAGE);
    DM_ASSERT_EQ_INT(parse(&o, 4, by_part), 0);
    DM_ASSERT_EQ_INT(o.top_by, DM_TOP_BY_PARTITION);
    DM_ASSERT_EQ_INT(parse(&o, 3, too_long), DM_EUSAGE);
}

const struct dmt_case dm_suite_top[] = {
    {"preflush_write_is_one_write", preflush_write_is_one_write},
    {"by_cgroup_rows_and_csv", by_cgroup_rows_and_csv},
    {"by_partition_rows", by_partition_rows},
    {"util_and_queue_by_hand", util_and_queue_by_hand},
    {"util_random_against_bitmap", util_random_against_bitmap},
    {"bounded_groups_other_row", bounded_groups_other_row},
    {"empty_intervals_live_and_replay", empty_intervals_live_and_replay},
    {"time_jump_one_gap_interval", time_jump_one_gap_interval},
    {"short_last_interval_counts_only", short_last_interval_counts_only},
    {"disk_spans_bounded", disk_spans_bounded},
    {"json_disk_row", json_disk_row},
    {"command_line", command_line},
    {NULL, NULL},
};
