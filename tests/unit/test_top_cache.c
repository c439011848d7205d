/*
 * test_top_cache.c - the Cache-W column of --top --by process
 * (views/top_cache.h) over a fake struct dm_task_io whose processes and
 * counts each case sets between two intervals: growth under a row with
 * block I/O and in a row of its own, a reused pid, a new process, a
 * reaped child settled with its parent (in the same scan and one late),
 * a pid reused by a process that wrote more, the csv and json fields, and
 * the one note (and no column) of a kernel without task I/O accounting. The real /proc is checked by
 * tests/scripts/linux_pagecache.sh.
 */
#include "views/top.h"
#include "views/top_cache.h"
#include "views/top_render.h"
#include "views/view.h"
#include "dmtest.h"

#define MS 1000000ull
#define PROCS_MAX 8

/* The fake machine: the processes a scan sees now. */
static struct fake_proc {
    uint32_t pid, ppid;
    uint64_t bytes;
    uint64_t start;  /* a new process on the same pid gets another */
    int alive;
} procs[PROCS_MAX];

static long fake_scan(void (*each)(void *arg, uint32_t pid, uint64_t bytes), void *arg)
{
    long n = 0;

    for (int i = 0; i < PROCS_MAX; i++) {
        if (procs[i].alive) {
            each(arg, procs[i].pid, procs[i].bytes);
            n++;
        }
    }
    return n;
}

static int fake_about(uint32_t pid, uint32_t *ppid, uint64_t *start, char *name,
                      size_t cap)
{
    for (int i = 0; i < PROCS_MAX; i++) {
        if (procs[i].alive && procs[i].pid == pid) {
            *ppid = procs[i].ppid;
            *start = procs[i].start;
            snprintf(name, cap, "w%u", (unsigned)pid);
            return 0;
        }
    }
    return -1;
}

static int fake_probe(char *why, size_t cap)
{
    (void)why;
    (void)cap;
    return 0;
}

static const struct dm_task_io fake_io = {fake_probe, fake_scan, fake_about};

static void set_proc(int slot, uint32_t pid, uint32_t ppid, uint64_t bytes, int alive)
{
    procs[slot].pid = pid;
    procs[slot].ppid = ppid;
    procs[slot].bytes = bytes;
    procs[slot].alive = alive;
}

/* The last interval closed: each row's pid, name and figures. */
static struct last {
    int n_rows;
    struct dm_top_group rows[PROCS_MAX];
    uint64_t total;
    int has_cache_writes;
} last;

static void record(void *ctx, const struct dm_top_interval *iv)
{
    (void)ctx;
    memset(&last, 0, sizeof last);
    for (int i = 0; i < iv->n_rows && i < PROCS_MAX; i++) {
        last.rows[i] = *iv->rows[i];
        last.rows[i].busy.spans = NULL;
    }
    last.n_rows = iv->n_rows;
    last.total = iv->cache_write_bytes;
    last.has_cache_writes = iv->has_cache_writes;
}

static const struct dm_top_group *row_of(uint32_t pid)
{
    for (int i = 0; i < last.n_rows; i++)
        if (last.rows[i].has_pid && last.rows[i].pid == pid)
            return &last.rows[i];
    return NULL;
}

static struct dm_event block_write(uint64_t time_ns, uint32_t pid)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.time_ns = time_ns;
    ev.request = DM_REQ_WRITE;
    ev.transfer_size = 4096;
    ev.pid = pid;
    ev.flags = DM_EV_HAS_PID | DM_EV_HAS_PROCESS;
    ev.process = "blk";
    ev.disk_name = ev.file = "";
    return ev;
}

