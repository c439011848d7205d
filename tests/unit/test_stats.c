/*
 * test_stats.c - the -s summary table and the --hist histogram, byte for
 * byte, with expected values worked out by hand in the comments.
 */
#include "output/format.h"
#include "views/stats.h"
#include "dmtest.h"

static struct dm_event ev_of(uint32_t disk, int request, uint32_t bytes, uint64_t dur_ns)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.disk_name = ev.process = ev.file = "";
    ev.disk = disk;
    ev.request = (uint8_t)request;
    ev.transfer_size = bytes;
    ev.duration_ns = dur_ns;
    return ev;
}

/* What the view drew into f, as a string; f is emptied. */
static void read_all(struct dm_text *f, char *buf, size_t cap)
{
    size_t n = f->len < cap - 1 ? f->len : cap - 1;

    memcpy(buf, f->data != NULL ? f->data : "", n);
    buf[n] = '\0';
    dm_text_free(f);
}

DM_TEST(percentiles_exact_nearest_rank)
{
    struct dm_stats *st = dm_stats_create(1);

    /* 1..100 ms: p50 = 50 ms, p95 = 95 ms, p99 = 99 ms (nearest rank). */
    for (uint64_t i = 1; i <= 100; i++) {
        struct dm_event ev = ev_of(0, DM_REQ_READ, 4096, i * 1000000u);
        dm_stats_add(st, &ev);
    }
    DM_ASSERT_EQ_U64(dm_stats_count(st), 100);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "0", DM_REQ_READ, 50), 50000000u);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "0", DM_REQ_READ, 95), 95000000u);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "0", DM_REQ_READ, 99), 99000000u);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "0", DM_REQ_READ, 100), 100000000u);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "1", DM_REQ_READ, 50), 0);
    dm_stats_destroy(st);
}

DM_TEST(percentiles_histogram_bounded_error)
{
    struct dm_stats *st = dm_stats_create(1);
    uint64_t p50, p99;

    /* 200,000 requests (past the exact limit): half at 1 ms, half at 3 ms.
     * p50 must be within 1/64 above 1 ms; p99 within 1/64 above 3 ms and
     * never above the max (3 ms). */
    for (int i = 0; i < 200000; i++) {
        struct dm_event ev = ev_of(0, DM_REQ_WRITE, 512, (i & 1) ? 3000000u : 1000000u);
        dm_stats_add(st, &ev);
    }
    p50 = dm_stats_percentile(st, "0", DM_REQ_WRITE, 50);
    p99 = dm_stats_percentile(st, "0", DM_REQ_WRITE, 99);
    DM_ASSERT(p50 >= 1000000u && p50 <= 1000000u + 1000000u / 64);
    DM_ASSERT_EQ_U64(p99, 3000000u);
    dm_stats_destroy(st);
}

DM_TEST(summary_table)
{
    struct dm_stats *st = dm_stats_create(1);
    struct dm_loss loss = {2, 3, 1, {0}};
    char text[4096];
    struct dm_text f = {0};

    DM_ASSERT(st != NULL);
    /* Disk 1 first, so the table's sorting shows (disk 0 comes first). */
    for (int i = 1; i <= 4; i++) {
        struct dm_event ev = ev_of(1, DM_REQ_WRITE, 8192, (uint64_t)i * 1000000u);
        dm_stats_add(st, &ev);
    }
    struct dm_event r = ev_of(0, DM_REQ_READ, 4096, 250000);
    dm_stats_add(st, &r);
    /* Over 2 s: disk 1 writes 4 x 8192 = 32768 B -> 2.0 IOPS, 0.016 MB/s;
     * p50 = rank 2 = 2 ms; p95 and p99 = rank 4 = 4 ms; max 4 ms.
     * Disk 0: one 4096 B read -> 0.5 IOPS, 0.002 MB/s, all 0.25 ms. */
    dm_stats_summary(st, &f, 2000000000u, &loss);
    read_all(&f, text, sizeof text);
    dm_text_free(&f);
    /* Each column as wide as its widest cell, title included: names
     * left-aligned, numbers right-aligned, one space between. */
    DM_ASSERT_STR_EQ(text,
        "Disk Request Count Bytes IOPS  MB/s p50 ms p95 ms p99 ms max ms\n"
        "0    Read        1  4096  0.5 0.002  0.250  0.250  0.250  0.250\n"
        "1    Write       4 32768  2.0 0.016  2.000  4.000  4.000  4.000\n"
        "5 events in 2.000 s; lost 5 (ring full 2, source 3); malformed records skipped 1\n");
    dm_stats_destroy(st);
}

