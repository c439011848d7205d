/*
 * partmap.c - a request's partition by its byte range (partmap.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/partmap.h"

/* An end past 2^64 (a corrupt record) is cut there, not wrapped. */
static uint64_t end_of(uint64_t offset, uint64_t bytes)
{
    return offset + bytes < offset ? UINT64_MAX : offset + bytes;
}

/* 0: [offset, end) misses p; 1: it lies inside p; 2: it overlaps p only. */
static int relation(const struct dm_part *p, uint64_t offset, uint64_t end)
{
    if (offset >= p->end || end <= p->first)
        return 0;
    return offset >= p->first && end <= p->end ? 1 : 2;
}

enum dm_part_where dm_part_find(const struct dm_part *parts, int n_parts,
                                uint64_t offset, uint64_t bytes, const char **name)
{
    uint64_t end = end_of(offset, bytes);
    int overlaps = 0;

    *name = "";
    if (bytes == 0)
        return DM_PART_NO_RANGE;
    for (int i = 0; i < n_parts; i++) {
        int r = relation(&parts[i], offset, end);

        if (r == 1) {
            *name = parts[i].name;
            return DM_PART_INSIDE;
        }
        overlaps |= r == 2;
    }
    return overlaps ? DM_PART_SPANS : DM_PART_OUTSIDE;
}

int dm_partmap_add(struct dm_partmap *m, uint32_t disk, uint64_t first, uint64_t bytes,
                   const char *name)
{
    struct dm_part *p;

    if (bytes == 0 || first + bytes < first)
        return -1;
    for (int i = 0; i < m->n; i++)
        if (m->disk[i] == disk && m->part[i].first == first &&
            m->part[i].end == first + bytes)
            return 0;
    if (m->n == m->cap) {
        int cap = m->cap == 0 ? 16 : m->cap * 2;
        uint32_t *disks;
        struct dm_part *parts;

        if (m->cap >= DM_PARTMAP_MAX)
            return -1;
        if (cap > DM_PARTMAP_MAX)
            cap = DM_PARTMAP_MAX;
        disks = realloc(m->disk, (size_t)cap * sizeof *disks);
        if (disks == NULL)
            return -1;
        m->disk = disks;
        parts = realloc(m->part, (size_t)cap * sizeof *parts);
        if (parts == NULL)
            return -1;
        m->part = parts;
        m->cap = cap;
    }
    p = &m->part[m->n];
    p->first = first;
    p->end = first + bytes;
    snprintf(p->name, sizeof p->name, "%s", name);
    m->disk[m->n++] = disk;
    return 0;
}

const char *dm_partmap_name(const struct dm_partmap *m, uint32_t disk, uint64_t offset,
                            uint64_t bytes)
{
    uint64_t end = end_of(offset, bytes);

    if (bytes == 0)
        return "";
    for (int i = 0; i < m->n; i++)
        if (m->disk[i] == disk && relation(&m->part[i], offset, end) == 1)
            return m->part[i].name;
    return "";
}

void dm_partmap_free(struct dm_partmap *m)
{
    free(m->disk);
    free(m->part);
    m->disk = NULL;
    m->part = NULL;
    m->n = m->cap = 0;
}
