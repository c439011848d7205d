/*
 * test_metrics.c - the --metrics counters and their text (views/metrics.h):
 * label escaping, bucket edges, busy time against a plain union of the
 * spans, process promotion keeping every published series going up, and
 * the cgroup families (Linux live only).
 * The expected texts are written out by hand from the text format's rules
 * (prometheus.io "Exposition formats"), not taken from the program.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/metrics.h"
#include "dmtest.h"

#define TEXT_CAP (1u << 20)

static struct dm_event event(const char *process, int request, uint64_t end_ns,
                             uint64_t duration_ns, uint32_t bytes)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.time_ns = end_ns;
    ev.duration_ns = duration_ns;
    ev.request = (uint8_t)request;
    ev.transfer_size = bytes;
    ev.disk = 0;
    ev.disk_name = "sda";
    ev.file = "";
    ev.process = process != NULL ? process : "";
    ev.flags = process != NULL ? DM_EV_HAS_PROCESS : 0;
    return ev;
}

static char *render(struct dm_metrics *m)
{
    static const struct dm_metrics_run run = {"replay", 0, 0};
    char *buf = malloc(TEXT_CAP);

    if (buf != NULL)
        dm_metrics_render(m, &run, 0, buf, TEXT_CAP);
    return buf;
}

/* The value after "line " at the start of a line of text ("" if none). */
static const char *value_of(const char *text, const char *line)
{
    static char val[64];
    size_t n = strlen(line);
    const char *p = text;

    val[0] = '\0';
    while (p != NULL && *p != '\0') {
        if (strncmp(p, line, n) == 0 && p[n] == ' ') {
            size_t k = strcspn(p + n + 1, "\n");

            if (k >= sizeof val)
                k = sizeof val - 1;
            memcpy(val, p + n + 1, k);
            val[k] = '\0';
            return val;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return val;
}

DM_TEST(label_escaping)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 20, 0, stderr);
    struct dm_event ev = event("a\\b\"c\nd\xFF\xC3\xA9", DM_REQ_READ, 1000, 10, 4096);
    char *text;

    DM_ASSERT(m != NULL);
    dm_metrics_add(m, &ev);
    text = render(m);
    DM_ASSERT(text != NULL);
    /* backslash, quote and line feed escaped; 0xFF is no UTF-8: U+FFFD;
     * U+00E9 stays as it is */
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_requests_total{process=\"a\\\\b\\\"c\\nd"
                                    "\xEF\xBF\xBD\xC3\xA9\",disk=\"sda\",op=\"read\"}"),
                     "1");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"a\\\\b\\\"c\\nd"
                                    "\xEF\xBF\xBD\xC3\xA9\",disk=\"sda\",op=\"read\"}"),
                     "4096");
    free(text);
    dm_metrics_destroy(m);
}

DM_TEST(bucket_edges)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 20, 0, stderr);
    /* on the first bound, just above it, 10 s, just above 10 s */
    static const uint64_t d[] = {25000, 25001, 10000000000u, 10000000001u};
    char *text;

    DM_ASSERT(m != NULL);
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        struct dm_event ev = event("x", DM_REQ_WRITE, 20000000000u, d[i], 512);

        dm_metrics_add(m, &ev);
    }
    text = render(m);
    DM_ASSERT(text != NULL);
#define B(le) "diskmon_request_duration_seconds_bucket{disk=\"sda\",op=\"write\",le=\"" le "\"}"
    DM_ASSERT_STR_EQ(value_of(text, B("0.000025")), "1");
    DM_ASSERT_STR_EQ(value_of(text, B("0.00005")), "2");
    DM_ASSERT_STR_EQ(value_of(text, B("5")), "2");
    DM_ASSERT_STR_EQ(value_of(text, B("10")), "3");
    DM_ASSERT_STR_EQ(value_of(text, B("+Inf")), "4");