DM_TEST(histogram_bars)
{
    struct dm_stats *st = dm_stats_create(1);
    char text[4096];
    struct dm_text f = {0};
    /* Slots hold the microseconds the text line shows, which rounds to the
     * nearest microsecond: 1499 ns prints 0.000001 s, 1500 ns 0.000002 s. */
    struct dm_event a = ev_of(0, DM_REQ_READ, 512, 1499);   /* 1 us  -> slot 0 (0-1) */
    struct dm_event b = ev_of(0, DM_REQ_READ, 512, 5000);   /* 5 us  -> slot 2 (4-7) */
    struct dm_event c = ev_of(0, DM_REQ_READ, 512, 7499);   /* 7 us  -> slot 2 */
    struct dm_event d = ev_of(0, DM_REQ_READ, 512, 7500);   /* 8 us  -> slot 3 (8-15) */

    DM_ASSERT(st != NULL);
    dm_stats_add(st, &a);
    dm_stats_add(st, &b);
    dm_stats_add(st, &c);
    dm_stats_add(st, &d);
    dm_stats_hist(st, &f);
    read_all(&f, text, sizeof text);
    dm_text_free(&f);
    /* Max count 2 = 40 stars; count 1 = 20 stars; empty slot 1 = none. */
    DM_ASSERT_STR_EQ(text,
        "disk = 0\n"
        "                   usecs : count    distribution\n"
        "         0 -> 1          : 1        |********************                    |\n"
        "         2 -> 3          : 0        |                                        |\n"
        "         4 -> 7          : 2        |****************************************|\n"
        "         8 -> 15         : 1        |********************                    |\n");
    dm_stats_destroy(st);
}

/* The summary rounds where the text rounds. A flush of 0.0786839 s
 * is 0.078684 in the text line, so 78.684 ms in the summary (it was 78.683,
 * truncated); 0.0786834 s is 0.078683 and 78.683 ms. */
