/*
 * offmap.c - the offset map (offmap.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "views/disks.h"
#include "views/heat_draw.h"
#include "views/heatgrid.h"
#include "views/latmap.h"
#include "views/offmap.h"

struct off_disk {
    struct dm_heat_grid grid;
    uint64_t row_bytes;          /* a power of two */
    uint64_t max_offset;         /* the largest offset drawn */
};

struct dm_offmap {
    const struct dm_heat_time *time;
    struct dm_disk_index index;
    struct dm_disk_id ids[DM_OFF_DISKS];
    struct off_disk disks[DM_OFF_DISKS];
    uint64_t drawn;
    uint64_t not_drawn;          /* on disks past DM_OFF_DISKS, or out of memory */
};

struct dm_offmap *dm_offmap_create(const struct dm_heat_time *time)
{
    struct dm_offmap *m = calloc(1, sizeof *m);

    if (m == NULL)
        return NULL;
    m->index.ids = m->ids;
    m->index.max = DM_OFF_DISKS;
    m->time = time;
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
    for (int j = 0; j < m->index.n; j++)
        if (m->disks[j].grid.counts != NULL)
            dm_heat_grid_halve(&m->disks[j].grid, m->time->cols);
}

void dm_offmap_count(struct dm_offmap *m, uint32_t col, const struct dm_event *ev)
{
    int i = dm_disk_index_of(&m->index, ev);
    struct off_disk *d;

    if (i < 0) {
        m->not_drawn++;
        return;
    }
    d = &m->disks[i];
    if (d->grid.counts == NULL) { /* the disk's first request */
        if (dm_heat_grid_init(&d->grid, DM_HEAT_COLS, DM_OFF_ROWS) != 0) {
            m->not_drawn++;
            return;
        }
        d->row_bytes = DM_OFF_FIRST_ROW_BYTES;
    }
    while (ev->byte_offset / d->row_bytes >= DM_OFF_ROWS) {
        d->row_bytes *= 2;
        dm_heat_grid_halve_rows(&d->grid, m->time->cols);
    }
    dm_heat_grid_add(&d->grid, col, (uint32_t)(ev->byte_offset / d->row_bytes));
    if (ev->byte_offset > d->max_offset)
        d->max_offset = ev->byte_offset;
    m->drawn++;
}

uint64_t dm_offmap_drawn(const struct dm_offmap *m)
{
    return m->drawn;
}

static void edges(const void *ctx, uint32_t row, uint64_t *lo, uint64_t *hi)
{
    const struct off_disk *d = ctx;

    *lo = row * d->row_bytes;
    *hi = (row + 1) * d->row_bytes;
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
    bytes_text(buf, cap, row * d->row_bytes);
    return 1;
}

void dm_offmap_draw(const struct dm_offmap *m, struct dm_svg *s, int xml_decl,
                    const char *source, uint64_t start_wall_ns)
{
    char title[512], sub[512];
    struct dm_heat_panel panels[DM_OFF_DISKS];
    struct dm_heat_map map;
    int n = 0, len;

    for (int i = 0; i < m->index.n; i++) {
        const struct off_disk *d = &m->disks[i];
        struct dm_heat_panel *p = &panels[n];

        if (d->grid.counts == NULL)
            continue;
        p->grid = &d->grid;
        p->disk = m->ids[i].text;
        p->rows.drawn = (uint32_t)(d->max_offset / d->row_bytes) + 1;
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
                   "from 0 to the largest offset seen",
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
