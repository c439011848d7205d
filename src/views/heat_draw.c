/*
 * heat_draw.c - heat map panels as SVG (heat_draw.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/digits.h"
#include "output/tz.h"
#include "views/heat_draw.h"

/* viridis at entries 0, 32, 64, ..., 224 and 255 of matplotlib's table
 * (heat_draw.h): dark purple for one request, yellow for the most. */
static const char *const viridis[] = {
    "#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c",
    "#28ae80", "#5ec962", "#addc30", "#fde725",
};
#define STOPS (int)(sizeof viridis / sizeof viridis[0])

/* Layout in pixels. */
#define MARGIN_L 84    /* the vertical axis' labels and title */
#define MARGIN_T 52    /* two title lines */
#define HEADING 18     /* a panel's disk name */
#define GAP 14         /* between panels */
#define MARGIN_B 46    /* the time labels and the axis title */
#define LEGEND_W 170
#define PLOT_W 900     /* the plot's width at most: cells of at least 2 px */
#define EN_DASH "\xE2\x80\x93"

/* The colour classes: class i holds the counts from lo[i] up to lo[i+1] - 1
 * (the last: up to the largest count), lo spread evenly on a log scale. */
struct classes {
    uint64_t lo[STOPS];
    int n;
    uint64_t max;
};

/* x to the power n, in double (no libm: the product of n factors). */
static double power(double x, int n)
{
    double r = 1;

    while (n-- > 0)
        r *= x;
    return r;
}

/* The smallest v with v^STOPS >= max^i: max^(i/STOPS) rounded up. Doubles
 * hold the powers (max^8 of a 64-bit count is below 1e154). */
