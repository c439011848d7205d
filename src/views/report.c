/*
 * report.c - the --report page (report.h): what it counts, and the page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/svg.h"
#include "output/tz.h"
#include "views/heatgrid.h"
#include "views/report.h"
#include "views/stats.h"
#include "views/tally.h"

#define TOP_ROWS 10              /* rows of the top tables */
#define NO_PROCESS "(unknown)"   /* as --metrics names a request without one */
#define NO_PID UINT32_MAX        /* the tally's id of a request without a process id */
#define NS_PER_SEC 1000000000ull

/* The throughput columns' rows. */
enum { RATE_READS, RATE_WRITES, RATE_BYTES, RATE_ROWS };

struct dm_report {
    struct dm_stats *stats;
    const struct dm_heat_time *time; /* the throughput columns' axis */
    struct dm_heat_grid rates;
    struct dm_tally procs, files;
    uint64_t events, named, with_file;
    uint64_t first_ns, last_ns;
};

struct dm_report *dm_report_create(const struct dm_heat_time *time, int no_latency)
{
    struct dm_report *r = calloc(1, sizeof *r);

    if (r == NULL)
        return NULL;
    r->stats = dm_stats_create(1);
    r->time = time;
    if (r->stats == NULL ||
        dm_heat_grid_init(&r->rates, DM_HEAT_COLS, RATE_ROWS) != 0 ||
        dm_tally_init(&r->procs, DM_PROCESS_MAX) != 0 ||
        dm_tally_init(&r->files, DM_FILE_MAX) != 0) {
        dm_report_destroy(r);
        return NULL;
    }
    if (no_latency)
        dm_stats_no_latency(r->stats);
    return r;
}

void dm_report_destroy(struct dm_report *r)
{
    if (r == NULL)
        return;
    dm_stats_destroy(r->stats);
    dm_heat_grid_free(&r->rates);
    dm_tally_free(&r->procs);
    dm_tally_free(&r->files);
    free(r);
}

void dm_report_halve(struct dm_report *r)
{
    dm_heat_grid_halve(&r->rates, r->time->cols);
}

void dm_report_count(struct dm_report *r, uint32_t col, const struct dm_disk_index *disks,
                     int disk, const struct dm_event *ev)
{
    uint64_t *c;

    dm_stats_add_on(r->stats, disks, disk, ev);
    c = r->rates.counts + (uint64_t)col * RATE_ROWS;
    c[RATE_READS] += ev->request == DM_REQ_READ;
    c[RATE_WRITES] += ev->request == DM_REQ_WRITE;
    c[RATE_BYTES] += ev->transfer_size;
    if (r->events == 0 || ev->time_ns < r->first_ns)
        r->first_ns = ev->time_ns;
    if (ev->time_ns > r->last_ns)
        r->last_ns = ev->time_ns;
    r->events++;
    /* By process id and name (tally.h): the name is compared, not hashed. */
    if ((ev->flags & DM_EV_HAS_PROCESS) && ev->process[0] != '\0') {
        r->named++;
        dm_tally_add_id(&r->procs, (ev->flags & DM_EV_HAS_PID) ? ev->pid : NO_PID, ev->process,
                        ev->transfer_size);
    } else {
        dm_tally_add_id(&r->procs, NO_PID, NO_PROCESS, ev->transfer_size);
    }
    if ((ev->flags & DM_EV_HAS_FILE) && ev->file[0] != '\0') {
        r->with_file++;
        dm_tally_add(&r->files, ev->file, ev->transfer_size);
    }
}

/* ---- the page ------------------------------------------------------------------ */

/* Phone width: the pictures scale down with their viewBox and the wide
 * tables scroll in their own box; print: no scrolling boxes, no section
 * cut across pages where it can be helped. */
