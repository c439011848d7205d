/*
 * disks.h - which disk an event is on, decided once for the views that
 * keep figures per disk (the summary, --metrics): a disk is its name when
 * the source gave one (Linux: "sda"), else its number (Windows: 0), and
 * its text (the Disk column, the metrics' disk label) is that name or
 * number. Each view keeps its own figures in an array beside the index.
 */
#ifndef DM_DISKS_H
#define DM_DISKS_H

#include <stdint.h>

#include "diskmon.h"

/* Disks found by their number's low bits with one compare most of the time
 * (a cache: ids[] is the truth). A power of two. */
#define DM_DISK_SLOTS 64

struct dm_disk_id {
    uint32_t number;
    int numeric;                 /* no name: a disk number, sorted by value */
    char text[DM_DISK_NAME_MAX]; /* the name, or the number in decimal */
};

struct dm_disk_index {
    struct dm_disk_id *ids;      /* room for max, given by the view */
    int n, max;
    int16_t by_number[DM_DISK_SLOTS]; /* index + 1; 0: none */
};

/* The index of ev's disk, a new one (n grows by one) if it was not known;
 * -1 when it is new and max disks are known already. */
int dm_disk_index_of(struct dm_disk_index *x, const struct dm_event *ev);

/* The same, inline for a numbered disk already known (Windows, replay):
 * the views that place every request call this. */
static inline int dm_disk_index_fast(struct dm_disk_index *x, const struct dm_event *ev)
{
    int s = x->by_number[ev->disk & (DM_DISK_SLOTS - 1)];

    if (s != 0 && ev->disk_name[0] == '\0' && x->ids[s - 1].numeric &&
        x->ids[s - 1].number == ev->disk)
        return s - 1;
    return dm_disk_index_of(x, ev);
}

#endif /* DM_DISKS_H */
