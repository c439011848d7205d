/*
 * filter.h - which events the user asked to see (-d, --op, -p, -c, -m).
 *
 * Applied on the source thread before the ring, so unwanted events cost no
 * ring space. Pure functions: no state changes after dm_filter_init.
 */
#ifndef DM_FILTER_H
#define DM_FILTER_H

#include "diskmon.h"
#include "core/options.h"

struct dm_filter {
    const char *disks[DM_MAX_DISK_FILTERS];
    int n_disks;
    unsigned op_mask;
    int has_pid;
    uint32_t pid;
    char comm[DM_PROCESS_MAX];    /* empty: any */
    uint64_t min_latency_ns;
};

void dm_filter_init(struct dm_filter *f, const struct dm_options *opt);

/* Nonzero when ev passes every filter. */
int dm_filter_match(const struct dm_filter *f, const struct dm_event *ev);

/* Nonzero when the disk filter (if any) accepts a disk, given its number and
 * its name (either may be unknown: UINT32_MAX / NULL). A filter entry matches
 * a decimal disk number, a device name, or "MAJ:MIN" against the Linux
 * dev_t (kernel encoding, major = dev >> 20). */
int dm_filter_disk(const struct dm_filter *f, uint32_t disk, const char *name);

#endif /* DM_FILTER_H */
