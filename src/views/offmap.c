/*
 * offmap.c - the offset map (offmap.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "views/disks.h"
#include "views/heat_draw.h"
#include "views/heatgrid.h"
#include "views/offmap.h"

struct off_disk {
    struct dm_heat_grid grid;
    unsigned row_shift;          /* rows of 2^row_shift bytes */
    uint64_t max_offset;         /* the largest offset drawn */
    uint64_t size;               /* the disk's size from the source; 0: unknown */
    const char *size_from;       /* how the source knows it */
    int past_size;               /* a request started at or past size: the
                                  * rows end at the largest offset seen */
};

struct dm_offmap {
    const struct dm_heat_time *time;
    const struct dm_disk_index *index; /* the caller's */
    struct off_disk disks[DM_OFF_DISKS];
    uint64_t (*disk_size)(const void *ctx, uint32_t disk, const char **from);
    const void *disk_size_ctx;
    uint64_t drawn;
    uint64_t not_drawn;          /* on disks past DM_OFF_DISKS, or out of memory */
};

struct dm_offmap *dm_offmap_create(const struct dm_heat_time *time,
                                   const struct dm_disk_index *index,
                                   uint64_t (*disk_size)(const void *, uint32_t, const char **),
                                   const void *disk_size_ctx)
{
    struct dm_offmap *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->index = index;
    m->time = time;
    m->disk_size = disk_size;
    m->disk_size_ctx = disk_size_ctx;
    return m;
}

void dm_offmap_destroy(struct dm_offmap *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < DM_OFF_DISKS; i++)
        dm_heat_grid_free(&m->disks[i].grid);
    free(m);
}

void dm_offmap_halve(struct dm_offmap *m)
{
    for (int j = 0; j < DM_OFF_DISKS; j++)
        if (m->disks[j].grid.counts != NULL)
            dm_heat_grid_halve(&m->disks[j].grid, m->time->cols);
}

/* A disk's first request: its grid, and its rows from the size the source
 * knows (the least power of two that DM_OFF_ROWS rows of it cover the
 * disk, and not below 2^DM_OFF_MIN_ROW_SHIFT), else 2^DM_OFF_FIRST_ROW_SHIFT. */
static int disk_start(struct dm_offmap *m, struct off_disk *d, const struct dm_event *ev)
{
    if (dm_heat_grid_init(&d->grid, DM_HEAT_COLS, DM_OFF_ROWS) != 0)
        return -1;
    d->row_shift = DM_OFF_FIRST_ROW_SHIFT;
    if (m->disk_size != NULL)
        d->size = m->disk_size(m->disk_size_ctx, ev->disk, &d->size_from);
    if (d->size > 0) {
        d->row_shift = DM_OFF_MIN_ROW_SHIFT;
        while (d->row_shift < 63 && ((d->size - 1) >> d->row_shift) >= DM_OFF_ROWS)
            d->row_shift++;
    }
    return 0;
}

void dm_offmap_count(struct dm_offmap *m, uint32_t col, int disk, const struct dm_event *ev)
{
    struct off_disk *d;

    if (disk < 0 || disk >= DM_OFF_DISKS) {
        m->not_drawn++;
        return;
    }
    d = &m->disks[disk];
    if (d->grid.counts == NULL && disk_start(m, d, ev) != 0) {
        m->not_drawn++;
        return;
    }
    /* Row heights are powers of two: a shift, not a division. */
    while ((ev->byte_offset >> d->row_shift) >= DM_OFF_ROWS) {
        d->row_shift++;
        dm_heat_grid_halve_rows(&d->grid, m->time->cols);
    }
    dm_heat_grid_add(&d->grid, col, (uint32_t)(ev->byte_offset >> d->row_shift));
    if (ev->byte_offset > d->max_offset) {
        d->max_offset = ev->byte_offset;
        if (d->size > 0 && ev->byte_offset >= d->size)
            d->past_size = 1;
    }
    m->drawn++;
}

uint64_t dm_offmap_drawn(const struct dm_offmap *m)
{
    return m->drawn;
}

