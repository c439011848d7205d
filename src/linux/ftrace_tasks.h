/*
 * ftrace_tasks.h - the tracefs transport's second instance: the process
 * lifetime tracepoints (task_cgroups.h) that say each request's cgroup.
 *
 * Why an instance of their own: the block instance's reader sleeps in
 * poll(2) until its ring has data, waking at the first event while the disk
 * is idle (ftrace_transport.c, buffer_percent 0). In the same ring, every
 * fork on the machine would wake it: a shared build machine forks tens of
 * times a second. This instance is never polled; its per-CPU rings are
 * read in each pass of the reader, as more streams of the merge
 * (cpu_merge.h), so its events still meet the block events in time order
 * (both instances stamp with trace_clock mono). Its buffers are small
 * (forks and moves are few next to block requests) and drop, never
 * overwrite, what does not fit; the drops are said at the end, as cgroups
 * that may be unknown or stale, not as lost requests.
 *
 * The instance is instances/diskmon-PID-tasks (DM_FTRACE_TASKS_SUFFIX),
 * removed in close like the block instance; a killed diskmon's is removed
 * by the next one (dm_ftrace_remove_stale). Reader thread only, but open
 * and close (main thread, before and after it runs).
 */
#ifndef DM_FTRACE_TASKS_H
#define DM_FTRACE_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "linux/ftrace_ring.h"
#include "linux/task_cgroups.h"
#include "linux/transport.h"

#define DM_FTRACE_TASKS_SUFFIX "-tasks"

struct dm_ftrace_tasks {
    char dir[200];                 /* the instance */
    int made;
    struct dm_task_layout layout;
    struct dm_ftrace_layout ring_layout;
    struct dm_ftrace_cpu *cpus;
    const int *cpu_ids;            /* the CPUs' numbers (the setup's) */
    int n_cpus, n_open;
    struct dm_ftrace_counts counts;
    uint64_t undecodable;
    struct dm_cgroups *cgroups;    /* where moves' paths are interned */
};

/*
 * Make the instance beside block_dir (instances/diskmon-PID), with the
 * block instance's sub-buffer layout, and enable sched_process_fork and
 * cgroup_attach_task in it, tracing still off. Returns 0, or a negative
 * dm_err with the reason in why (the caller falls back to reading /proc:
 * requests.h), having released what it made.
 */
int dm_ftrace_tasks_open(struct dm_ftrace_tasks *t, const struct dm_blk_setup *s,
                         const char *block_dir, const struct dm_ftrace_layout *block,
                         char *why, size_t whylen);

/* Start (1) or stop (0) recording. */
void dm_ftrace_tasks_enable(struct dm_ftrace_tasks *t, int on);

/* The next fork or move of CPU index cpu: 1 with *out set, 0 when none. */
int dm_ftrace_tasks_next(struct dm_ftrace_tasks *t, int cpu, struct dm_blk_sample *out);

/* Events the kernel dropped in this instance (its per-CPU stats), and the
 * records that could not be decoded. */
uint64_t dm_ftrace_tasks_dropped(const struct dm_ftrace_tasks *t, uint64_t *malformed);

/* Release everything, the instance included. Safe on a zeroed one. */
void dm_ftrace_tasks_close(struct dm_ftrace_tasks *t, struct dm_notes *notes);

#endif /* DM_FTRACE_TASKS_H */
