/*
 * metrics.h - --metrics FILE: cumulative counters per disk, per process and
 * disk, and (Linux live) per cgroup, and latency histograms, in the
 * Prometheus text exposition format (0.0.4), for the node_exporter and
 * windows_exporter textfile collectors.
 *
 * Fed by the printer thread (dm_metrics_add per event) and written by it
 * each interval (live), or once at the end (replay, and the last write of a
 * live run). What is kept grows with the number of disks and with K
 * (--metrics-top), never with time or with the number of distinct process
 * names or cgroups seen: a week-long daemon stays the size it had after a
 * minute.
 *
 * The file is written whole to a new temporary file in the same folder
 * and renamed over FILE (dm_replace_commit, platform.h), so a collector never
 * reads half a file; FILE must be a regular file or not exist yet (never a
 * symbolic link, a device, a pipe or a directory).
 */
#ifndef DM_METRICS_H
#define DM_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"

struct dm_metrics;

/* What the file says about the run besides the events. */
struct dm_metrics_run {
    const char *source;      /* build_info's source: etw, tracefs, perf, replay */
    uint64_t ring_dropped;   /* events_lost_total{reason="ring_full"} */
    uint64_t source_lost;    /* events_lost_total{reason="source"} */
};

/* path: the file to replace; top_k: (process name, disk) pairs with series
 * of their own, the rest summed into "(other)" per disk;
 * live: written each interval (a failure's message says it is tried again);
 * errf: where write failures are said. NULL when out of memory. */
struct dm_metrics *dm_metrics_create(const char *path, unsigned top_k, int live, FILE *errf);
void dm_metrics_destroy(struct dm_metrics *m);

/* The source has no response times (views/view.h no_latency): the
 * families made of durations (the duration histogram, busy and in-flight
 * seconds) are not written, rather than written as zeros. */
void dm_metrics_no_latency(struct dm_metrics *m);

/* Count one completed request. A request without a duration
 * (DM_EV_NO_DURATION) counts in requests and bytes and in
 * diskmon_requests_without_duration_total, never as a 0 s duration. */
void dm_metrics_add(struct dm_metrics *m, const struct dm_event *ev);

/*
 * Write FILE now (temporary file, then rename over FILE). Returns 0, or a
 * negative dm_err; a failure is said on errf once per reason (what failed,
 * or what FILE has become), and the counters are kept for the next try
 * either way.
 */
int dm_metrics_write(struct dm_metrics *m, const struct dm_metrics_run *run);

/* How many writes have succeeded: a run that ends with none exits 1. */
uint64_t dm_metrics_written(const struct dm_metrics *m);

/*
 * The exposition into buf (at most cap bytes, NUL-terminated), without
 * touching FILE: for tests. Returns the length it needs (as snprintf).
 * Process names are promoted into series of their own as in a write.
 */
size_t dm_metrics_render(struct dm_metrics *m, const struct dm_metrics_run *run,
                         uint64_t wall_ns, char *buf, size_t cap);

#endif /* DM_METRICS_H */