#undef B
    /* 25000 + 25001 + 10^10 + 10^10 + 1 ns */
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_request_duration_seconds_sum{disk=\"sda\","
                                    "op=\"write\"}"),
                     "20.000050002");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_request_duration_seconds_count{disk=\"sda\","
                                    "op=\"write\"}"),
                     "4");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_total{disk=\"sda\",op=\"read\"}"), "0");
    DM_ASSERT(strstr(text, "\n# TYPE diskmon_request_duration_seconds histogram\n") != NULL);
    DM_ASSERT(text[strlen(text) - 1] == '\n');
    free(text);
    dm_metrics_destroy(m);
}

static uint64_t rng = 88172645463325252u;

static uint64_t next_rand(void)
{
    /* xorshift64 (Marsaglia, "Xorshift RNGs", 2003) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct span {
    uint64_t s, e;
};

static int by_start(const void *a, const void *b)
{
    const struct span *x = a, *y = b;

    return x->s < y->s ? -1 : x->s > y->s;
}

/* Many disjoint bursts (more than the kept window), requests overlapping
 * within a burst and reaching back over a few bursts: busy time equals the
 * union computed the plain way. */
DM_TEST(busy_is_the_union)
{
    enum { N = 20000 };
    struct dm_metrics *m = dm_metrics_create("unused.prom", 20, 0, stderr);
    struct span *sp = malloc(N * sizeof *sp);
    uint64_t t = 1000000, union_ns = 0, cs = 0, ce = 0, sum = 0;
    char want[64], *text;
    int n = 0;

    DM_ASSERT(m != NULL && sp != NULL);
    for (int i = 0; i < N; i++) {
        uint64_t dur;
        struct dm_event ev;

        t += next_rand() % 3 == 0 ? 1000 + next_rand() % 100000 : next_rand() % 500;
        dur = next_rand() % 10 == 0 ? next_rand() % 400000 : next_rand() % 3000;
        ev = event("p", DM_REQ_READ, t, dur, 4096);
        dm_metrics_add(m, &ev);
        sp[n].s = t > dur ? t - dur : 0;
        sp[n].e = t;
        sum += dur;
        n++;
    }
    qsort(sp, (size_t)n, sizeof *sp, by_start);
    for (int i = 0; i < n; i++) {
        if (i == 0 || sp[i].s > ce) {
            union_ns += ce - cs;
            cs = sp[i].s;
            ce = sp[i].e;
        } else if (sp[i].e > ce) {
            ce = sp[i].e;
        }
    }
    union_ns += ce - cs;
    text = render(m);
    DM_ASSERT(text != NULL);
    snprintf(want, sizeof want, "%" PRIu64 ".%09" PRIu64, union_ns / 1000000000u,
             union_ns % 1000000000u);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_busy_seconds_total{disk=\"sda\"}"), want);
    snprintf(want, sizeof want, "%" PRIu64 ".%09" PRIu64, sum / 1000000000u,
             sum % 1000000000u);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_in_flight_seconds_total{disk=\"sda\"}"), want);
    free(text);
    free(sp);
    dm_metrics_destroy(m);
}

/* K = 1: the first write promotes the leader; later names, however big, go
 * to (other), which only grows; the promoted series stays. */
DM_TEST(promotion_only_grows)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 1, 0, stderr);
    struct dm_event a = event("A", DM_REQ_READ, 1, 1, 100);
    struct dm_event b = event("B", DM_REQ_READ, 1, 1, 50);
    struct dm_event b2 = event("B", DM_REQ_READ, 1, 1, 500);
    struct dm_event c = event("C", DM_REQ_READ, 1, 1, 10);
    char *text;

    DM_ASSERT(m != NULL);
    dm_metrics_add(m, &a);
    dm_metrics_add(m, &b);
    text = render(m);
    DM_ASSERT(text != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"A\","
                                    "disk=\"sda\",op=\"read\"}"),
                     "100");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"read\"}"),
                     "50");
    DM_ASSERT(strstr(text, "process=\"B\"") == NULL);
    free(text);
    dm_metrics_add(m, &b2);
    dm_metrics_add(m, &c);
    dm_metrics_add(m, &a);
    text = render(m);
    DM_ASSERT(text != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"A\","
                                    "disk=\"sda\",op=\"read\"}"),
                     "200");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"read\"}"),
                     "560");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_requests_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"read\"}"),
                     "3");
    DM_ASSERT(strstr(text, "process=\"B\"") == NULL);
    free(text);
    dm_metrics_destroy(m);
}

