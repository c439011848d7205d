/*
 * partmap.h - which partition (Linux) or volume (Windows) of a disk a
 * request falls in, from the disk's table of byte ranges.
 *
 * One lookup for every source: Linux builds the table from sysfs
 * (linux/partitions.c), and the rule is the same wherever the table comes
 * from. A request is named after a partition only when all of it lies
 * inside that one; one that crosses a boundary, or lies outside every
 * partition (the partition table itself, a gap), belongs to the whole disk
 * and is named "". Offsets stay relative to the disk.
 */
#ifndef DM_PARTMAP_H
#define DM_PARTMAP_H

#include <stdint.h>

#include "diskmon.h"

/* One partition: the bytes [first, end) from the disk's start. */
struct dm_part {
    uint64_t first, end;
    char name[DM_PARTITION_MAX]; /* "sda2", "C:" */
};

/* What dm_part_find found for a request. */
enum dm_part_where {
    DM_PART_INSIDE = 0, /* all of it in one partition: that one's name */
    DM_PART_SPANS,      /* it overlaps a partition but is not inside one */
    DM_PART_OUTSIDE,    /* it overlaps none: the table may be out of date */
    DM_PART_NO_RANGE    /* no bytes (a flush): the whole disk, always */
};

/*
 * The partition of n_parts (in any order, none overlapping) that holds the
 * request [offset, offset + bytes), and where the request lies. *name is
 * the partition's name for DM_PART_INSIDE, else "" (never NULL).
 */
enum dm_part_where dm_part_find(const struct dm_part *parts, int n_parts,
                                uint64_t offset, uint64_t bytes, const char **name);

#endif /* DM_PARTMAP_H */
