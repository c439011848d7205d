/*
 * cgroup_ids.h - cgroup ids (PERF_SAMPLE_CGROUP) to cgroup v2 paths.
 *
 * With PERF_SAMPLE_CGROUP (Linux 5.7+) each perf sample carries the id of
 * the cgroup the sampled task was in at the event, on the hierarchy of the
 * perf_event controller (kernel/events/core.c, perf_prepare_sample:
 * cgroup_id(task_css_check(current, perf_event_cgrp_id)->cgroup)). When
 * that controller is not bound to a v1 hierarchy it lives on v2 (where it
 * is implicit, present in every cgroup), so the id is the v2 cgroup's.
 * cgroup_id() is the cgroup directory's kernfs node id, which the kernel
 * gives out as the directory's file handle (kernfs_encode_fh: 8 bytes) and,
 * on 64-bit kernels, as its inode number; `perf report --sort cgroup`
 * resolves ids the same way, walking the cgroup2 mount with
 * name_to_handle_at (tools/perf/util/cgroup.c, read_cgroup_id).
 *
 * The map is read once at open and read again when an id is not in it (a
 * cgroup made since); an id still not found (the cgroup was removed before
 * the walk) stays unknown and is counted. Single-threaded: the reader only.
 */
#ifndef DM_CGROUP_IDS_H
#define DM_CGROUP_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "linux/cgroups.h"

/* Ids remembered: twice the most paths, so lookups stay short. */
#define DM_CGROUP_ID_SLOTS (2u * DM_CGROUP_NAMES)

struct dm_cgroup_id_slot {
    uint64_t id;                   /* 0: empty (no cgroup has id 0) */
    uint16_t name;                 /* interned path; 0: looked for, not found */
};

struct dm_cgroup_ids {
    char mount[256];               /* the cgroup2 mount walked */
    struct dm_cgroups *names;      /* where paths are interned */
    struct dm_cgroup_id_slot *slots;
    uint32_t used;
    uint64_t walks;                /* walks of the mount (the first included) */
    uint64_t unknown;              /* samples whose id maps to no path */
};

/*
 * Find the cgroup2 mount in mounts_text (/proc/self/mounts), check in
 * self_cgroup (/proc/self/cgroup) that no v1 hierarchy holds the perf_event
 * controller, and walk the mount. Returns 0, or DM_EUNSUPPORTED with why
 * (a sentence for -v) when the ids cannot be mapped, or DM_ENOMEM.
 */
int dm_cgroup_ids_open(struct dm_cgroup_ids *m, struct dm_cgroups *names,
                       const char *mounts_text, const char *self_cgroup, char *why,
                       size_t whylen);

/* Walk the mount at dir (the tests' own tree) without the checks above. */
int dm_cgroup_ids_open_at(struct dm_cgroup_ids *m, struct dm_cgroups *names,
                          const char *dir);

void dm_cgroup_ids_free(struct dm_cgroup_ids *m);

/* The interned path of cgroup id, walking the mount again on a first miss;
 * 0 when unknown (counted in m->unknown). */
uint16_t dm_cgroup_ids_name(struct dm_cgroup_ids *m, uint64_t id);

/* The id of directory name in dirfd, as the kernel names cgroups: its file
 * handle when that is 8 bytes, else its inode number. 0 on failure. */
uint64_t dm_cgroup_dir_id(int dirfd, const char *name);

#endif /* DM_CGROUP_IDS_H */
