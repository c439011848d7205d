/*
 * transport.h - how block tracepoint samples get from the kernel to the
 * Linux source: one implementation per transport.
 *
 *   tracefs  (ftrace_transport.c, the default) a private tracefs instance
 *            whose per-CPU ring buffers are read as binary sub-buffers
 *   perf     (perf_transport.c) perf_event_open on the tracepoints, one
 *            mmap'd perf ring per CPU
 *
 * Both hand out the same decoded samples, per CPU, in each CPU's time
 * order; linux_source.c merges the CPUs by time and turns samples into
 * requests (requests.h). All calls but wake() come from the source's
 * thread (open and close from the main thread, before and after it runs).
 */
#ifndef DM_TRANSPORT_H
#define DM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "linux/block_decode.h"
#include "linux/requests.h"

#define DM_BLK_MAX_KINDS 5        /* tracepoints opened at once */

struct dm_blk_setup {
    const char *tracefs;          /* where tracefs is mounted */
    const struct dm_blk_decoder *dec;
    enum dm_blk_kind kinds[DM_BLK_MAX_KINDS]; /* [0]: the start event */
    int n_kinds;
    /* The kernel filter of each of kinds[] ("dev == N || ...", for -d,
     * and for block_rq_issue without --queue also its flush requests
     * only: linux_source.c), "" for none. */
    const char *filters[DM_BLK_MAX_KINDS];
    const int *cpus;              /* online CPUs */
    int n_cpus;
    uint64_t ring_bytes;          /* per-CPU buffer size */
    struct dm_notes *notes;       /* the source's notes for the user */
    struct dm_notes *info;        /* its info lines (diskmon.h), or NULL */
    /* Where the transport interns the cgroup paths it learns (perf: the
     * samples' ids; tracefs: the moves), and what it gives: open() sets
     * *cg_source and *cg_why (the reason for DM_CGROUPS_PROC, cg_why_len
     * bytes). */
    struct dm_cgroups *cgroups;
    /* 0: nothing reads a request's cgroup; open() follows and samples
     * none, and sets *cg_source to DM_CGROUPS_NONE. */
    int want_cgroups;
    enum dm_cgroup_source *cg_source;
    char *cg_why;
    size_t cg_why_len;
};

struct dm_blk_transport_ops {
    const char *name;             /* "tracefs" or "perf" */
    /* Set everything up, events still off. On failure returns a negative
     * dm_err with a message in err, and has released what it made. */
    int (*open)(void **t, const struct dm_blk_setup *s, char *err, size_t errlen);
    /* Start (1) or stop (0) recording. perf switches completions on before
     * starts and off after them; tracefs switches the instance as a whole.
     * Either way a request cut by an edge is not counted as lost (a
     * completion in the first seconds without its start, or a start still
     * open at the end: requests.h). */
    void (*enable)(void *t, int on);
    /* Sleep until data may be there, wake() was called or timeout_ms
     * passed. idle: nothing is held back and the last pass found nothing,
     * so the first new sample should wake the reader (tracefs can; perf,
     * whose wake-up point is fixed at open, caps the sleep at its
     * PERF_QUIET_MS instead). Otherwise the kernel wakes it only once a
     * buffer is a quarter full, which keeps wake-ups few under load.
     * Returns 0 or DM_EOS (message in err). */
    int (*wait)(void *t, int timeout_ms, int idle, char *err, size_t errlen);
    /* Take in what the kernel has now, after what next() has not handed
     * out yet (the merge holds samples back: cpu_merge.h). Returns nonzero
     * when more was left than one pass holds (call again without
     * waiting). */
    int (*fill)(void *t);
    /* The next sample of stream cpu (0..streams()-1) in this pass: 1 with
     * *out set; 0 when this CPU has no more in the pass and its buffer was
     * read to the end; DM_MERGE_CUT when its pass stopped short of what
     * the kernel has (the merge must not go past its last sample). */
    int (*next)(void *t, int cpu, struct dm_blk_sample *out);
    /* The samples handed out so far are done with: give the space back. */
    void (*release)(void *t);
    /* Any thread: make wait() return now. */
    void (*wake)(void *t);
    /* After the last pass: the kernel's losses and the malformed records. */
    void (*losses)(void *t, struct dm_blk_losses *l, uint64_t *malformed);
    /* How many streams next() serves (after open): one per CPU, and
     * tracefs's lifetime instance adds its own per CPU (ftrace_tasks.h). */
    int (*streams)(void *t);
    /* Release everything; the kernel side is gone afterwards (no instance,
     * no perf events). Safe on a half-opened transport. */
    void (*close)(void *t);
    /* Before enable(0), or NULL: switch every tracepoint off but the
     * completions, so that the requests still open can complete before
     * the end (perf, whose kernel may drop a completion without counting
     * it: linux_source.c's tail; tracefs switches its instance as a whole
     * and drops nothing uncounted). */
    void (*stop_starts)(void *t);
};

extern const struct dm_blk_transport_ops dm_ftrace_transport;
extern const struct dm_blk_transport_ops dm_perf_transport;

/*
 * Remove tracefs instances named diskmon-PID whose process is gone (a
 * diskmon killed with SIGKILL), with a note for each. Returns how many were
 * removed.
 */
int dm_ftrace_remove_stale(const char *tracefs, struct dm_notes *notes);

#endif /* DM_TRANSPORT_H */