static const char style[] =
    "body{font-family:sans-serif;color:#222;max-width:1100px;margin:0 auto;padding:0 .6em}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}"
    "svg{max-width:100%;height:auto}"
    ".wide{overflow-x:auto}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}"
    "th,td{padding:2px 8px;text-align:right;border-bottom:1px solid #e4e4e4;white-space:nowrap}"
    "th:first-child,td:first-child{text-align:left}"
    "td.name{text-align:left;white-space:normal;word-break:break-all}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:bold}"
    "dd{margin:0}"
    "@media print{.wide{overflow:visible}section{break-inside:avoid}body{max-width:none}}";

/* A section: <section><h2>title</h2>, left open. */
static void section(struct dm_svg *s, const char *title)
{
    dm_svg_open(s, "section");
    dm_svg_element(s, "h2", title, NULL);
}

static void term(struct dm_svg *s, const char *dt, const char *dd)
{
    dm_svg_element(s, "dt", dt, NULL);
    dm_svg_element(s, "dd", dd, NULL);
}

static void about(struct dm_svg *s, const struct dm_report *r, const struct dm_report_run *run)
{
    char buf[256], a[48], b[48];

    dm_svg_open(s, "dl");
    term(s, "Source", run->source);
    term(s, "Read by", run->backend);
    if (run->start_wall_ns != 0) {
        struct dm_civil c;

        dm_civil_from_seconds((int64_t)(run->start_wall_ns / NS_PER_SEC), &c);
        snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d UTC", c.year, c.month, c.day,
                 c.hour, c.minute, c.second);
        term(s, "Started", buf);
    }
    dm_fixed_text(a, r->first_ns / 1000000, 3);
    dm_fixed_text(b, r->last_ns / 1000000, 3);
    if (r->events > 0)
        snprintf(buf, sizeof buf, "%s s to %s s after the start (%llu requests)", a, b,
                 (unsigned long long)r->events);
    else
        snprintf(buf, sizeof buf, "no requests");
    term(s, "Requests", buf);
    dm_fixed_text(a, run->elapsed_ns / 1000000, 3);
    snprintf(buf, sizeof buf, "%s s%s", a, run->final ? "" : " so far (the run goes on)");
    term(s, "Capture", buf);
    snprintf(buf, sizeof buf, "%llu (ring full %llu, source %llu); malformed records %llu",
             (unsigned long long)(run->loss.ring_dropped + run->loss.source_lost),
             (unsigned long long)run->loss.ring_dropped,
             (unsigned long long)run->loss.source_lost,
             (unsigned long long)run->loss.malformed);
    term(s, "Lost", buf);
    dm_svg_close(s);
}

/* One line of the -s text as a table row: its words are the cells (the
 * Disk column is a name without blanks: the text lines escape them); in
 * the header a unit ("p50 ms") stays with its word. */
static void words_row(struct dm_svg *s, const char *line, size_t len, const char *cell)
{
    char word[128];
    size_t n = 0;

    dm_svg_open(s, "tr");
    for (size_t i = 0; i <= len; i++) {
        int blank = i == len || line[i] == ' ';
        int unit = i + 3 <= len && strncmp(line + i, " ms", 3) == 0 &&
                   (i + 3 == len || line[i + 3] == ' ') && cell[1] == 'h';

        if (!blank || (unit && n > 0)) {
            if (n < sizeof word - 1)
                word[n++] = line[i];
            continue;
        }
        if (n == 0)
            continue;
        word[n] = '\0';
        dm_svg_element(s, cell, word, NULL);
        n = 0;
    }
    dm_svg_close(s);
}

/* The -s table from the text -s prints: the header, the rows, and the
 * lines after them (events, losses) as a paragraph. */