/* More distinct names in one interval than the table holds: the excess goes
 * straight to (other), nothing is lost, nothing grows. */
DM_TEST(many_names_all_counted)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 3, 0, stderr);
    char name[16], *text;
    uint64_t named = 0, other;
    const char *v;

    DM_ASSERT(m != NULL);
    for (int i = 0; i < 5000; i++) {
        struct dm_event ev;

        snprintf(name, sizeof name, "p%05d", i);
        ev = event(name, DM_REQ_WRITE, 1, 1, (uint32_t)(i + 1));
        dm_metrics_add(m, &ev);
    }
    text = render(m);
    DM_ASSERT(text != NULL);
    /* the three largest that found a place */
    for (const char *p = text; (p = strstr(p, "diskmon_process_bytes_total{process=\"p")) != NULL;
         p++) {
        const char *sp = strchr(p, ' ');

        if (strstr(p, "op=\"write\"") != NULL && strstr(p, "op=\"write\"") < sp)
            named += strtoull(sp + 1, NULL, 10);
    }
    v = value_of(text,
                 "diskmon_process_bytes_total{process=\"(other)\",disk=\"sda\",op=\"write\"}");
    other = strtoull(v, NULL, 10);
    /* 1 + 2 + ... + 5000 */
    DM_ASSERT_EQ_U64(named + other, 5000u * 5001u / 2);
    DM_ASSERT(named > 0);
    free(text);
    dm_metrics_destroy(m);
}

/* The commit of docs/linux-live.md "Flushes that ride on writes": flush,
 * preflush|fua write, flush. The device did two flushes: flush counts 2,
 * write 1 with its bytes. */
DM_TEST(preflush_write_is_one_write)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 20, 0, stderr);
    struct dm_event pre = event("kworker/0:1H", DM_REQ_FLUSH, 1000, 10, 0);
    struct dm_event commit = event("jbd2/sda-8", DM_REQ_WRITE, 2000, 10, 1024);
    struct dm_event post = event("kworker/0:1H", DM_REQ_FLUSH, 3000, 10, 0);
    char *text;

    DM_ASSERT(m != NULL);
    pre.req_flags = post.req_flags = DM_RQ_PREFLUSH;
    commit.req_flags = DM_RQ_PREFLUSH | DM_RQ_FUA;
    dm_metrics_add(m, &pre);
    dm_metrics_add(m, &commit);
    dm_metrics_add(m, &post);
    text = render(m);
    DM_ASSERT(text != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_total{disk=\"sda\",op=\"flush\"}"), "2");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_total{disk=\"sda\",op=\"write\"}"), "1");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_bytes_total{disk=\"sda\",op=\"write\"}"), "1024");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_bytes_total{disk=\"sda\",op=\"flush\"}"), "0");
    /* Each flag of each request once: preflush on all three, fua on the
     * write alone; every word of the vocabulary has its series. */
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_by_flag_total{disk=\"sda\","
                                    "flag=\"preflush\"}"), "3");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_by_flag_total{disk=\"sda\","
                                    "flag=\"fua\"}"), "1");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_requests_by_flag_total{disk=\"sda\","
                                    "flag=\"sync_paging\"}"), "0");
    DM_ASSERT(strstr(text, "# TYPE diskmon_requests_by_flag_total counter\n") != NULL);
    free(text);
    dm_metrics_destroy(m);
}

/*
 * K = 2 over (process, disk) pairs: A on sda 300 B, A on sdb 200 B, B on
 * sdb 100 B, C on sda 50 B. The two largest pairs (A/sda, A/sdb) have
 * series; B/sdb goes to sdb's (other), C/sda to sda's. So each disk's
 * process series sum to its own totals: sda 350 B, sdb 300 B.
 */