DM_TEST(summary_rounds_like_text)
{
    static const struct {
        uint64_t ns;
        const char *text_secs, *summary_ms;
    } cases[] = {
        {78683900u, "0.078684", "78.684"},
        {78683400u, "0.078683", "78.683"},
        {78683500u, "0.078684", "78.684"},
        {999999500u, "1.000000", "1000.000"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct dm_stats *st = dm_stats_create(1);
        struct dm_loss loss = {0, 0, 0, {0}};
        struct dm_event ev = ev_of(0, DM_REQ_FLUSH, 0, cases[i].ns);
        struct dm_format_opts fo;
        char text[4096], line[DM_LINE_MAX], want[64];
        struct dm_text f = {0};

        DM_ASSERT(st != NULL);
        memset(&fo, 0, sizeof fo);
        dm_format_event(line, sizeof line, &fo, 1, &ev);
        /* "      1     0.000000   0.078684 0 ..." : the Duration column */
        snprintf(want, sizeof want, " %s ", cases[i].text_secs);
        DM_ASSERT(strstr(line, want) != NULL);
        dm_stats_add(st, &ev);
        dm_stats_summary(st, &f, 1000000000u, &loss);
        read_all(&f, text, sizeof text);
        dm_text_free(&f);
        /* p50, p95, p99 and max are the one duration. */
        /* The ms columns are 6 wide ("p50 ms"), or the value's width. */
        snprintf(want, sizeof want, " %6s %6s %6s %6s\n", cases[i].summary_ms,
                 cases[i].summary_ms, cases[i].summary_ms, cases[i].summary_ms);
        if (strstr(text, want) == NULL) {
            dmt_fail_at(__FILE__, __LINE__, "case %u: want \"%s\" in:\n%s", (unsigned)i,
                        want, text);
            dm_stats_destroy(st);
            return;
        }
        dm_stats_destroy(st);
    }
}

/* The disk names of the events below are the test's; only this function
 * hands one to an event (the event's fixed array takes a copy; were the
 * names pointers, it would point it there). */
static void name_disk(struct dm_event *ev, const char *disk)
{
    ev->disk_name = disk; /* literals: borrowed for good */
}

/* Disks are found by number (a slot per number's low bits) and, when named,
 * by name: one row per Disk column text whatever the order and however the
 * numbers share slots. 0, 64 and 128 share a slot; "sdb" comes with two
 * numbers (a device that went and came back) and is one row; two names with
 * one number are two rows. Counts per row worked out by hand: the loop adds
 * i % 5 == k events to row k. */
DM_TEST(disks_by_number_and_name)
{
    static const uint32_t numbers[] = {0, 64, 128, 3, 64};
    static const char *const names[] = {"", "", "", "sdb", "sdb"};
    struct dm_stats *st = dm_stats_create(1);
    struct dm_loss loss = {0, 0, 0, {0}};
    char out[4096];
    struct dm_text f = {0};

    DM_ASSERT(st != NULL);
    for (int i = 0; i < 1000; i++) {
        struct dm_event ev = ev_of(numbers[i % 5], DM_REQ_READ, 512, 1000);

        name_disk(&ev, names[i % 5]);
        dm_stats_add(st, &ev);
    }
    {
        /* the same number as "sdb"'s first one, another name */
        struct dm_event ev = ev_of(3, DM_REQ_WRITE, 512, 1000);

        name_disk(&ev, "sdc");
        dm_stats_add(st, &ev);
    }
    DM_ASSERT_EQ_U64(dm_stats_count(st), 1001);
    dm_stats_summary(st, &f, 1000000000u, &loss);
    read_all(&f, out, sizeof out);
    dm_text_free(&f);
    dm_stats_destroy(st);
    /* Numbers first by value, then names; 200 reads each, "sdb" 400. */
    /* Disk 4 wide (the title), Request 7, Count 5 (the title). */
    DM_ASSERT(strstr(out, "\n0    Read      200") != NULL);
    DM_ASSERT(strstr(out, "\n64   Read      200") != NULL);
    DM_ASSERT(strstr(out, "\n128  Read      200") != NULL);
    DM_ASSERT(strstr(out, "\nsdb  Read      400") != NULL);
    DM_ASSERT(strstr(out, "\nsdc  Write       1") != NULL);
    DM_ASSERT(strstr(out, "\n0 ") < strstr(out, "\n64 ") &&
              strstr(out, "\n64 ") < strstr(out, "\n128 ") &&
              strstr(out, "\n128 ") < strstr(out, "\nsdb ") &&
              strstr(out, "\nsdb ") < strstr(out, "\nsdc "));
}

/* Without -s and --hist only the count is kept: no disk tables. */
DM_TEST(count_only_keeps_no_disks)
{
    struct dm_stats *st = dm_stats_create(0);

    DM_ASSERT(st != NULL);
    for (uint64_t i = 1; i <= 100; i++) {
        struct dm_event ev = ev_of(0, DM_REQ_READ, 4096, i * 1000000u);
        dm_stats_add(st, &ev);
    }
    DM_ASSERT_EQ_U64(dm_stats_count(st), 100);
    DM_ASSERT_EQ_U64(dm_stats_percentile(st, "0", DM_REQ_READ, 50), 0);
    dm_stats_destroy(st);
}

/*
 * A journal commit as a loop device delivers it (measured on one: see
 * docs/linux-live.md "Flushes that ride on writes"): the flush before, the
 * preflush|fua write, the flush after. The device did two flushes, and the
 * two Flush requests are them: the write is one write, not a third flush.
 */
DM_TEST(preflush_write_is_one_write)
{
    struct dm_stats *st = dm_stats_create(1);
    struct dm_loss loss = {0, 0, 0, {0}};
    struct dm_event pre = ev_of(0, DM_REQ_FLUSH, 0, 2000000u);
    struct dm_event commit = ev_of(0, DM_REQ_WRITE, 1024, 3000000u);
    struct dm_event post = ev_of(0, DM_REQ_FLUSH, 0, 1000000u);
    char text[4096];
    struct dm_text f = {0};

    DM_ASSERT(st != NULL);
    pre.req_flags = post.req_flags = DM_RQ_PREFLUSH;
    commit.req_flags = DM_RQ_PREFLUSH | DM_RQ_FUA | DM_RQ_SYNC | DM_RQ_META;
    dm_stats_add(st, &pre);
    dm_stats_add(st, &commit);
    dm_stats_add(st, &post);
    /* Over 1 s: 1 write of 1024 B (0.001 MB/s), 2 flushes of 1 and 2 ms
     * (p50 = rank 1 = 1 ms; p95, p99 = rank 2 = 2 ms). */
    dm_stats_summary(st, &f, 1000000000u, &loss);
    read_all(&f, text, sizeof text);
    DM_ASSERT_STR_EQ(text,
        "Disk Request Count Bytes IOPS  MB/s p50 ms p95 ms p99 ms max ms\n"
        "0    Write       1  1024  1.0 0.001  3.000  3.000  3.000  3.000\n"
        "0    Flush       2     0  2.0 0.000  1.000  2.000  2.000  2.000\n"
        "3 events in 1.000 s; lost 0 (ring full 0, source 0); malformed records skipped 0\n");
    dm_stats_destroy(st);
}

const struct dmt_case dm_suite_stats[] = {
    {"preflush_write_is_one_write", preflush_write_is_one_write},
    {"count_only_keeps_no_disks", count_only_keeps_no_disks},
    {"disks_by_number_and_name", disks_by_number_and_name},
    {"percentiles_exact_nearest_rank", percentiles_exact_nearest_rank},
    {"percentiles_histogram_bounded_error", percentiles_histogram_bounded_error},
    {"summary_table", summary_table},
    {"histogram_bars", histogram_bars},
    {"summary_rounds_like_text", summary_rounds_like_text},
    {NULL, NULL},
};