static void summary(struct dm_svg *s, const struct dm_report *r, const struct dm_report_run *run)
{
    struct dm_text text = {0};
    const char *p, *end;
    int line = 0, rows = 1;

    section(s, "Summary (the -s table)");
    dm_stats_summary(r->stats, &text, run->elapsed_ns, &run->loss);
    dm_svg_open(s, "div");
    dm_svg_attr(s, "class", "wide");
    dm_svg_open(s, "table");
    dm_svg_attr(s, "id", "summary");
    for (p = text.data; p != NULL && *p != '\0'; p = *end ? end + 1 : end, line++) {
        end = strchr(p, '\n');
        if (end == NULL)
            end = p + strlen(p);
        if (strstr(p, " events in ") != NULL && strstr(p, " events in ") < end)
            rows = 0;
        if (rows) {
            words_row(s, p, (size_t)(end - p), line == 0 ? "th" : "td");
        } else {
            if (s->depth > 0 && strcmp(s->open[s->depth - 1], "table") == 0) {
                dm_svg_close(s); /* table */
                dm_svg_close(s); /* div */
            }
            dm_svg_open(s, "p");
            dm_svg_text_n(s, p, (size_t)(end - p));
            dm_svg_close(s);
        }
    }
    if (rows) {
        dm_svg_close(s);
        dm_svg_close(s);
    }
    dm_text_free(&text);
    dm_svg_close(s);
}

/* ---- the --hist histograms as bars ------------------------------------------------ */

#define HIST_MAX 64   /* buckets of one histogram: log2 of a 64-bit count of us */

struct hist {
    char disk[64];
    int n;
    unsigned long long lo[HIST_MAX], hi[HIST_MAX], count[HIST_MAX];
};

static void hist_bars(struct dm_svg *s, const struct hist *h)
{
    enum { LABEL_W = 170, BAR_W = 520, ROW_H = 18 };
    unsigned long long max = 0;
    int first = h->n, last = -1;
    char label[96];

    for (int i = 0; i < h->n; i++)
        if (h->count[i] != 0) {
            first = first < i ? first : i;
            last = i;
            max = h->count[i] > max ? h->count[i] : max;
        }
    snprintf(label, sizeof label, "disk %s", h->disk);
    dm_svg_element(s, "h3", label, NULL);
    if (last < 0) { /* --hist printed no buckets: its requests had no duration */
        dm_svg_element(s, "p", "no latency: none of its requests has a duration", NULL);
        return;
    }
    dm_svg_begin(s, 0, LABEL_W + BAR_W + 90, (int64_t)(last - first + 1) * ROW_H + 8);
    dm_svg_attr(s, "font-family", "sans-serif");
    dm_svg_attr(s, "font-size", "12");
    for (int i = first; i <= last; i++) {
        int64_t y = (int64_t)(i - first) * ROW_H + 4;
        int64_t w = (int64_t)(h->count[i] * BAR_W / max);

        snprintf(label, sizeof label, "%llu" "\xE2\x80\x93" "%llu \xC2\xB5s", h->lo[i], h->hi[i]);
        dm_svg_open(s, "text");
        dm_svg_attr_int(s, "x", LABEL_W - 6);
        dm_svg_attr_int(s, "y", y + 12);
        dm_svg_attr(s, "text-anchor", "end");
        dm_svg_text(s, label);
        dm_svg_close(s);
        dm_svg_open(s, "rect");
        dm_svg_attr_int(s, "x", LABEL_W);
        dm_svg_attr_int(s, "y", y);
        dm_svg_attr_int(s, "width", w > 0 || h->count[i] == 0 ? w : 1);
        dm_svg_attr_int(s, "height", ROW_H - 4);
        dm_svg_attr(s, "fill", "#3b528b");
        dm_svg_close(s);
        snprintf(label, sizeof label, "%llu", h->count[i]);
        dm_svg_open(s, "text");
        dm_svg_attr_int(s, "x", LABEL_W + (w > 0 ? w : 1) + 6);
        dm_svg_attr_int(s, "y", y + 12);
        dm_svg_text(s, label);
        dm_svg_close(s);
    }
    dm_svg_close(s);
}

/* The bars from the text --hist prints ("disk = NAME", then one line per
 * bucket "LO -> HI : COUNT |...|"), so the page shows its very numbers. */