DM_TEST(process_pairs_per_disk)
{
    struct dm_metrics *m = dm_metrics_create("unused.prom", 2, 0, stderr);
    struct dm_event evs[] = {
        event("A", DM_REQ_WRITE, 1, 1, 300), event("A", DM_REQ_WRITE, 2, 1, 200),
        event("B", DM_REQ_WRITE, 3, 1, 100), event("C", DM_REQ_READ, 4, 1, 50),
    };
    char *text;

    DM_ASSERT(m != NULL);
    evs[1].disk_name = evs[2].disk_name = "sdb";
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        dm_metrics_add(m, &evs[i]);
    text = render(m);
    DM_ASSERT(text != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"A\","
                                    "disk=\"sda\",op=\"write\"}"), "300");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"A\","
                                    "disk=\"sdb\",op=\"write\"}"), "200");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"(other)\","
                                    "disk=\"sdb\",op=\"write\"}"), "100");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"read\"}"), "50");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_requests_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"read\"}"), "1");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_process_bytes_total{process=\"(other)\","
                                    "disk=\"sda\",op=\"write\"}"), "0");
    DM_ASSERT(strstr(text, "process=\"B\"") == NULL);
    DM_ASSERT(strstr(text, "process=\"C\"") == NULL);
    free(text);
    dm_metrics_destroy(m);
}

/* Per cgroup: bounded by K like the process names, "(other)" for the
 * rest; a Linux live source's file has the families from the first write
 * on; a replay's only once a row named a cgroup (a Linux capture's). */
DM_TEST(cgroup_families)
{
    static const struct dm_metrics_run live = {"tracefs", 0, 0};
    struct dm_metrics *m = dm_metrics_create("unused.prom", 1, 1, stderr);
    struct dm_event a = event("dd", DM_REQ_WRITE, 1, 1, 4096);
    struct dm_event b = event("dd", DM_REQ_WRITE, 1, 1, 512);
    struct dm_event none = event("kworker", DM_REQ_WRITE, 1, 1, 8);
    char *text = malloc(TEXT_CAP);

    DM_ASSERT(m != NULL && text != NULL);
    dm_metrics_render(m, &live, 0, text, TEXT_CAP);
    DM_ASSERT(strstr(text, "# TYPE diskmon_cgroup_bytes_total counter\n") != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_cgroup_bytes_total{cgroup=\"(other)\","
                                    "op=\"write\"}"),
                     "0");
    a.cgroup = "/system.slice/docker-1.scope";
    b.cgroup = "/user.slice";
    dm_metrics_add(m, &a);
    dm_metrics_add(m, &a);
    dm_metrics_add(m, &b);
    dm_metrics_add(m, &none); /* no cgroup known: in no cgroup series */
    dm_metrics_render(m, &live, 0, text, TEXT_CAP);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_cgroup_bytes_total{cgroup=\"/system.slice/"
                                    "docker-1.scope\",op=\"write\"}"),
                     "8192");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_cgroup_requests_total{cgroup=\"/system.slice/"
                                    "docker-1.scope\",op=\"write\"}"),
                     "2");
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_cgroup_bytes_total{cgroup=\"(other)\","
                                    "op=\"write\"}"),
                     "512");
    free(text);
    text = render(m); /* a replay of rows that named cgroups */
    DM_ASSERT(text != NULL);
    DM_ASSERT_STR_EQ(value_of(text, "diskmon_cgroup_requests_total{cgroup=\"/system.slice/"
                                    "docker-1.scope\",op=\"write\"}"),
                     "2");
    free(text);
    dm_metrics_destroy(m);

    m = dm_metrics_create("unused.prom", 1, 1, stderr);
    DM_ASSERT(m != NULL);
    dm_metrics_add(m, &none); /* a replay whose rows name none */
    text = render(m);
    DM_ASSERT(text != NULL);
    DM_ASSERT(strstr(text, "diskmon_cgroup") == NULL);
    free(text);
    dm_metrics_destroy(m);
}

const struct dmt_case dm_suite_metrics[] = {
    {"process_pairs_per_disk", process_pairs_per_disk},
    {"preflush_write_is_one_write", preflush_write_is_one_write},
    {"cgroup_families", cgroup_families},
    {"label_escaping", label_escaping},
    {"bucket_edges", bucket_edges},
    {"busy_is_the_union", busy_is_the_union},
    {"promotion_only_grows", promotion_only_grows},
    {"many_names_all_counted", many_names_all_counted},
    {NULL, NULL},
};
