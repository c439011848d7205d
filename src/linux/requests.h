/*
 * requests.h - block tracepoint samples into completed requests.
 *
 * The transport-independent middle of the Linux source: each decoded
 * sample (in roughly time order, from either transport) goes in; a struct
 * dm_event comes out when a request completed. Which tracepoints mean what
 * (docs/linux.md §2; checked on 6.18):
 *
 *   modern (block_io_start exists, Linux 6.5+):
 *     block_io_start     start time, and the submitter's pid and comm
 *     block_rq_complete  completion time and the final size
 *     block_rq_merge, block_bio_frontmerge keep the pairing table right when
 *                        requests merge
 *     block_rq_issue     the start of the flush machinery's own flush
 *                        requests, which never pass block_io_start
 *                        (docs/linux.md §7); with --queue also the dispatch
 *                        time of the others
 *   legacy (older kernels, or DM_LINUX_LEGACY=1 for the tests):
 *     block_rq_issue     start time, pid and comm of the dispatching task
 *     block_rq_complete  completion
 *     block_rq_insert    only with --queue: when the request was queued
 *
 * block_io_done is not used as the completion even where it exists: it
 * fires after blk_update_request() has set the request's length to zero,
 * so its nr_sector and bytes are always 0 (seen on 6.18).
 *
 * It also keeps, per device, how many requests started and how many of
 * them completed, so the end-of-run report can say plainly when one disk's
 * completions did not arrive. No system calls except /proc/PID/comm on
 * kernels whose start tracepoint has no comm, and /proc/PID/cgroup the
 * first time a process is seen where no better source of its cgroup is
 * (cg_source below). Single-threaded.
 */
#ifndef DM_REQUESTS_H
#define DM_REQUESTS_H

#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "linux/block_decode.h"
#include "linux/block_devices.h"
#include "linux/cgroups.h"
#include "linux/pairing.h"
#include "linux/task_cgroups.h"

#define DM_REQ_MAX_DEVS 32

/* Where a request's cgroup comes from (docs/linux-live.md, "Cgroups"):
 *   PROC    /proc/PID/cgroup when the start is fed (the fallback: a process
 *           gone by then has none)
 *   SAMPLE  the start sample's own cgroup (perf: PERF_SAMPLE_CGROUP)
 *   TRACK   the fork and move events fed in time order (tracefs:
 *           task_cgroups.h), /proc only for processes older than the
 *           capture */
enum dm_cgroup_source {
    DM_CGROUPS_PROC = 0,
    DM_CGROUPS_SAMPLE,
    DM_CGROUPS_TRACK,
    DM_CGROUPS_NONE     /* nothing reads them (dm_options_read_cgroup) */
};

/* Per device: what started and what completed. */
struct dm_req_dev {
    uint32_t dev;
    uint64_t starts;       /* requests that started (stored in the table) */
    uint64_t merged;       /* of those, merged into another request */
    uint64_t matched;      /* of those, completed */
    uint64_t open_young;   /* at finish: still open, started < 1 s before the end */
};

struct dm_requests {
    int legacy;            /* starts are block_rq_issue (see above) */
    int queue;             /* --queue: record dispatch times */
    uint64_t t0;           /* capture start: event times are relative to it */
    struct dm_pairing pairs;
    struct dm_req_dev devs[DM_REQ_MAX_DEVS];
    int n_devs;
    char process[DM_PROCESS_MAX]; /* the last completed request's comm */
    struct dm_cgroups cgroups;    /* the issuers' cgroup v2 paths */
    enum dm_cgroup_source cg_source;
    struct dm_task_cgroups tasks; /* TRACK: each process's cgroup */
    uint64_t starts_off_ns;       /* dm_requests_starts_off's time, 0: not yet */
};

/* Returns 0 or DM_ENOMEM. */
int dm_requests_init(struct dm_requests *r, int legacy, int queue, uint64_t t0);

/* The capture starts now, at t0 (after the transport opened, which
 * already interns cgroup paths into r->cgroups). */
void dm_requests_set_t0(struct dm_requests *r, uint64_t t0);
void dm_requests_free(struct dm_requests *r);

/*
 * One sample. Returns 1 when it completed a request: *ev then holds it
 * (every field but disk_name, which the caller points at its name; "" here),
 * else 0. ev->process and ev->cgroup point into r: valid until the next
 * call.
 */
int dm_requests_feed(struct dm_requests *r, const struct dm_blk_sample *smp,
                     struct dm_event *ev);

/* Expire old table entries (pairing.h); call now and then with the time. */
void dm_requests_expire(struct dm_requests *r, uint64_t now_ns);

/*
 * The start events are off from now_ns (transport.h's stop_starts): a
 * completion after it that finds no start is of a request that started
 * after the capture, and is not kept (nor counted as lost).
 */
void dm_requests_starts_off(struct dm_requests *r, uint64_t now_ns);

/* Whether a request is still open that dm_requests_finish at now_ns
 * would take for one in flight (its start less than the grace before). */
int dm_requests_open_young(const struct dm_requests *r, uint64_t now_ns);

/* Every sample was fed: close the table at end_ns (the last time seen). */
void dm_requests_finish(struct dm_requests *r, uint64_t end_ns);

/* What a transport knows about samples it could not deliver. */
struct dm_blk_losses {
    const char *backend;      /* "tracefs" or "perf" */
    const char *other;        /* the backend to suggest, NULL: none */
    uint64_t kernel_dropped;  /* tracefs: "dropped events"; perf: LOST records */
    uint64_t kernel_overrun;  /* tracefs: overwritten or missed (page flags) */
    uint64_t undelivered;     /* perf: counted by the kernel, never delivered */
};

/*
 * After dm_requests_finish: the number of requests lost (the unmatched
 * requests, plus half of the events the kernel dropped beyond those, since
 * a request that lost both halves costs two events; plus those dropped
 * with the table full). In why (the source's loss_detail, which the
 * pipeline folds into its one loss line) where they came from, only the
 * counts that are not zero: "block tracepoints via tracefs: 3 events
 * dropped by the kernel with its buffer full"; in notes one plain line per
 * device whose completions largely never arrived, naming it and saying
 * what to do. Writes nothing and returns 0 when nothing was lost.
 */
uint64_t dm_requests_report(const struct dm_requests *r, const struct dm_blk_losses *l,
                            struct dm_blk_names *names, char *why, size_t whylen,
                            struct dm_notes *notes);

#endif /* DM_REQUESTS_H */