DM_TEST(growth_rows_reuse_and_reaped_children)
{
    struct dm_top *t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, NULL);
    struct dm_top_cache *c;
    struct dm_event ev;
    const struct dm_top_group *g;

    DM_REQUIRE(t != NULL, "out of memory");
    memset(procs, 0, sizeof procs);
    set_proc(0, 10, 1, 100, 1);   /* issues block I/O too */
    set_proc(1, 20, 1, 0, 1);     /* writes into the cache only */
    set_proc(2, 30, 1, 9999, 1);  /* writes nothing during the run */
    set_proc(3, 50, 60, 1000, 1); /* a child of 60 ... */
    set_proc(4, 60, 1, 0, 1);     /* ... which writes nothing itself */
    c = dm_top_cache_create(&fake_io);
    DM_REQUIRE(c != NULL, "out of memory");
    dm_top_set_fill(t, dm_top_cache_fill, c);

    /* Interval 0: 10 grows by 5000 beside its block write, 20 by 3000. */
    ev = block_write(500 * MS, 10);
    dm_top_add(t, &ev, 1);
    procs[0].bytes += 5000;
    procs[1].bytes += 3000;
    dm_top_tick(t, 1000 * MS);
    DM_ASSERT_EQ_INT(last.has_cache_writes, 1);
    DM_ASSERT_EQ_INT(last.n_rows, 2);
    g = row_of(10);
    DM_ASSERT(g != NULL);
    DM_ASSERT_EQ_U64(g->cache_write_bytes, 5000);
    DM_ASSERT_EQ_U64(g->write_bytes, 4096);
    g = row_of(20);
    DM_ASSERT(g != NULL);
    DM_ASSERT_EQ_U64(g->cache_write_bytes, 3000);
    DM_ASSERT_STR_EQ(g->process, "w20");
    DM_ASSERT_EQ_U64(g->writes, 0);
    DM_ASSERT_EQ_U64(last.total, 8000);

    /* Interval 1: pid 20 is a new process (its count went down to 100);
     * 40 is new with 700; 50 ended having written 400 more, and its
     * parent 60's count took in all 1400 of it. */
    set_proc(1, 20, 1, 100, 1);
    set_proc(5, 40, 1, 700, 1);
    procs[3].alive = 0;
    procs[4].bytes = 1400;
    dm_top_tick(t, 2000 * MS);
    DM_ASSERT_EQ_U64(row_of(20)->cache_write_bytes, 100);
    DM_ASSERT_EQ_U64(row_of(40)->cache_write_bytes, 700);
    g = row_of(50);
    DM_ASSERT(g != NULL);
    DM_ASSERT_EQ_U64(g->cache_write_bytes, 400);
    DM_ASSERT_STR_EQ(g->process, "w50");
    DM_ASSERT(row_of(60) == NULL);
    DM_ASSERT(row_of(30) == NULL);
    DM_ASSERT_EQ_U64(last.total, 1200);

    /* Intervals 2 and 3: 40 ends, and 60's count grows by all of 40's
     * (1000) and 50 of its own, a scan later. 40's parent was asked once,
     * when 40 first wrote: 1, which is not in the scan (a reaper that
     * took it in after its parent ended), so nothing settles 40: 60 shows
     * all of its growth. */
    procs[5].ppid = 60;
    procs[5].alive = 0;
    dm_top_tick(t, 3000 * MS);
    DM_ASSERT_EQ_INT(last.n_rows, 0);
    procs[4].bytes += 1000 + 50;
    dm_top_tick(t, 4000 * MS);
    DM_ASSERT_EQ_INT(last.n_rows, 1);
    DM_ASSERT_EQ_U64(row_of(60)->cache_write_bytes, 1050);
    dm_top_cache_destroy(c);
    dm_top_destroy(t);
}

