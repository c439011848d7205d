/*
 * task_cgroups.h - each process's cgroup v2 path as the kernel moved it,
 * from two tracepoints recorded in the tracefs instance beside the block
 * events (checked on 6.18, formats read at run time):
 *
 *   sched:sched_process_fork  parent_pid, child_pid: a new task starts in
 *                             its parent's cgroup (kernel/cgroup/cgroup.c,
 *                             cgroup_post_fork: the child takes the
 *                             parent's css_set), unless it was cloned
 *                             straight into another (CLONE_INTO_CGROUP,
 *                             which no tracepoint reports)
 *   cgroup:cgroup_attach_task dst_root, dst_path, pid: the process (its
 *                             thread group leader) was moved to dst_path;
 *                             dst_root 0 is the v2 hierarchy (the default
 *                             root takes hierarchy id 0: /proc/PID/cgroup's
 *                             "0::" line), other roots are v1 and ignored.
 *                             dst_path is the kernfs path from the root of
 *                             the hierarchy (cgroup_path), which is what
 *                             /proc/PID/cgroup shows in the initial cgroup
 *                             namespace
 *
 * The reader merges these with the block events by time, so when a
 * request's start is fed, the table holds where its process was at that
 * moment, even if the process has since moved or exited. A process the
 * table has not seen (it was running before the capture) is looked up in
 * /proc once (cgroups.h) and followed from then on.
 *
 * The table is direct-mapped by pid (DM_TASK_SLOTS): a new process always
 * comes with a fork event, which claims its slot, so a reused pid never
 * inherits an old entry; two live pids sharing a slot cost the evicted one
 * a /proc read later (and "unknown", counted, if it has exited by then).
 * Single-threaded: the reader thread only. No system calls.
 */
#ifndef DM_TASK_CGROUPS_H
#define DM_TASK_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "linux/block_decode.h"
#include "linux/cgroups.h"
#include "linux/tracefs.h"

/* 65536 slots of 8 bytes: 512 KiB, so that thousands of processes alive
 * at once rarely share a slot. A power of two. */
#define DM_TASK_SLOTS 65536u

/* The tracepoints, as ftrace names them under events/. */
#define DM_TASK_FORK_EVENT "sched/sched_process_fork"
#define DM_TASK_ATTACH_EVENT "cgroup/cgroup_attach_task"
/* The kernel filter of cgroup_attach_task: moves within the v2 hierarchy. */
#define DM_TASK_ATTACH_FILTER "dst_root == 0"

struct dm_task_slot {
    uint32_t pid;
    uint16_t name;                 /* interned path (cgroups.h); 0: unknown */
    uint16_t used;
};

struct dm_task_cgroups {
    struct dm_task_slot *slots;
    uint64_t forks, moves;         /* events applied */
};

/* Where the two tracepoints' fields are (from their format files). */
struct dm_task_layout {
    uint32_t fork_id, attach_id;   /* common_type values; 0: not opened */
    uint32_t type_off;
    uint32_t parent_pid_off, child_pid_off;
    uint32_t root_off, pid_off, path_loc_off; /* path_loc: __data_loc u32 */
    uint32_t fork_min, attach_min; /* raw bytes needed */
};

/* Returns 0 or DM_ENOMEM. */
int dm_task_cgroups_init(struct dm_task_cgroups *t);
void dm_task_cgroups_free(struct dm_task_cgroups *t);

/* Fill l from the two format files (id in fmt->id). Returns 0, or
 * DM_EUNSUPPORTED with a message naming the missing field. */
int dm_task_layout_set(struct dm_task_layout *l, const struct dm_tp_format *fork,
                       const struct dm_tp_format *attach, char *err, size_t errlen);

/*
 * One raw record of either tracepoint into out: kind DM_BLK_TASK_FORK
 * (pid: the parent, child_pid: the child) or DM_BLK_TASK_MOVE (pid: the
 * process, cgroup: dst_path interned in c). Returns 1 when it was one of
 * them, 0 when raw is another event (a block one), DM_ECORRUPT when it is
 * short or a move to another hierarchy got past the kernel filter
 * (counted by the caller as malformed only in the first case: *skip is set
 * in the second).
 */
int dm_task_decode(const struct dm_task_layout *l, const uint8_t *raw, size_t len,
                   struct dm_cgroups *c, struct dm_blk_sample *out, int *skip);

/* A fork: the child starts where the parent is (parent_name: the parent's
 * path index, looked up by the caller when the table does not know it). */
void dm_task_fork(struct dm_task_cgroups *t, uint32_t child, uint16_t parent_name);

/* A move of process pid to the path of index name. */
void dm_task_move(struct dm_task_cgroups *t, uint32_t pid, uint16_t name);

/* 1 with *name set when the table follows pid, else 0. */
int dm_task_lookup(const struct dm_task_cgroups *t, uint32_t pid, uint16_t *name);

#endif /* DM_TASK_CGROUPS_H */
