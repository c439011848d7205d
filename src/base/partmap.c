/*
 * partmap.c - a request's partition by its byte range (partmap.h).
 */
#include "base/partmap.h"

enum dm_part_where dm_part_find(const struct dm_part *parts, int n_parts,
                                uint64_t offset, uint64_t bytes, const char **name)
{
    /* An end past 2^64 (a corrupt record) is cut there, not wrapped. */
    uint64_t end = offset + bytes < offset ? UINT64_MAX : offset + bytes;
    int overlaps = 0;

    *name = "";
    if (bytes == 0)
        return DM_PART_NO_RANGE;
    for (int i = 0; i < n_parts; i++) {
        const struct dm_part *p = &parts[i];

        if (offset >= p->end || end <= p->first)
            continue;
        if (offset >= p->first && end <= p->end) {
            *name = p->name;
            return DM_PART_INSIDE;
        }
        overlaps = 1;
    }
    return overlaps ? DM_PART_SPANS : DM_PART_OUTSIDE;
}
