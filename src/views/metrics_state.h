/*
 * metrics_state.h - what metrics.c counts and metrics_text.c writes out:
 * the one private layout of struct dm_metrics, shared by those two files
 * only (everyone else sees metrics.h).
 */
#ifndef DM_METRICS_STATE_H
#define DM_METRICS_STATE_H

#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "views/busy.h"
#include "views/disks.h"
#include "views/file_out.h"

/* Disks with series of their own; more are summed into disk="(other)". A
 * machine with more than 64 disks is rare, and each costs about 100
 * series. */
#define DM_METRICS_MAX_DISKS 64

/*
 * The histogram's upper bounds, 25 us to 10 s in steps of at most 2.5x
 * (1, 2.5, 5 per decade). histogram_quantile() interpolates linearly inside
 * the bucket the quantile falls in, so its answer is in the same bucket as
 * the exact quantile: within one step, never more than 2.5x off. The range
 * covers an NVMe read (tens of us), SSDs (hundreds of us), spinning disks
 * (milliseconds) and a stalled device (seconds); docs/metrics.md "Histogram
 * buckets" gives the same list.
 */
static const struct {
    uint64_t ns;
    const char *le;
} dm_metrics_buckets[] = {
    {25000u, "0.000025"},    {50000u, "0.00005"},     {100000u, "0.0001"},
    {250000u, "0.00025"},    {500000u, "0.0005"},     {1000000u, "0.001"},
    {2500000u, "0.0025"},    {5000000u, "0.005"},     {10000000u, "0.01"},
    {25000000u, "0.025"},    {50000000u, "0.05"},     {100000000u, "0.1"},
    {250000000u, "0.25"},    {500000000u, "0.5"},     {1000000000u, "1"},
    {2500000000u, "2.5"},    {5000000000u, "5"},      {10000000000u, "10"},
};
#define DM_METRICS_BUCKETS (sizeof dm_metrics_buckets / sizeof dm_metrics_buckets[0])

/*
 * Busy time (a request in flight): the union of the requests' spans, kept
 * in a window of this many disjoint spans per disk (views/busy.h), in the
 * disk's own storage: memory stays one window per disk for the run.
 */
#define DM_METRICS_SPAN_WINDOW 256

/* A disk's figures; which disk: disk_ids[] at the same index. */
struct dm_metrics_disk {
    uint64_t requests[DM_REQ_COUNT];
    uint64_t bytes[DM_REQ_COUNT];
    uint64_t duration_ns[DM_REQ_COUNT];
    /* requests without a duration (DM_EV_NO_DURATION): in requests and
     * bytes, in none of the figures made of durations */
    uint64_t no_duration[DM_REQ_COUNT];
    uint64_t bucket[DM_REQ_COUNT][DM_METRICS_BUCKETS + 1]; /* not cumulative; last: +Inf */
    uint64_t in_flight_ns;
    uint64_t by_flag[DM_RQ_COUNT]; /* requests with flag bit i set (dm_req_flag_names) */
    struct dm_busy busy;     /* its spans: span_store */
    struct dm_busy_span span_store[DM_METRICS_SPAN_WINDOW];
};

struct dm_metrics_counts {
    uint64_t requests[DM_REQ_COUNT];
    uint64_t bytes[DM_REQ_COUNT];
};

/* Partitions and volumes with series of their own; more are summed into
 * partition="(other)". Each costs eight series. */
#define DM_METRICS_MAX_PARTITIONS 128

/* The requests inside a partition (dm_event.partition not ""), per
 * partition in the order first seen (metrics_partitions.c). A partition's
 * name is unique on its machine ("sda2", "C:"), so it alone is the key. */
struct dm_metrics_parts {
    int n, last;
    int other_used;
    uint32_t hash[DM_METRICS_MAX_PARTITIONS];
    char name[DM_METRICS_MAX_PARTITIONS][DM_PARTITION_MAX];
    struct dm_metrics_counts counts[DM_METRICS_MAX_PARTITIONS];
    struct dm_metrics_counts other;
};

/* Count ev in its partition's figures; a request in none is not counted. */
void dm_metrics_partition_add(struct dm_metrics_parts *p, const struct dm_event *ev);

/* The disk row of a disk past DM_METRICS_MAX_DISKS: disk="(other)". */
#define DM_METRICS_OTHER_DISK DM_METRICS_MAX_DISKS

/* A name in a table: a (process image name, disk) pair or a cgroup path;
 * promoted (slot >= 0) or a candidate (slot < 0). */
struct dm_metrics_name {
    char name[DM_CGROUP_MAX];    /* a process image name or a cgroup path */
    uint32_t hash;
    int used;
    int slot;
    int disk;                /* processes: its disk row (disks[], or
                                DM_METRICS_OTHER_DISK); cgroups: 0 */
    const char *disk_label;  /* processes: that row's label, disk_ids[disk].text
                                or "(other)"; cgroups: NULL */
    struct dm_metrics_counts counts;
};

/* Names with series of their own, the top K by bytes (metrics.c): an
 * open-addressing table (linear probing). */
struct dm_metrics_names {
    struct dm_metrics_name *table;
    uint32_t table_mask;
    uint32_t table_used;
    uint32_t table_limit;    /* at most this many used: probes stay short */
    unsigned top_k;
    struct dm_metrics_name **slots;     /* the promoted, in promotion order */
    unsigned n_slots;
    struct dm_metrics_name **scratch;   /* candidates at a write */
    struct dm_metrics_name *keep;       /* the promoted, while the table is rebuilt */
    /* per disk row, the names past the top K: "(other)"; cgroups use [0] */
    struct dm_metrics_counts other[DM_METRICS_MAX_DISKS + 1];
};

struct dm_metrics {
    struct dm_file_out file;  /* FILE, replaced whole at each write */
    unsigned top_k;
    int n_disks;
    int other_disk_used;
    int no_latency;           /* the source has no response times (dm_metrics_no_latency) */
    uint64_t no_duration;     /* requests without a duration so far, all disks */
    int cgroups_seen;         /* a request named its cgroup: the cgroup families */
    struct dm_disk_index disk_index;  /* which disk an event is on (disks.h) */
    struct dm_disk_id disk_ids[DM_METRICS_MAX_DISKS];
    struct dm_metrics_disk disks[DM_METRICS_MAX_DISKS];
    struct dm_metrics_disk other_disk;
    struct dm_metrics_names procs;    /* (process image name, disk) pairs */
    struct dm_metrics_names cgroups;  /* Linux: the issuers' cgroup v2 paths */
    struct dm_metrics_parts parts;    /* partitions and volumes */
    /* the text, reused from write to write */
    char *text;
    size_t text_cap;
};

/* Promote the candidates with the most bytes into the free places of the
 * K, give the rest to their "(other)" (a process pair's: its disk's), for
 * both tables (metrics.c; called at each write). */
void dm_metrics_promote(struct dm_metrics *m);

#endif /* DM_METRICS_STATE_H */
