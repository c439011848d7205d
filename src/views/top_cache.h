/*
 * top_cache.h - the Cache-W column of --top --by process, live: what each
 * process wrote into the page cache during an interval, as the difference
 * of its cumulative count (struct dm_task_io, diskmon.h) between two scans
 * of every process, the one at the interval's close and the one before.
 *
 * A write through the page cache reaches the disk later, issued by the
 * kernel's flusher threads: the block rows show the flusher, this column
 * the process that wrote. The two are not the same bytes at the same time,
 * and are not added up.
 *
 * A process seen for the first time after the first scan started since the
 * last one (its count starts at zero at fork), so all its count is new. A
 * count lower than the last (the pid was reused) is a new process too; a
 * count that grew is checked against the process's start time, so a new
 * process on an ended one's pid that wrote more than it had is new as
 * well. The
 * bytes a process wrote after the last scan before it ended are not seen
 * under it: the kernel adds an ended child's counts into its parent's when
 * the parent reaps it, so they show up there, with whatever the child had
 * already been counted for (docs/linux-live.md).
 *
 * Printer thread only (the fill runs where the interval closes).
 */
#ifndef DM_TOP_CACHE_H
#define DM_TOP_CACHE_H

#include "diskmon.h"
#include "views/top.h"

struct dm_top_cache;

/* Takes the first scan, which the first interval's figures start from.
 * NULL when out of memory or the scan failed. */
struct dm_top_cache *dm_top_cache_create(const struct dm_task_io *io);
void dm_top_cache_destroy(struct dm_top_cache *c);

/* dm_top's fill (dm_top_set_fill; ctx is the dm_top_cache): scan again and
 * add each process's growth to its row, or to a row of its own. A failed
 * scan adds nothing and keeps the last one, so its bytes show next time. */
void dm_top_cache_fill(void *ctx, struct dm_top *t);

#endif /* DM_TOP_CACHE_H */