static uint64_t log_step(uint64_t max, int i)
{
    double want = power((double)max, i);
    uint64_t lo = 1, hi = max;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (power((double)mid, STOPS) >= want)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void classes_of(struct classes *c, uint64_t max)
{
    c->n = 0;
    c->max = max;
    for (int i = 0; i < STOPS && max > 0; i++) {
        uint64_t lo = i == 0 ? 1 : log_step(max, i);

        if (c->n > 0 && lo <= c->lo[c->n - 1])
            continue;
        c->lo[c->n++] = lo;
    }
}

static const char *colour_of(const struct classes *c, uint64_t count)
{
    int i = c->n - 1;

    while (i > 0 && count < c->lo[i])
        i--;
    /* n classes take n stops spread from the first to the last */
    return viridis[c->n > 1 ? i * (STOPS - 1) / (c->n - 1) : STOPS - 1];
}

static uint32_t cell_w_of(uint32_t used)
{
    uint32_t w = used > 0 ? PLOT_W / used : PLOT_W;

    return w < 2 ? 2 : w;
}

static void text_at(struct dm_svg *s, int64_t x, int64_t y, const char *anchor, const char *text)
{
    dm_svg_open(s, "text");
    dm_svg_attr_int(s, "x", x);
    dm_svg_attr_int(s, "y", y);
    if (anchor != NULL)
        dm_svg_attr(s, "text-anchor", anchor);
    dm_svg_text(s, text);
    dm_svg_close(s);
}

static void line(struct dm_svg *s, int64_t x1, int64_t y1, int64_t x2, int64_t y2)
{
    dm_svg_open(s, "line");
    dm_svg_attr_int(s, "x1", x1);
    dm_svg_attr_int(s, "y1", y1);
    dm_svg_attr_int(s, "x2", x2);
    dm_svg_attr_int(s, "y2", y2);
    dm_svg_attr(s, "stroke", "#333");
    dm_svg_close(s);
}

/* Rows a panel may have (latmap.h's 92, offmap.h's 64). */
#define ROWS_MAX 128
/* Room for one number (dm_put_decimal) and the markup around two of them. */
#define PART_MAX (2 * (40 + DM_SVG_NUMBER_SLACK) + 64)

/* A piece of a cell's markup, the same for many cells. */
struct part {
    char text[PART_MAX];
    size_t len;
};

/* What every cell of a panel shares, worked out once per panel (the
 * rows' edges), once per column (the time edges) or once per map. A map
 * has up to 300 x 92 cells per panel and each edge is written twice (the
 * attribute and the tooltip): writing each number once for all its cells
 * is what keeps drawing cheap (docs/benchmarks.md). */
struct cell_fmt {
    const struct classes *cl;
    struct part size;            /* '" width="W" height="H" fill="' */
    struct part disk_attr, disk_tip; /* '" data-disk="D', ', disk D' ("" for none) */
    struct part col_attr, col_tip;   /* '" data-t0="a" data-t1="b', 'a-b s, ' */
    struct part row_attr[ROWS_MAX], row_tip[ROWS_MAX]; /* the same for the rows' edges */
};

#define PUT(p, lit) dm_put_lit(p, DM_LIT(lit))

/* name="lo" name2="hi (the attribute pair, the caller's quote first and
 * last) into a, and lo-hi unit into t. */
static void edge_parts(struct part *a, struct part *t, const char *name_lo, const char *name_hi,
                       uint64_t lo, uint64_t hi, unsigned dec, const char *unit)
{
    char *q = a->text;

    q = PUT(q, "\" ");
    q = dm_put_lit(q, name_lo, strlen(name_lo));
    q = PUT(q, "=\"");
    q = dm_put_decimal(q, lo, dec);
    q = PUT(q, "\" ");
    q = dm_put_lit(q, name_hi, strlen(name_hi));
    q = PUT(q, "=\"");
    q = dm_put_decimal(q, hi, dec);
    a->len = (size_t)(q - a->text);
    q = t->text;
    q = dm_put_decimal(q, lo, dec);
    q = PUT(q, EN_DASH);
    q = dm_put_decimal(q, hi, dec);
    *q++ = ' ';
    q = dm_put_lit(q, unit, strlen(unit));
    t->len = (size_t)(q - t->text);
}

static char *put_part(char *q, const struct part *p)
{
    return dm_put_lit(q, p->text, p->len);
}

/* One non-empty cell: one element with its edges, count and tooltip,
 * built in a buffer from the shared parts and written with one call (no
 * printf here). */
static void cell(struct dm_svg *s, const struct cell_fmt *f, int64_t x, int64_t y,
                 uint32_t row, uint64_t count)
{
    char buf[16 * PART_MAX], *q = buf;

    q = PUT(q, "<rect x=\"");
    q = dm_put_u64(q, (uint64_t)x);
    q = PUT(q, "\" y=\"");
    q = dm_put_u64(q, (uint64_t)y);
    q = put_part(q, &f->size);
    q = dm_put_lit(q, colour_of(f->cl, count), 7);
    q = put_part(q, &f->col_attr);
    q = put_part(q, &f->row_attr[row]);
    q = put_part(q, &f->disk_attr);
    q = PUT(q, "\" data-count=\"");
    q = dm_put_u64(q, count);
    q = PUT(q, "\"><title>");
    q = put_part(q, &f->col_tip);
    q = put_part(q, &f->row_tip[row]);
    q = put_part(q, &f->disk_tip);
    q = PUT(q, ": ");
    q = dm_put_u64(q, count);
    q = count == 1 ? PUT(q, " request") : PUT(q, " requests");
    q = PUT(q, "</title></rect>");
    dm_svg_raw(s, buf, (size_t)(q - buf));
}

/* The parts of a panel's cells that do not change from cell to cell. */
static void panel_parts(struct cell_fmt *f, const struct dm_heat_map *map,
                        const struct dm_heat_panel *p, uint32_t w)
{
    char *q = f->size.text;

    q = PUT(q, "\" width=\"");
    q = dm_put_u64(q, w);
    q = PUT(q, "\" height=\"");
    q = dm_put_u64(q, map->cell_h);
    q = PUT(q, "\" fill=\"");
    f->size.len = (size_t)(q - f->size.text);
    f->disk_attr.len = f->disk_tip.len = 0;
    if (p->disk != NULL) {
        struct dm_text esc = {0};

        dm_xml_escape(&esc, p->disk, strlen(p->disk));
        if (!esc.failed && esc.len + 20 < PART_MAX) {
            q = PUT(f->disk_attr.text, "\" data-disk=\"");
            q = dm_put_lit(q, esc.data, esc.len);
            f->disk_attr.len = (size_t)(q - f->disk_attr.text);
            q = PUT(f->disk_tip.text, ", disk ");
            q = dm_put_lit(q, esc.data, esc.len);
            f->disk_tip.len = (size_t)(q - f->disk_tip.text);
        }
        dm_text_free(&esc);
    }
    for (uint32_t r = 0; r < p->rows.drawn && r < ROWS_MAX; r++) {
        uint64_t lo, hi;

        p->rows.edges(p->rows.ctx, r, &lo, &hi);
        edge_parts(&f->row_attr[r], &f->row_tip[r], p->rows.attr_lo, p->rows.attr_hi, lo, hi,
                   p->rows.decimals, p->rows.unit);
    }
}

/* The time edges of column col. */
static void column_parts(struct cell_fmt *f, const struct dm_heat_map *map, uint32_t col)
{
    uint64_t t0 = (uint64_t)col * map->time->step_ms, t1 = t0 + map->time->step_ms;

    edge_parts(&f->col_attr, &f->col_tip, "data-t0", "data-t1", t0, t1, 3, "s, ");
}

/* The time axis under a plot at y: ticks on a 1-2-5 series of whole ms. */
static void time_axis(struct dm_svg *s, const struct dm_heat_map *map, int64_t y)
{
    uint32_t used = map->time->used > 0 ? map->time->used : 1, w = cell_w_of(used);
    uint64_t span = (uint64_t)used * map->time->step_ms, tick = 1;
    static const unsigned series[] = {1, 2, 5};
    char buf[32 + DM_SVG_NUMBER_SLACK];

    line(s, MARGIN_L, y, MARGIN_L + (int64_t)used * w, y);
    for (uint64_t decade = 1;; decade *= 10) {
        int found = 0;

        for (int i = 0; i < 3 && !found; i++)
            if (span / (series[i] * decade) <= 10) {
                tick = series[i] * decade;
                found = 1;
            }
        if (found)
            break;
    }
    for (uint64_t t = 0; t <= span; t += tick) {
        int64_t x = MARGIN_L + (int64_t)(t * used * w / span);

        line(s, x, y, x, y + 5);
        dm_fixed_text_short(buf, t, 3);
        text_at(s, x, y + 18, "middle", buf);
    }
}

static void time_title(struct dm_svg *s, const struct dm_heat_map *map, int64_t x, int64_t y)
{
    char buf[160];

    if (map->start_wall_ns != 0) {
        struct dm_civil c;

        dm_civil_from_seconds((int64_t)(map->start_wall_ns / 1000000000u), &c);
        snprintf(buf, sizeof buf,
                 "Time (s since the start, %04d-%02d-%02d %02d:%02d:%02d UTC); column %llu ms",
                 c.year, c.month, c.day, c.hour, c.minute, c.second,
                 (unsigned long long)map->time->step_ms);
    } else {
        snprintf(buf, sizeof buf, "Time (s since the start); column %llu ms",
                 (unsigned long long)map->time->step_ms);
    }
    text_at(s, x, y, "middle", buf);
}

static uint64_t largest_count(const struct dm_heat_map *map)
{
    uint64_t max = 0;

    for (int k = 0; k < map->n_panels; k++)
        for (uint32_t col = 0; col < map->time->used; col++)
            for (uint32_t r = 0; r < map->panels[k].rows.drawn; r++) {
                uint64_t n = dm_heat_grid_at(map->panels[k].grid, col, r);

                if (n > max)
                    max = n;
            }
    return max;
}

/* One panel with its top at y; returns its height. */
static int64_t panel(struct dm_svg *s, const struct dm_heat_map *map,
                     const struct dm_heat_panel *p, const struct classes *cl, int64_t y)
{
    uint32_t used = map->time->used, w = cell_w_of(used), rows = p->rows.drawn;
    int64_t top = y + (p->disk != NULL ? HEADING : 0), h = (int64_t)rows * map->cell_h;
    char buf[256 + DM_SVG_NUMBER_SLACK];
    struct cell_fmt *f = malloc(sizeof *f);

    if (rows > ROWS_MAX)
        rows = ROWS_MAX; /* the maps' own bounds keep them below */
    if (p->disk != NULL) {
        snprintf(buf, sizeof buf, p->note != NULL ? "disk %s: %s" : "disk %s", p->disk,
                 p->note != NULL ? p->note : "");
        text_at(s, MARGIN_L, y + 13, NULL, buf);
    }
    dm_svg_open(s, "g");
    if (p->disk != NULL)
        dm_svg_attr(s, "data-disk", p->disk);
    if (p->disk_size != 0) {
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)p->disk_size);
        dm_svg_attr(s, "data-disk-size", buf);
    }
    if (f != NULL) {
        f->cl = cl;
        panel_parts(f, map, p, w);
    }
    for (uint32_t col = 0; col < used && f != NULL; col++) {
        column_parts(f, map, col);
        for (uint32_t r = 0; r < rows; r++) {
            uint64_t n = dm_heat_grid_at(p->grid, col, r);

            if (n != 0)
                cell(s, f, MARGIN_L + (int64_t)col * w, top + h - (int64_t)(r + 1) * map->cell_h,
                     r, n);
        }
    }
    if (f == NULL)
        dm_svg_element(s, "text", "(cells not drawn: out of memory)", NULL);
    free(f);
    dm_svg_close(s);
    line(s, MARGIN_L, top, MARGIN_L, top + h);
    for (uint32_t r = 0; r < rows; r++)
        if (p->rows.label(p->rows.ctx, r, buf, sizeof buf)) {
            int64_t yr = top + h - (int64_t)r * map->cell_h;

            line(s, MARGIN_L - 5, yr, MARGIN_L, yr);
            text_at(s, MARGIN_L - 8, yr + 4, "end", buf);
        }
    return (p->disk != NULL ? HEADING : 0) + h;
}

