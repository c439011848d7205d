/*
 * stats.h - what -s and --hist print at exit: per disk and request counts,
 * bytes, rates and latency percentiles, and biolatency-style log2 latency
 * histograms. Fed by the printer thread only; printed after it finished.
 */
#ifndef DM_STATS_H
#define DM_STATS_H

#include <stdint.h>
#include "diskmon.h"
#include "output/text.h"
#include "views/view.h"

struct dm_stats;
struct dm_disk_index;

/* Disks with figures of their own; the events of further disks are
 * counted as such (the summary's last lines). */
#define DM_STATS_DISKS 256

/*
 * per_disk: keep the per-disk tables that dm_stats_summary and
 * dm_stats_hist print (-s, --hist). 0: only count the events, so a run
 * without them spends neither the time nor the memory (the exact durations
 * alone take up to 512 KiB per disk and request). NULL when out of memory.
 */
struct dm_stats *dm_stats_create(int per_disk);
void dm_stats_destroy(struct dm_stats *st);
void dm_stats_add(struct dm_stats *st, const struct dm_event *ev);
/* dm_stats_add for a caller that keeps the disk index itself (the report,
 * whose maps need the same disk: views/disks.h): i is ev's disk in x, -1
 * for a disk past its max, which must be DM_STATS_DISKS, so that the
 * figures are those of dm_stats_add. The same x for every call. */
void dm_stats_add_on(struct dm_stats *st, const struct dm_disk_index *x, int i,
                     const struct dm_event *ev);

/* Events added so far. */
uint64_t dm_stats_count(const struct dm_stats *st);

/* The latency (ns) at or below which pct percent of one disk's requests
 * completed (nearest rank). Exact up to 65536 requests per disk and request;
 * beyond, a histogram bucket bound at most 1/64 (1.6%) above the true value
 * and never above the maximum seen. disk is the Disk column text ("0", "sda").
 * Returns 0 when there is no such disk/request. */
uint64_t dm_stats_percentile(const struct dm_stats *st, const char *disk,
                             int request, double pct);

/* The -s table, appended to out (written through the one writer by the
 * caller). elapsed_ns is the capture's length, for IOPS and MB/s. */
void dm_stats_summary(const struct dm_stats *st, struct dm_text *out, uint64_t elapsed_ns,
                      const struct dm_loss *loss);

/* The --hist histograms, one per disk, latency in microseconds rounded to
 * the nearest one, as the text lines and the -s table round. */
void dm_stats_hist(const struct dm_stats *st, struct dm_text *out);

/* The input has no response times (views/view.h, no_latency): the
 * summary's latency columns show "-" and a line says so, the histogram is
 * that line alone. */
void dm_stats_no_latency(struct dm_stats *st);

#endif /* DM_STATS_H */
