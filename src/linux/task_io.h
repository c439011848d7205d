/*
 * task_io.h - the kernel's per-task I/O accounting as diskmon's
 * struct dm_task_io (diskmon.h): each process's write_bytes in /proc/PID/io,
 * the bytes it caused to be sent to storage, counted when it dirtied page
 * cache pages (CONFIG_TASK_IO_ACCOUNTING; docs/linux-live.md, "Writes
 * through the page cache"). The Linux live source hands it to the views.
 */
#ifndef DM_TASK_IO_H
#define DM_TASK_IO_H

#include "diskmon.h"

extern const struct dm_task_io dm_linux_task_io;

#endif /* DM_TASK_IO_H */