static void legend(struct dm_svg *s, const struct classes *cl, int64_t x, int64_t y)
{
    char buf[64];

    text_at(s, x, y, NULL, "requests per cell");
    for (int i = 0; i < cl->n; i++) {
        uint64_t hi = i + 1 < cl->n ? cl->lo[i + 1] - 1 : cl->max;
        int64_t yi = y + 10 + (int64_t)(cl->n - 1 - i) * 18;

        dm_svg_open(s, "rect");
        dm_svg_attr_int(s, "x", x);
        dm_svg_attr_int(s, "y", yi);
        dm_svg_attr_int(s, "width", 16);
        dm_svg_attr_int(s, "height", 14);
        dm_svg_attr(s, "fill", colour_of(cl, cl->lo[i]));
        dm_svg_close(s);
        if (hi == cl->lo[i])
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)hi);
        else
            snprintf(buf, sizeof buf, "%llu" EN_DASH "%llu", (unsigned long long)cl->lo[i],
                     (unsigned long long)hi);
        text_at(s, x + 22, yi + 12, NULL, buf);
    }
    if (cl->n == 0)
        text_at(s, x, y + 20, NULL, "(no requests)");
}

/* The subtitle, then, when the columns were merged to fit, by how much:
 * the time axis is every map's, so the sentence is written here once. */
