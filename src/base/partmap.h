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

/*
 * The volumes of every disk of a machine (Windows: a disk number and the
 * volume's byte range on it, as a trace's SysConfig LogDisk records or
 * IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS give them), for the same lookup.
 * Zero it before use; it grows as entries are added, up to DM_PARTMAP_MAX
 * extents (a bound for a hostile trace, far above any machine's volumes:
 * each add compares with every entry), and dm_partmap_free releases it.
 */
#define DM_PARTMAP_MAX 4096
struct dm_partmap {
    int n, cap;
    uint32_t *disk;
    struct dm_part *part;
};

/* Add [first, first + bytes) of disk as name. The same disk and range
 * again is not added twice (a trace may repeat its records). Returns 0, or
 * -1 when the map is full (DM_PARTMAP_MAX, or memory), bytes is 0 or the
 * range wraps (not added). */
int dm_partmap_add(struct dm_partmap *m, uint32_t disk, uint64_t first, uint64_t bytes,
                   const char *name);
void dm_partmap_free(struct dm_partmap *m);

/* The name of the volume of disk that holds [offset, offset + bytes), or
 * "" (dm_part_find's rule over disk's entries). */
const char *dm_partmap_name(const struct dm_partmap *m, uint32_t disk, uint64_t offset,
                            uint64_t bytes);

#endif /* DM_PARTMAP_H */