static void histograms(struct dm_svg *s, const struct dm_report *r)
{
    struct dm_text text = {0};
    struct hist *h = calloc(1, sizeof *h);
    const char *p, *end;

    section(s, "Latency histograms (--hist, microseconds)");
    dm_stats_hist(r->stats, &text);
    for (p = text.data; h != NULL && p != NULL && *p != '\0'; p = *end ? end + 1 : end) {
        unsigned long long lo, hi, count;

        end = strchr(p, '\n');
        if (end == NULL)
            end = p + strlen(p);
        if (strncmp(p, "disk = ", 7) == 0) {
            if (h->disk[0] != '\0')
                hist_bars(s, h);
            memset(h, 0, sizeof *h);
            snprintf(h->disk, sizeof h->disk, "%.*s", (int)(end - p - 7), p + 7);
        } else if (sscanf(p, " %llu -> %llu : %llu", &lo, &hi, &count) == 3 &&
                   h->n < HIST_MAX) {
            h->lo[h->n] = lo;
            h->hi[h->n] = hi;
            h->count[h->n++] = count;
        }
    }
    if (h != NULL && h->disk[0] != '\0')
        hist_bars(s, h);
    else if (text.len > 0) { /* no bars: --hist's line saying why (no latency) */
        char why[128];

        snprintf(why, sizeof why, "%.*s", (int)strcspn(text.data, "\n"), text.data);
        dm_svg_element(s, "p", why, NULL);
    } else
        dm_svg_element(s, "p", "no requests", NULL);
    free(h);
    dm_text_free(&text);
    dm_svg_close(s);
}

/* ---- throughput over time ------------------------------------------------------- */

/* One bar chart of a row of the throughput columns, as a rate per second
 * (divided by the step), with its largest value named. */
static void rate_chart(struct dm_svg *s, const struct dm_report *r, int row, const char *what,
                       double scale)
{
    enum { LEFT = 70, PLOT_W = 900, PLOT_H = 90, TOP = 22 };
    uint32_t used = r->time->used > 0 ? r->time->used : 1, w = PLOT_W / used;
    double step_s = (double)r->time->step_ms / 1000.0, max = 0;
    char label[128];

    if (w < 2)
        w = 2;
    for (uint32_t c = 0; c < used; c++) {
        double v = (double)dm_heat_grid_at(&r->rates, c, (uint32_t)row) * scale / step_s;

        max = v > max ? v : max;
    }
    dm_svg_begin(s, 0, LEFT + (int64_t)used * w + 10, TOP + PLOT_H + 8);
    dm_svg_attr(s, "font-family", "sans-serif");
    dm_svg_attr(s, "font-size", "12");
    snprintf(label, sizeof label, "%s (largest %.1f; columns of %llu ms)", what, max,
             (unsigned long long)r->time->step_ms);
    dm_svg_element(s, "text", label, "x", "0", "y", "14", NULL);
    for (uint32_t c = 0; c < used && max > 0; c++) {
        double v = (double)dm_heat_grid_at(&r->rates, c, (uint32_t)row) * scale / step_s;
        int64_t h = (int64_t)(v / max * PLOT_H + 0.5);

        if (v <= 0)
            continue;
        dm_svg_open(s, "rect");
        dm_svg_attr_int(s, "x", LEFT + (int64_t)c * w);
        dm_svg_attr_int(s, "y", TOP + PLOT_H - (h > 0 ? h : 1));
        dm_svg_attr_int(s, "width", w);
        dm_svg_attr_int(s, "height", h > 0 ? h : 1);
        dm_svg_attr(s, "fill", "#21918c");
        dm_svg_close(s);
    }
    dm_svg_element(s, "line", NULL, "x1", "70", "x2", "70", "y1", "22", "y2", "112",
                   "stroke", "#333", NULL);
    dm_svg_close(s);
}

static void throughput(struct dm_svg *s, const struct dm_report *r)
{
    section(s, "Throughput over time");
    rate_chart(s, r, RATE_READS, "Reads/s", 1.0);
    rate_chart(s, r, RATE_WRITES, "Writes/s", 1.0);
    rate_chart(s, r, RATE_BYTES, "MB/s (reads, writes, discards)", 1e-6);
    dm_svg_close(s);
}