static void subtitle(struct dm_svg *s, const struct dm_heat_map *map)
{
    const struct dm_heat_time *tm = map->time;
    char sub[768];

    if (tm->doublings == 0) {
        dm_svg_element(s, "text", map->subtitle, "x", "8", "y", "36", NULL);
        return;
    }
    snprintf(sub, sizeof sub,
             "%s; columns merged: the step doubled %u time%s to %llu ms to stay within "
             "%u columns",
             map->subtitle, tm->doublings, tm->doublings == 1 ? "" : "s",
             (unsigned long long)tm->step_ms, tm->cols);
    dm_svg_element(s, "text", sub, "x", "8", "y", "36", NULL);
}

void dm_heat_draw(struct dm_svg *s, const struct dm_heat_map *map, int xml_decl)
{
    uint32_t used = map->time->used > 0 ? map->time->used : 1, w = cell_w_of(used);
    int64_t plot_w = (int64_t)used * w, height = MARGIN_T + MARGIN_B, y = MARGIN_T;
    struct classes cl;

    for (int k = 0; k < map->n_panels; k++)
        height += (map->panels[k].disk != NULL ? HEADING : 0) +
                  (int64_t)map->panels[k].rows.drawn * map->cell_h + (k > 0 ? GAP : 0);
    if (height < MARGIN_T + MARGIN_B + 9 * 18 + 20)
        height = MARGIN_T + MARGIN_B + 9 * 18 + 20; /* room for the legend */
    classes_of(&cl, largest_count(map));
    dm_svg_begin(s, xml_decl, MARGIN_L + plot_w + 24 + LEGEND_W, height);
    dm_svg_attr(s, "font-family", "sans-serif");
    dm_svg_attr(s, "font-size", "12");
    dm_svg_element(s, "rect", NULL, "width", "100%", "height", "100%", "fill", "#fff", NULL);
    dm_svg_element(s, "text", map->title, "x", "8", "y", "18", "font-size", "15",
                   "font-weight", "bold", NULL);
    subtitle(s, map);
    for (int k = 0; k < map->n_panels; k++) {
        if (k > 0)
            y += GAP;
        y += panel(s, map, &map->panels[k], &cl, y);
    }
    time_axis(s, map, y);
    time_title(s, map, MARGIN_L + plot_w / 2, y + 36);
    if (map->n_panels > 0) {
        dm_svg_open(s, "text");
        dm_svg_attr(s, "transform", "rotate(-90)");
        dm_svg_attr_int(s, "x", -(MARGIN_T + (y - MARGIN_T) / 2));
        dm_svg_attr_int(s, "y", 14);
        dm_svg_attr(s, "text-anchor", "middle");
        dm_svg_text(s, map->panels[0].rows.axis);
        dm_svg_close(s);
    }
    legend(s, &cl, MARGIN_L + plot_w + 24, MARGIN_T + 10);
    dm_svg_end(s);
}
