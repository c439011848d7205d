/*
 * block_devices.h - block devices by name and number: the names shown in
 * the Disk column, and -d turned into the kernel's event filter.
 *
 * Tracepoints carry the kernel's dev_t encoding: major = dev >> 20,
 * minor = dev & 0xFFFFF (include/linux/kdev_t.h, MINORBITS 20), not glibc's
 * makedev. Names come from sysfs (/sys/dev/block, /sys/class/block).
 */
#ifndef DM_BLOCK_DEVICES_H
#define DM_BLOCK_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

#define DM_BLK_NAME_CACHE 64

/* A small cache of dev -> name: one sysfs read per device seen. Zero it
 * before use. Single-threaded (the reader thread). */
struct dm_blk_names {
    struct {
        uint32_t dev;
        char name[DM_DISK_NAME_MAX];
    } e[DM_BLK_NAME_CACHE];
    int n, last, next_evict;
};

/* The name of dev ("loop0"), or "MAJ:MIN" when sysfs does not know it. */
const char *dm_blk_name(struct dm_blk_names *c, uint32_t dev);

/*
 * One -d entry to a kernel dev_t: a name as in /sys/class/block ("sda",
 * "/dev/sda" too) or "MAJ:MIN". A partition's name ("sda2") gives its
 * disk's dev_t, the events the kernel reports it in. A partition's
 * MAJ:MIN, a number alone or a device that does not exist is DM_EUSAGE,
 * with a message that lists the disks present.
 */
int dm_blk_resolve(const char *entry, uint32_t *dev, char *err, size_t errlen);

/*
 * The ftrace filter expression for the -d entries ("dev == A || dev == B",
 * Documentation/trace/events.rst, "Event filtering"), empty for none.
 * Returns 0 or dm_blk_resolve's error.
 */
int dm_blk_filter(const char *const *disks, int n_disks, char *filter, size_t cap,
                  char *err, size_t errlen);

/* dm_source.disk_size (diskmon.h): the size of dev in bytes from
 * /sys/dev/block/MAJ:MIN/size, 0 when sysfs does not say; *from is
 * "sysfs". ctx is unused. Any thread (it only reads a file). */
uint64_t dm_blk_size(const void *ctx, uint32_t dev, const char **from);

/* The whole disks the system has, space-separated ("vda zram0"), sorted. */
void dm_blk_disks_present(char *buf, size_t cap);

#endif /* DM_BLOCK_DEVICES_H */