/* ---- the top tables ------------------------------------------------------------- */

static void top_table(struct dm_svg *s, const struct dm_tally *t, const char *title,
                      const char *what, const char *keys, uint64_t named)
{
    struct dm_tally_entry top[TOP_ROWS];
    size_t n = dm_tally_top(t, top, TOP_ROWS);
    char buf[64];

    section(s, title);
    if (named == 0) {
        dm_svg_element(s, "p", "The source names none.", NULL);
        dm_svg_close(s);
        return;
    }
    dm_svg_open(s, "div");
    dm_svg_attr(s, "class", "wide");
    dm_svg_open(s, "table");
    dm_svg_open(s, "tr");
    dm_svg_element(s, "th", what, NULL);
    dm_svg_element(s, "th", "Requests", NULL);
    dm_svg_element(s, "th", "Bytes", NULL);
    dm_svg_close(s);
    for (size_t i = 0; i < n; i++) {
        dm_svg_open(s, "tr");
        dm_svg_element(s, "td", top[i].name, "class", "name", NULL);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)top[i].requests);
        dm_svg_element(s, "td", buf, NULL);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)top[i].bytes);
        dm_svg_element(s, "td", buf, NULL);
        dm_svg_close(s);
    }
    dm_svg_close(s);
    dm_svg_close(s);
    if (t->other_requests > 0) {
        snprintf(buf, sizeof buf, "%llu requests", (unsigned long long)t->other_requests);
        dm_svg_open(s, "p");
        dm_svg_textf(s, "Past the first %u distinct %s, %s (%llu bytes) were counted "
                        "together, not by name.",
                     DM_TALLY_NAMES, keys, buf, (unsigned long long)t->other_bytes);
        dm_svg_close(s);
    }
    dm_svg_close(s);
}

/* A map's section, the map drawn by the caller as a document of its own
 * (its writer closes all it opened) into the same text. */
static void map_section(struct dm_svg *s, const char *title, dm_report_draw_map *draw_map,
                        void *ctx, enum dm_report_map map)
{
    struct dm_svg drawing;

    section(s, title);
    dm_svg_raw(s, "", 0); /* the section's start tag ended before the drawing */
    dm_svg_init(&drawing, s->t);
    dm_svg_spill_to(&drawing, s->spill, s->spill_ctx);
    draw_map(ctx, map, &drawing);
    dm_svg_close(s);
}

void dm_report_render(const struct dm_report *r, const struct dm_report_run *run,
                      dm_report_draw_map *draw_map, void *ctx, struct dm_svg *s)
{
    char title[600];

    dm_text_puts(s->t, "<!DOCTYPE html>\n");
    dm_svg_open(s, "html");
    dm_svg_attr(s, "lang", "en");
    dm_svg_open(s, "head");
    dm_svg_element(s, "meta", NULL, "charset", "utf-8", NULL);
    dm_svg_element(s, "meta", NULL, "name", "viewport", "content",
                   "width=device-width, initial-scale=1", NULL);
    snprintf(title, sizeof title, "diskmon report: %s", run->source);
    dm_svg_element(s, "title", title, NULL);
    dm_svg_element(s, "style", style, NULL);
    dm_svg_close(s);
    dm_svg_open(s, "body");
    dm_svg_element(s, "h1", title, NULL);
    about(s, r, run);
    summary(s, r, run);
    histograms(s, r);
    map_section(s, "Latency heat map", draw_map, ctx, DM_REPORT_LATENCY_MAP);
    map_section(s, "Disk offset map", draw_map, ctx, DM_REPORT_OFFSET_MAP);
    throughput(s, r);
    top_table(s, &r->procs, "Top processes by bytes", "Process", "processes (id and name)",
              r->named);
    top_table(s, &r->files, "Top files by bytes", "File", "names", r->with_file);
    dm_svg_end(s);
}
