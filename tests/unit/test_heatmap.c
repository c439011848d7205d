/*
 * test_heatmap.c - the SVG writer (output/svg.h), the heat map grid
 * (views/heatgrid.h) and the latency rows (views/latmap.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dmtest.h"
#include "output/svg.h"
#include "views/heatgrid.h"
#include "views/latmap.h"

DM_TEST(svg_escapes_hostile_names)
{
    struct dm_text t = {0};
    struct dm_svg s;

    dm_svg_init(&s, &t);
    dm_svg_open(&s, "g");
    /* markup, quotes, a forbidden control byte, a lone continuation byte,
     * a UTF-8 surrogate and U+FFFF (neither is an XML Char), then a valid
     * e-acute */
    dm_svg_attr(&s, "data-name", "<a href=\"x\">'&\x01\x80\xED\xA0\x80\xEF\xBF\xBF\xC3\xA9");
    dm_svg_text(&s, "</g><script>");
    dm_svg_end(&s);
    DM_ASSERT_STR_EQ(t.data, "<g data-name=\"&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
                             "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                             "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xC3\xA9\">"
                             "&lt;/g&gt;&lt;script&gt;</g>\n");
    dm_text_free(&t);
}

DM_TEST(svg_nesting_and_empty_elements)
{
    struct dm_text t = {0};
    struct dm_svg s;

    dm_svg_init(&s, &t);
    dm_svg_open(&s, "svg");
    dm_svg_open(&s, "rect");
    dm_svg_attr_int(&s, "x", -3);
    dm_svg_attr_fixed(&s, "data-t0", 1200, 3);
    dm_svg_attr_fixed(&s, "data-lat0", 5, 3);
    dm_svg_attr_fixed(&s, "data-off0", UINT64_MAX, 0);
    dm_svg_close(&s);
    dm_svg_element(&s, "text", "a&b", "x", "1", NULL);
    dm_svg_end(&s);
    DM_ASSERT_STR_EQ(t.data, "<svg><rect x=\"-3\" data-t0=\"1.200\" data-lat0=\"0.005\" "
                             "data-off0=\"18446744073709551615\"/><text x=\"1\">a&amp;b</text>"
                             "</svg>\n");
    dm_text_free(&t);
}

DM_TEST(fixed_text_exact)
{
    char buf[32 + DM_SVG_NUMBER_SLACK];

    dm_fixed_text(buf, 0, 3);
    DM_ASSERT_STR_EQ(buf, "0.000");
    dm_fixed_text(buf, 123456789, 6);
    DM_ASSERT_STR_EQ(buf, "123.456789");
    dm_fixed_text_short(buf, 1500, 3);
    DM_ASSERT_STR_EQ(buf, "1.5");
    dm_fixed_text_short(buf, 2000, 3);
    DM_ASSERT_STR_EQ(buf, "2");
    dm_fixed_text_short(buf, 10, 3);
    DM_ASSERT_STR_EQ(buf, "0.01");
}

/* A bounded grid against the counts worked out directly: random times
 * over a span far past cols steps, every doubling merged. */
DM_TEST(grid_doubling_matches_direct_count)
{
    enum { COLS = 16, N = 20000 };
    struct dm_heat_time tm;
    struct dm_heat_grid g;
    uint64_t *times = malloc(N * sizeof *times), want[COLS] = {0};
    uint64_t seed = 7;

    DM_ASSERT(times != NULL);
    DM_ASSERT_EQ_INT(dm_heat_grid_init(&g, COLS, 1), 0);
    dm_heat_time_init(&tm, COLS, 1);
    for (int i = 0; i < N; i++) {
        uint32_t col;

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* up to about 70 s, in ns; sometimes exactly on a ms edge */
        times[i] = (seed >> 33) % 70000000000ull;
        if (i % 7 == 0)
            times[i] -= times[i] % 1000000;
        for (unsigned k = dm_heat_time_place(&tm, times[i], &col); k > 0; k--)
            dm_heat_grid_halve(&g, COLS);
        dm_heat_grid_add(&g, col, 0);
    }
    /* the final step: the smallest 1 ms * 2^k with every time below COLS steps */
    DM_ASSERT(tm.step_ms >= 1 && (tm.step_ms & (tm.step_ms - 1)) == 0);
    for (int i = 0; i < N; i++) {
        DM_ASSERT(times[i] / (tm.step_ms * 1000000) < COLS);
        want[times[i] / (tm.step_ms * 1000000)]++;
    }
    DM_ASSERT(tm.step_ms == 1 || 70000000000ull / (tm.step_ms / 2 * 1000000) >= COLS - 1);
    for (int c = 0; c < COLS; c++)
        DM_ASSERT_EQ_U64(dm_heat_grid_at(&g, (uint32_t)c, 0), want[c]);
    DM_ASSERT_EQ_U64(g.total, N);
    dm_heat_grid_free(&g);
    free(times);
}