DM_TEST(late_reap_settled)
{
    struct dm_top *t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, NULL);
    struct dm_top_cache *c;

    DM_REQUIRE(t != NULL, "out of memory");
    memset(procs, 0, sizeof procs);
    set_proc(0, 70, 80, 0, 1);
    set_proc(1, 80, 1, 0, 1);
    c = dm_top_cache_create(&fake_io);
    DM_REQUIRE(c != NULL, "out of memory");
    dm_top_set_fill(t, dm_top_cache_fill, c);
    procs[0].bytes = 2000;
    dm_top_tick(t, 1000 * MS);
    DM_ASSERT_EQ_U64(row_of(70)->cache_write_bytes, 2000);
    /* 70 ends after 500 more, and its parent reaps it only after this scan:
     * 80's count grows by 70's whole 2500 in the next, of which 2000 were
     * shown under 70 already and 500 are its last. */
    procs[0].alive = 0;
    dm_top_tick(t, 2000 * MS);
    DM_ASSERT_EQ_INT(last.n_rows, 0);
    procs[1].bytes = 2500;
    dm_top_tick(t, 3000 * MS);
    DM_ASSERT_EQ_INT(last.n_rows, 1);
    DM_ASSERT_EQ_U64(row_of(70)->cache_write_bytes, 500);
    DM_ASSERT_EQ_U64(last.total, 500);
    dm_top_cache_destroy(c);
    dm_top_destroy(t);
}

/* A process ends and a new one takes its pid within one interval, and
 * writes more than it had: told apart by its start, so its whole count is
 * new, and the ended one is settled with its parent. */
DM_TEST(reused_pid_with_a_higher_count)
{
    struct dm_top *t = dm_top_create(DM_TOP_BY_PROCESS, 1000 * MS, record, NULL);
    struct dm_top_cache *c;

    DM_REQUIRE(t != NULL, "out of memory");
    memset(procs, 0, sizeof procs);
    set_proc(0, 90, 91, 0, 1);
    set_proc(1, 91, 1, 0, 1);
    c = dm_top_cache_create(&fake_io);
    DM_REQUIRE(c != NULL, "out of memory");
    dm_top_set_fill(t, dm_top_cache_fill, c);
    procs[0].bytes = 1000;
    dm_top_tick(t, 1000 * MS);
    DM_ASSERT_EQ_U64(row_of(90)->cache_write_bytes, 1000);
    /* 90 wrote 200 more, ended and was reaped by 91; a new 90 (another
     * start) wrote 5000. */
    procs[1].bytes = 1200;
    set_proc(0, 90, 91, 5000, 1);
    procs[0].start = 7;
    dm_top_tick(t, 2000 * MS);
    DM_ASSERT_EQ_INT(last.n_rows, 1);
    DM_ASSERT_EQ_U64(row_of(90)->cache_write_bytes, 5000 + 200);
    DM_ASSERT_EQ_U64(last.total, 5200);
    dm_top_cache_destroy(c);
    dm_top_destroy(t);
}

static void render(struct dm_top_view *v, const struct dm_top_interval *iv, char *text,
                   size_t cap)
{
    size_t n;

    dm_top_render_begin(v);
    dm_top_render(v, iv, 0);
    n = v->out.len < cap - 1 ? v->out.len : cap - 1;
    memcpy(text, v->out.data != NULL ? v->out.data : "", n);
    text[n] = '\0';
    dm_text_free(&v->out);
}

