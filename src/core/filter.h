/*
 * filter.h - which events the user asked to see (-d, --op, --flags, -p, -c,
 * --cgroup, -m).
 *
 * Applied on the source thread before the ring, so unwanted events cost no
 * ring space. The filter itself does not change after dm_filter_init; the
 * only state written, on the source thread, is the optional disk census
 * (replay's "-d X matched nothing" report), through a pointer, and the
 * count of requests it could not decide on (struct dm_filter_unknown).
 */
#ifndef DM_FILTER_H
#define DM_FILTER_H

#include "diskmon.h"
#include "cli/options.h"
#include "platform/atomics.h"

/*
 * The disks events came from, whatever the filter said, and which -d entries
 * matched one of them: after a replay, "-d sda matched nothing; the trace
 * holds disks 0, 1". Written by the source thread inside dm_filter_match
 * (only while a disk filter is set, and only on the first event of each
 * disk), read by the main thread after the source thread was joined.
 */
#define DM_CENSUS_MAX 32
struct dm_disk_census {
    char names[DM_CENSUS_MAX][DM_DISK_NAME_MAX]; /* Disk column text */
    int n;
    int more;                       /* disks beyond DM_CENSUS_MAX */
    int entry_matched[DM_MAX_DISK_FILTERS];
    uint32_t last_disk;             /* the disk of the previous event, */
    char last_name[DM_DISK_NAME_MAX]; /* to skip the search on repeats */
    int has_last;
};

/*
 * Requests not shown because a filter asked about a field they do not
 * know (an exited process's cgroup, the pid of a request issued from an
 * interrupt): counted per field, a request once under each field it lacks
 * (enum dm_field), and once in total. Nothing else decides them: a request
 * another filter turns away is not counted. Written by the source thread
 * inside dm_filter_match (one writer, release stores); any thread reads
 * them with dm_filter_unknown_read.
 */
struct dm_filter_unknown {
    uint64_t field[DM_FIELD_COUNT];
    uint64_t requests;
};

/* The same counts as the filter keeps them: shared between threads, so each
 * is a dm_atomic_u64 (platform/atomics.h), whole on every target. */
struct dm_filter_unknown_counts {
    dm_atomic_u64 field[DM_FIELD_COUNT];
    dm_atomic_u64 requests;
};

struct dm_filter {
    const char *disks[DM_MAX_DISK_FILTERS];
    int n_disks;
    unsigned op_mask;
    unsigned req_flags_mask;        /* --flags: any of these DM_RQ_*; 0: all */
    uint32_t pids[DM_MAX_PID_FILTERS];
    int n_pids;
    char comms[DM_MAX_COMM_FILTERS][DM_PROCESS_MAX];
    int n_comms;
    const char *cgroups[DM_MAX_CGROUP_FILTERS]; /* --cgroup prefixes (options.h) */
    int n_cgroups;
    uint64_t min_latency_ns;
    struct dm_disk_census *census;  /* NULL: not kept */
    /* Written by dm_filter_match although the sink holds the filter
     * const: the one mutable part (a filter is never a const object). */
    struct dm_filter_unknown_counts unknown;
    /* No filter given (every request, no -d/--flags/-p/-c/-m): dm_filter_match
     * answers yes at once, so the live callback pays one test. */
    int pass_all;
};

void dm_filter_init(struct dm_filter *f, const struct dm_options *opt);

/* From now on, keep *census (cleared here) up to date; NULL stops. */
void dm_filter_keep_census(struct dm_filter *f, struct dm_disk_census *census);

/* A copy of f's unknown counts (any thread; each count is read whole). */
void dm_filter_unknown_read(const struct dm_filter *f, struct dm_filter_unknown *out);

/* Nonzero when ev passes every filter: within one filter any of the values
 * given matches (a union); across filters all must match. A --cgroup PATH
 * matches by whole components: /a matches /a and /a/b, not /ab. An event
 * that lacks a field a filter asks about (no pid, no process name, no
 * cgroup: "") is not shown and is counted (struct dm_filter_unknown).
 * Also updates the
 * census, when there is one and a disk filter is set. Inline so that the
 * live callback's usual case, no filter at all, costs one test; the rest is
 * dm_filter_match_all. */
int dm_filter_match_all(const struct dm_filter *f, const struct dm_event *ev);

static inline int dm_filter_match(const struct dm_filter *f, const struct dm_event *ev)
{
    /* pass_all implies no disk filter, so no census to keep either. */
    return f->pass_all || dm_filter_match_all(f, ev);
}

/* Nonzero when the disk filter (if any) accepts a disk, given its number and
 * its name (either may be unknown: UINT32_MAX / NULL). A filter entry matches
 * a decimal disk number, a device name, or "MAJ:MIN" against the Linux
 * dev_t (kernel encoding, major = dev >> 20). */
int dm_filter_disk(const struct dm_filter *f, uint32_t disk, const char *name);

/* The same for a request on that disk in partition (or volume) partition
 * ("" = the whole disk): an entry also matches the partition's name
 * ("sda2"; a drive letter "C:" in either case), so `-d sda2` keeps the
 * requests inside sda2 and not the disk's others. */
int dm_filter_place(const struct dm_filter *f, uint32_t disk, const char *name,
                    const char *partition);

#endif /* DM_FILTER_H */
