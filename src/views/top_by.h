/*
 * top_by.h - --by KEY: what one --top row sums (views/top.h). Apart from
 * top.h so that the parsed command line (cli/options.h) can hold the choice
 * without taking in the view.
 */
#ifndef DM_TOP_BY_H
#define DM_TOP_BY_H

/* DM_TOP_BY_PARTITION: a row per partition or volume, and one per disk
 * for its requests in none (dm_event.partition ""). */
enum dm_top_by {
    DM_TOP_BY_PROCESS = 0,
    DM_TOP_BY_FILE,
    DM_TOP_BY_DISK,
    DM_TOP_BY_CGROUP,
    DM_TOP_BY_PARTITION
};

#endif /* DM_TOP_BY_H */