DM_TEST(csv_and_json_fields)
{
    struct dm_top_group g;
    const struct dm_top_group *rows[1] = {&g};
    struct dm_top_interval iv;
    struct dm_top_view v;
    char text[1024];

    memset(&g, 0, sizeof g);
    g.has_pid = g.has_process = 1;
    g.pid = 7;
    snprintf(g.process, sizeof g.process, "tar");
    g.cache_write_bytes = 1048576;
    memset(&iv, 0, sizeof iv);
    iv.end_ns = 1000 * MS;
    iv.by = DM_TOP_BY_PROCESS;
    iv.rows = rows;
    iv.n_rows = 1;
    iv.has_cache_writes = 1;
    memset(&v, 0, sizeof v);
    v.mode = DM_TOP_CSV;
    v.cache_writes = 1;
    render(&v, &iv, text, sizeof text);
    DM_ASSERT_STR_EQ(text,
        "interval_start,interval_end,pid,process,reads,writes,flushes,read_bytes,"
        "write_bytes,cache_write_bytes,avg_ms,max_ms\r\n"
        "0.000000000,1.000000000,7,tar,0,0,0,0,0,1048576,0.000000,0.000000\r\n");
    v.mode = DM_TOP_JSON;
    render(&v, &iv, text, sizeof text);
    DM_ASSERT_STR_EQ(text,
        "{\"interval_start\":0.000000000,\"interval_end\":1.000000000,\"pid\":7,"
        "\"process\":\"tar\",\"reads\":0,\"writes\":0,\"flushes\":0,\"read_bytes\":0,"
        "\"write_bytes\":0,\"cache_write_bytes\":1048576,\"avg_ms\":0.000000,"
        "\"max_ms\":0.000000}\n");
    /* Without the column (replay): the fields of before. */
    v.mode = DM_TOP_CSV;
    v.cache_writes = 0;
    iv.has_cache_writes = 0;
    render(&v, &iv, text, sizeof text);
    DM_ASSERT(strstr(text, "cache_write") == NULL);
}

static int no_accounting(char *why, size_t cap)
{
    snprintf(why, cap, "/proc/self/io: No such file or directory");
    return DM_ENOTFOUND;
}

static const struct dm_task_io absent_io = {no_accounting, fake_scan, fake_about};

static uint64_t none_dropped(const void *ctx)
{
    (void)ctx;
    return 0;
}

/* The view as the pipeline builds it, live --by process -f csv with io:
 * the csv header it drew and what it said on errf. */
static int view_start(const struct dm_task_io *io, int live, char *header, size_t hcap,
                      char *said, size_t scap)
{
    struct dm_view_config cfg;
    struct dm_text drawn;
    void *view = NULL;
    FILE *errf = tmpfile();
    size_t n;
    int rc;

    if (errf == NULL)
        return -1;
    memset(&cfg, 0, sizeof cfg);
    memset(&drawn, 0, sizeof drawn);
    cfg.top_ns = 1000 * MS;
    cfg.top_by = DM_TOP_BY_PROCESS;
    cfg.format = DM_FMT_CSV;
    cfg.live = live;
    cfg.task_io = io;
    cfg.drawn = &drawn;
    cfg.errf = errf;
    cfg.ring_dropped = none_dropped;
    rc = dm_top_view.create(&cfg, &view);
    if (view != NULL)
        dm_top_view.destroy(view);
    n = drawn.len < hcap - 1 ? drawn.len : hcap - 1;
    memcpy(header, drawn.data != NULL ? drawn.data : "", n);
    header[n] = '\0';
    dm_text_free(&drawn);
    rewind(errf);
    n = fread(said, 1, scap - 1, errf);
    said[n] = '\0';
    fclose(errf);
    return rc;
}

/* No task I/O accounting: one note that says why, and no column (not
 * zeros); with it, the column; replay (not live): neither. */
DM_TEST(no_accounting_one_note_no_column)
{
    char header[512], said[512];

    memset(procs, 0, sizeof procs);
    DM_ASSERT_EQ_INT(view_start(&absent_io, 1, header, sizeof header, said, sizeof said), 0);
    DM_ASSERT(strstr(header, "write_bytes,avg_ms") != NULL);
    DM_ASSERT(strstr(header, "cache_write") == NULL);
    DM_ASSERT(strstr(said, "no Cache-W column") != NULL);
    DM_ASSERT(strstr(said, "/proc/self/io: No such file or directory") != NULL);
    DM_ASSERT(strchr(said, '\n') == said + strlen(said) - 1);
    DM_ASSERT_EQ_INT(view_start(&fake_io, 1, header, sizeof header, said, sizeof said), 0);
    DM_ASSERT(strstr(header, "write_bytes,cache_write_bytes,avg_ms") != NULL);
    DM_ASSERT_STR_EQ(said, "");
    DM_ASSERT_EQ_INT(view_start(&fake_io, 0, header, sizeof header, said, sizeof said), 0);
    DM_ASSERT(strstr(header, "cache_write") == NULL);
    DM_ASSERT_STR_EQ(said, "");
}

