/*
 * partitions.c - each disk's partitions from sysfs, and a request's
 * partition by its sector (partitions.h).
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "linux/partitions.h"
#include "linux/tracefs.h"

/* The least time between two reads of one disk's table. */
#define REREAD_NS 1000000000ull

int dm_blk_read_partitions(const char *disk_dir, struct dm_part *parts, int max)
{
    DIR *d = opendir(disk_dir);
    struct dirent *de;
    int n = 0;

    if (d == NULL)
        return 0;
    /* A partition is a subfolder of its disk with a "partition" file. */
    while ((de = readdir(d)) != NULL && n < max) {
        char path[512];
        uint64_t start, size, number;
        size_t len = strlen(de->d_name);

        if (de->d_name[0] == '.' || len >= sizeof parts[n].name)
            continue;
        snprintf(path, sizeof path, "%s/%s/partition", disk_dir, de->d_name);
        if (dm_read_u64(path, &number) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/start", disk_dir, de->d_name);
        if (dm_read_u64(path, &start) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/size", disk_dir, de->d_name);
        if (dm_read_u64(path, &size) != 0 || size == 0 ||
            start > UINT64_MAX / DM_SYSFS_SECTOR_BYTES - size)
            continue;
        parts[n].first = start * DM_SYSFS_SECTOR_BYTES;
        parts[n].end = (start + size) * DM_SYSFS_SECTOR_BYTES;
        memcpy(parts[n].name, de->d_name, len + 1); /* len was checked above */
        n++;
    }
    closedir(d);
    return n;
}

static void read_table(struct dm_blk_parts *c, int i, uint64_t now_ns)
{
    char dir[64];

    snprintf(dir, sizeof dir, "/sys/dev/block/%u:%u", (unsigned)(c->disk[i].dev >> 20),
             (unsigned)(c->disk[i].dev & 0xFFFFFu));
    c->disk[i].n = dm_blk_read_partitions(dir, c->disk[i].p, DM_BLK_PARTS_MAX);
    c->disk[i].read_ns = now_ns;
}

static int disk_of(struct dm_blk_parts *c, uint32_t dev, uint64_t now_ns)
{
    int i;

    if (c->n_disks > 0 && c->disk[c->last].dev == dev)
        return c->last;
    for (i = 0; i < c->n_disks; i++)
        if (c->disk[i].dev == dev)
            return c->last = i;
    if (c->n_disks < DM_BLK_PART_DISKS) {
        i = c->n_disks++;
    } else {
        i = c->next_evict;
        c->next_evict = (c->next_evict + 1) % DM_BLK_PART_DISKS;
    }
    c->disk[i].dev = dev;
    read_table(c, i, now_ns);
    return c->last = i;
}

const char *dm_blk_partition(struct dm_blk_parts *c, uint32_t dev, uint64_t byte_offset,
                             uint64_t bytes, uint64_t now_ns)
{
    int i = disk_of(c, dev, now_ns);
    const char *name;

    if (dm_part_find(c->disk[i].p, c->disk[i].n, byte_offset, bytes, &name) ==
            DM_PART_OUTSIDE &&
        now_ns >= c->disk[i].read_ns && now_ns - c->disk[i].read_ns >= REREAD_NS) {
        read_table(c, i, now_ns);
        dm_part_find(c->disk[i].p, c->disk[i].n, byte_offset, bytes, &name);
    }
    return name;
}
