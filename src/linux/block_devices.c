/*
 * block_devices.c - device names for the Disk column and the -d filter.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux/block_devices.h"
#include "linux/tracefs.h"

static unsigned dev_major(uint32_t dev)
{
    return dev >> 20;
}

static unsigned dev_minor(uint32_t dev)
{
    return dev & 0xFFFFFu;
}

/* The device's name from /sys/dev/block/MAJ:MIN/uevent (DEVNAME=loop0), or
 * "MAJ:MIN" when the device is gone. */
static void lookup_name(uint32_t dev, char *name, size_t cap)
{
    char path[64], buf[1024];

    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", dev_major(dev),
             dev_minor(dev));
    if (dm_read_text(path, buf, sizeof buf) >= 0) {
        const char *p = strstr(buf, "DEVNAME=");

        if (p != NULL) {
            size_t n = strcspn(p + 8, "\n");

            if (n > 0 && n < cap) {
                memcpy(name, p + 8, n);
                name[n] = '\0';
                return;
            }
        }
    }
    snprintf(name, cap, "%u:%u", dev_major(dev), dev_minor(dev));
}

const char *dm_blk_name(struct dm_blk_names *c, uint32_t dev)
{
    int i;

    if (c->n > 0 && c->e[c->last].dev == dev)
        return c->e[c->last].name;
    for (i = 0; i < c->n; i++) {
        if (c->e[i].dev == dev) {
            c->last = i;
            return c->e[i].name;
        }
    }
    if (c->n < DM_BLK_NAME_CACHE) {
        i = c->n++;
    } else {
        i = c->next_evict;
        c->next_evict = (c->next_evict + 1) % DM_BLK_NAME_CACHE;
    }
    c->last = i;
    c->e[i].dev = dev;
    lookup_name(dev, c->e[i].name, sizeof c->e[i].name);
    return c->e[i].name;
}

uint64_t dm_blk_size(const void *ctx, uint32_t dev, const char **from)
{
    char path[64];
    uint64_t sectors;

    (void)ctx;
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/size", dev_major(dev), dev_minor(dev));
    if (dm_read_u64(path, &sectors) != 0 || sectors > UINT64_MAX / DM_SYSFS_SECTOR_BYTES)
        return 0;
    if (from != NULL)
        *from = "sysfs";
    return sectors * DM_SYSFS_SECTOR_BYTES;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void dm_blk_disks_present(char *buf, size_t cap)
{
    DIR *d = opendir("/sys/block");
    char *names[256];
    size_t n = 0, len = 0;
    struct dirent *de;

    buf[0] = '\0';
    if (d == NULL)
        return;
    /* /sys/block lists whole disks only (no partitions). */
    while ((de = readdir(d)) != NULL && n < sizeof names / sizeof names[0]) {
        if (de->d_name[0] == '.')
            continue;
        names[n] = strdup(de->d_name);
        if (names[n] != NULL)
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], by_name);
    for (size_t i = 0; i < n; i++) {
        if (len + strlen(names[i]) + 2 < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", i > 0 ? " " : "",
                                    names[i]);
        free(names[i]);
    }
}

static int usage(const char *entry, const char *why, char *err, size_t errlen)
{
    char disks[256];

    dm_blk_disks_present(disks, sizeof disks);
    snprintf(err, errlen, "-d %s: %s; the disks here are: %s", entry, why,
             disks[0] != '\0' ? disks : "(none found in /sys/block)");
    return DM_EUSAGE;
}

int dm_blk_resolve(const char *entry, uint32_t *dev, char *err, size_t errlen)
{
    char path[256], buf[64];
    const char *name = entry;
    unsigned maj, min;
    int used = 0;

    if (sscanf(entry, "%u:%u%n", &maj, &min, &used) == 2 && entry[used] == '\0') {
        if (maj >= (1u << 12) || min > 0xFFFFFu)
            return usage(entry, "no such device number", err, errlen);
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/partition", maj, min);
        if (access(path, F_OK) == 0)
            return usage(entry, "is a partition's number: give the partition by "
                         "name (sda2) or the disk", err, errlen);
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u", maj, min);
        if (access(path, F_OK) != 0)
            return usage(entry, "no block device has that number", err, errlen);
        *dev = (maj << 20) | min;
        return 0;
    }
    /* /dev/sda is sda. */
    if (strncmp(name, "/dev/", 5) == 0)
        name += 5;
    if (name[0] == '\0' || strchr(name, '/') != NULL || strlen(name) > 64 ||
        name[0] == '.')
        return usage(entry, "not a block device name", err, errlen);
    if (strspn(name, "0123456789") == strlen(name))
        return usage(entry, "on Linux give a device name (sda, nvme0n1, loop0) or "
                     "MAJ:MIN, not a disk number", err, errlen);
    /* A partition's requests are its disk's (the tracepoints name the
     * disk, partitions.h): the kernel filters by the disk, and the core's
     * filter keeps those in the partition (core/filter.c). Its folder is
     * inside its disk's, whose dev is one level up. */
    snprintf(path, sizeof path, "/sys/class/block/%s/partition", name);
    if (access(path, F_OK) == 0)
        snprintf(path, sizeof path, "/sys/class/block/%s/../dev", name);
    else
        snprintf(path, sizeof path, "/sys/class/block/%s/dev", name);
    if (dm_read_text(path, buf, sizeof buf) < 0 || sscanf(buf, "%u:%u", &maj, &min) != 2)
        return usage(entry, "no such block device", err, errlen);
    *dev = (maj << 20) | min;
    return 0;
}

int dm_blk_filter(const char *const *disks, int n_disks, char *filter, size_t cap,
                  char *err, size_t errlen)
{
    size_t len = 0;

    filter[0] = '\0';
    for (int i = 0; i < n_disks; i++) {
        uint32_t dev;
        int rc = dm_blk_resolve(disks[i], &dev, err, errlen);

        if (rc != 0)
            return rc;
        len += (size_t)snprintf(filter + len, cap - len, "%sdev == %u",
                                i > 0 ? " || " : "", (unsigned)dev);
        if (len >= cap) {
            snprintf(err, errlen, "too many -d devices");
            return DM_EUSAGE;
        }
    }
    return 0;
}