/* Under a filter of the block requests (-d loop1), Cache-W still counts
 * every process on the machine: a note at the start says so once, and a
 * line under each time line; without a filter, neither. */
DM_TEST(filtered_rows_cache_says_whole_machine)
{
    for (int filtered = 0; filtered <= 1; filtered++) {
        struct dm_view_config cfg;
        struct dm_text drawn;
        struct dm_event ev;
        struct dm_view_close c;
        void *view = NULL;
        FILE *errf = tmpfile(), *out = tmpfile();
        char said[512], text[4096];
        size_t n;

        DM_ASSERT(errf != NULL && out != NULL);
        memset(procs, 0, sizeof procs);
        set_proc(0, 300, 1, 0, 1);
        memset(&cfg, 0, sizeof cfg);
        memset(&drawn, 0, sizeof drawn);
        cfg.top_ns = 1000 * MS;
        cfg.top_by = DM_TOP_BY_PROCESS;
        cfg.format = DM_FMT_TEXT;
        cfg.live = 1;
        cfg.task_io = &fake_io;
        cfg.requests_filtered = filtered;
        cfg.out = out;
        cfg.drawn = &drawn;
        cfg.errf = errf;
        cfg.ring_dropped = none_dropped;
        DM_ASSERT_EQ_INT(dm_top_view.create(&cfg, &view), 0);
        DM_ASSERT(view != NULL);
        memset(&ev, 0, sizeof ev);
        ev.time_ns = 500 * MS;
        ev.request = DM_REQ_WRITE;
        ev.transfer_size = 4096;
        ev.pid = 7;
        ev.process = "kworker";
        ev.disk_name = ev.file = ev.partition = ev.cgroup = "";
        ev.flags = DM_EV_HAS_PID | DM_EV_HAS_PROCESS;
        dm_top_view.add(view, &ev, 1);
        procs[0].bytes = 1000000; /* pid 300 wrote 1 MB into the page cache */
        memset(&c, 0, sizeof c);
        c.now_ns = 1000 * MS;
        dm_top_view.close(view, &c);
        dm_top_view.destroy(view);
        n = drawn.len < sizeof text - 1 ? drawn.len : sizeof text - 1;
        memcpy(text, drawn.data != NULL ? drawn.data : "", n);
        text[n] = '\0';
        dm_text_free(&drawn);
        rewind(errf);
        n = fread(said, 1, sizeof said - 1, errf);
        said[n] = '\0';
        fclose(errf);
        fclose(out);
        DM_ASSERT(strstr(text, "1.00 MB/s cached") != NULL);
        DM_ASSERT_EQ_INT(strstr(text, " lost\nCache-W: every process on this machine (the "
                                      "filters pick block requests)\n    PID") != NULL,
                         filtered);
        DM_ASSERT_EQ_INT(strstr(said, "Cache-W column counts every process") != NULL,
                         filtered);
    }
}

const struct dmt_case dm_suite_top_cache[] = {
    {"no_accounting_one_note_no_column", no_accounting_one_note_no_column},
    {"growth_rows_reuse_and_reaped_children", growth_rows_reuse_and_reaped_children},
    {"late_reap_settled", late_reap_settled},
    {"reused_pid_with_a_higher_count", reused_pid_with_a_higher_count},
    {"csv_and_json_fields", csv_and_json_fields},
    {"filtered_rows_cache_says_whole_machine", filtered_rows_cache_says_whole_machine},
    {NULL, NULL},
};
