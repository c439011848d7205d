/*
 * partitions.h - the partition a request falls in, from each disk's
 * partition table in sysfs.
 *
 * The block tracepoints name the whole disk (rq->q->disk) and give the
 * sector from the disk's start: a bio for a partition is moved onto its
 * disk when it is submitted (block/blk-core.c, blk_partition_remap), before
 * any request exists. So a request's partition is found from its sector
 * and the table of the disk's partitions, each of which sysfs describes by
 * /sys/dev/block/MAJ:MIN/PART/start and size, in 512-byte sectors from the
 * disk's start whatever the logical block size
 * (Documentation/ABI/stable/sysfs-block).
 *
 * A disk's table is read the first time the disk is seen, and again when
 * a request lies outside every partition it knows (a table written or a
 * loop device set up with -P after diskmon started), at most once a second
 * per disk. Single-threaded (the reader thread); zero it before use.
 */
#ifndef DM_LINUX_PARTITIONS_H
#define DM_LINUX_PARTITIONS_H

#include <stdint.h>

#include "base/partmap.h"

/* Partitions kept per disk: a GPT may hold 128, but a disk with more than
 * 64 is rare enough to name the rest's requests after the whole disk. */
#define DM_BLK_PARTS_MAX 64
/* Disks whose tables are kept; a further one replaces the oldest. */
#define DM_BLK_PART_DISKS 16

struct dm_blk_parts {
    struct {
        uint32_t dev;          /* kernel dev_t of the disk */
        int n;
        uint64_t read_ns;      /* monotonic time of the last sysfs read */
        struct dm_part p[DM_BLK_PARTS_MAX];
    } disk[DM_BLK_PART_DISKS];
    int n_disks, last, next_evict;
};

/*
 * The name of the partition of disk dev ("loop0p2") that holds
 * [byte_offset, byte_offset + bytes), or "" for the whole disk (partmap.h's
 * rule). now_ns is the request's time on a clock that does not go back
 * (the capture's), which paces the re-reads: the lookup itself reads no
 * clock. The name lives in c until the disk's table is read again.
 */
const char *dm_blk_partition(struct dm_blk_parts *c, uint32_t dev, uint64_t byte_offset,
                             uint64_t bytes, uint64_t now_ns);

/*
 * Fill parts with the partitions under the sysfs folder of a disk
 * ("/sys/dev/block/7:0"). Returns how many, at most max, 0 when none or
 * the folder is gone.
 */
int dm_blk_read_partitions(const char *disk_dir, struct dm_part *parts, int max);

#endif /* DM_LINUX_PARTITIONS_H */