static void edges(const void *ctx, uint32_t row, uint64_t *lo, uint64_t *hi)
{
    const struct off_disk *d = ctx;

    *lo = (uint64_t)row << d->row_shift;
    *hi = (uint64_t)(row + 1) << d->row_shift;
}

/* Bytes in the largest binary unit that keeps one decimal honest. */
static void bytes_text(char *buf, size_t cap, uint64_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;

    while (u < 6 && b >= (1024ull << (10 * u)))
        u++;
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else
        snprintf(buf, cap, "%.1f %s", (double)b / (double)(1ull << (10 * u)), unit[u]);
}

/* Every eighth row's lower edge, in binary units. */
static int label(const void *ctx, uint32_t row, char *buf, size_t cap)
{
    const struct off_disk *d = ctx;

    if (row % 8 != 0)
        return 0;
    bytes_text(buf, cap, (uint64_t)row << d->row_shift);
    return 1;
}

/* The rows a panel draws: to the disk's end where its size holds, else to
 * the largest offset seen; what its heading says about it, into note. */
static uint32_t rows_of(const struct off_disk *d, char *note, size_t cap)
{
    uint32_t to_max = (uint32_t)(d->max_offset >> d->row_shift) + 1, to_size;
    char b[32];

    if (d->size == 0 || d->past_size) {
        bytes_text(b, sizeof b, d->max_offset);
        snprintf(note, cap, "rows to the largest offset seen, %s%s", b,
                 d->past_size ? " (past the size the source gave)" : "");
        return to_max;
    }
    to_size = (uint32_t)((d->size - 1) >> d->row_shift) + 1;
    bytes_text(b, sizeof b, d->size);
    snprintf(note, cap, "disk size %s (%llu bytes, from %s)", b, (unsigned long long)d->size,
             d->size_from != NULL ? d->size_from : "the source");
    return to_size > to_max ? to_size : to_max;
}

void dm_offmap_draw(const struct dm_offmap *m, struct dm_svg *s, int xml_decl,
                    const char *source, uint64_t start_wall_ns)
{
    char title[512], sub[512], notes[DM_OFF_DISKS][160];
    struct dm_heat_panel panels[DM_OFF_DISKS];
    struct dm_heat_map map;
    int n = 0, len;

    for (int i = 0; i < DM_OFF_DISKS && i < m->index->n; i++) {
        const struct off_disk *d = &m->disks[i];
        struct dm_heat_panel *p = &panels[n];

        if (d->grid.counts == NULL)
            continue;
        p->grid = &d->grid;
        p->disk = m->index->ids[i].text;
        p->note = notes[n];
        p->disk_size = d->past_size ? 0 : d->size;
        p->rows.drawn = rows_of(d, notes[n], sizeof notes[n]);
        p->rows.edges = edges;
        p->rows.ctx = d;
        p->rows.attr_lo = "data-off0";
        p->rows.attr_hi = "data-off1";
        p->rows.decimals = 0;
        p->rows.unit = "bytes";
        p->rows.label = label;
        p->rows.axis = "Byte offset";
        n++;
    }
    snprintf(title, sizeof title, "diskmon disk offset map: %s", source);
    len = snprintf(sub, sizeof sub, "%llu request%s drawn (all kinds in one count); linear rows "
                   "from 0 to each disk's size where the source knows it, else to the "
                   "largest offset seen",
                   (unsigned long long)m->drawn, m->drawn == 1 ? "" : "s");
    if (m->not_drawn > 0 && len > 0 && (size_t)len < sizeof sub)
        snprintf(sub + len, sizeof sub - (size_t)len,
                 "; %llu on disks past the first %d not drawn",
                 (unsigned long long)m->not_drawn, DM_OFF_DISKS);
    map.title = title;
    map.subtitle = sub;
    map.time = m->time;
    map.panels = panels;
    map.n_panels = n;
    map.start_wall_ns = start_wall_ns;
    map.cell_h = 5;
    dm_heat_draw(s, &map, xml_decl);
}