/* 10^(k/10) rounded to four significant digits, then scaled to the
 * decade and rounded to the microsecond, as latmap.h says; in doubles,
 * independently of latmap.c's table. */
static uint64_t doc_edge_us(unsigned row)
{
    unsigned k = (row - 1) % 10, decade = (row - 1) / 10;
    double m = 1000.0, scale = 10.0;

    for (unsigned i = 0; i < k; i++)
        m *= 1.2589254117941673; /* 10^0.1 */
    for (unsigned i = 0; i < decade; i++)
        scale *= 10.0;
    return (uint64_t)((double)(uint64_t)(m + 0.5) * scale / 1000.0 + 0.5);
}

/* Rows: the edges the doc names, ten per decade, and the boundaries. */
DM_TEST(latency_rows)
{
    struct dm_heat_time tm;
    struct dm_latmap *m;

    dm_heat_time_init(&tm, DM_HEAT_COLS, 1);
    m = dm_latmap_create(&tm);
    DM_ASSERT(m != NULL);
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 0), 0);
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 9999), 0);
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 316000), 16);   /* 316 us = round(10^2.5) */
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 501000), 18);   /* 501 us = round(10^2.7) */
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 1000000), 21);  /* 1 ms */
    for (unsigned r = 1; r < DM_LAT_ROWS; r++) {
        uint64_t edge_ns = doc_edge_us(r) * 1000;

        DM_ASSERT_EQ_INT(dm_latmap_row(m, edge_ns - 1), r - 1);
        DM_ASSERT_EQ_INT(dm_latmap_row(m, edge_ns), r);
    }
    DM_ASSERT_EQ_INT(dm_latmap_row(m, 10000000000000ull), 91); /* 10^10 us */
    DM_ASSERT_EQ_INT(dm_latmap_row(m, UINT64_MAX), 91);
    dm_latmap_destroy(m);
}

/* Requests without a duration are counted apart and never drawn. */
DM_TEST(no_duration_not_drawn)
{
    struct dm_heat_time tm;
    struct dm_latmap *m;
    struct dm_event ev;
    struct dm_text t = {0};
    struct dm_svg s;

    dm_heat_time_init(&tm, DM_HEAT_COLS, 1);
    m = dm_latmap_create(&tm);
    DM_ASSERT(m != NULL);
    memset(&ev, 0, sizeof ev);
    ev.disk_name = ev.process = ev.file = ev.partition = ev.cgroup = "";
    ev.time_ns = 5000000;
    ev.duration_ns = 300000;
    dm_latmap_count(m, 5, &ev);
    ev.flags = DM_EV_NO_DURATION;
    ev.duration_ns = 0;
    dm_latmap_count(m, 5, &ev);
    dm_latmap_count(m, 5, &ev);
    DM_ASSERT_EQ_U64(dm_latmap_drawn(m), 1);
    DM_ASSERT_EQ_U64(dm_latmap_no_duration(m), 2);
    tm.used = 6;
    dm_svg_init(&s, &t);
    dm_latmap_draw(m, &s, 1, "x.etl", 0);
    DM_ASSERT(strstr(t.data, "1 request drawn;") != NULL);
    DM_ASSERT(strstr(t.data, "; 2 without a duration not drawn") != NULL);
    DM_ASSERT(strstr(t.data, "data-count=\"1\"") != NULL);
    DM_ASSERT(strstr(t.data, "data-count=\"2\"") == NULL);
    dm_text_free(&t);
    dm_latmap_destroy(m);
}

const struct dmt_case dm_suite_heatmap[] = {
    {"svg_escapes_hostile_names", svg_escapes_hostile_names},
    {"svg_nesting_and_empty_elements", svg_nesting_and_empty_elements},
    {"fixed_text_exact", fixed_text_exact},
    {"grid_doubling_matches_direct_count", grid_doubling_matches_direct_count},
    {"latency_rows", latency_rows},
    {"no_duration_not_drawn", no_duration_not_drawn},
    {NULL, NULL},
};
