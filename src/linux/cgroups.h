/*
 * cgroups.h - the cgroup v2 path of the process that issued a request,
 * from /proc/PID/cgroup, cached per process.
 *
 * /proc/PID/cgroup has one line per hierarchy, "ID:CONTROLLERS:PATH"; the
 * unified (v2) hierarchy is the line whose ID is 0 and whose controller
 * list is empty, "0::/system.slice/foo.service", on unified and hybrid
 * machines alike (Documentation/admin-guide/cgroup-v2.rst, "Processes";
 * kernel/cgroup/cgroup.c, proc_cgroup_show). The path is relative to the
 * cgroup2 mount as diskmon's own cgroup namespace sees it. A machine with
 * v1 hierarchies only has no such line: the path is then "".
 *
 * The cache is keyed by (process id, name of the thread seen): a request
 * costs one hash probe, and /proc is read only on a miss. Why the name:
 * it comes in every start sample for free, and a reused pid is almost
 * always a new program, whose exec changed the name; reading the start
 * time (/proc/PID/stat field 22) would tell reuse apart for sure, but only
 * with a read per request, which is the cost the cache is there to avoid.
 * So a pid reused by a program of the same name within one capture keeps
 * the old path. A process that moves to another cgroup keeps its first
 * path while its entry stays. This reading is the fallback: the perf
 * transport gives each sample its cgroup id (cgroup_ids.h), and the tracefs
 * transport follows forks and moves (task_cgroups.h); both need it only
 * for what they cannot tell (docs/linux-live.md, "Cgroups").
 *
 * Paths are interned: a request carries a 16-bit index into one table of
 * the distinct paths seen (0: unknown, ""), so the pairing table's entry
 * stays one cache line and a path is copied once per cgroup, not per
 * request. Single-threaded: only the reader thread uses it.
 */
#ifndef DM_CGROUPS_H
#define DM_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

/* Entries: a direct-mapped table, a pid's hash picks its one place. 4096
 * processes doing I/O at once before two share a place often; an entry is
 * about 280 bytes, so the table is about 1.1 MiB. */
#define DM_CGROUP_SLOTS 4096u
#define DM_CGROUP_COMM 16   /* TASK_COMM_LEN: the tracepoints' comm[16] */

/* Distinct paths one run can name; a path seen when the table is full is
 * unknown (index 0) and counted. 4096 paths of DM_CGROUP_MAX bytes are
 * 1 MiB of address space, touched only as paths come. */
#define DM_CGROUP_NAMES 4096u

struct dm_cgroup_entry {
    uint32_t pid;
    uint16_t name;               /* interned path; 0: unknown */
    uint16_t used;
    char comm[DM_CGROUP_COMM];   /* NUL-padded, as the tracepoint's */
};

struct dm_cgroups {
    struct dm_cgroup_entry *slots;  /* DM_CGROUP_SLOTS of them */
    const char *proc;               /* "/proc"; tests point it elsewhere */
    uint64_t reads;                 /* /proc/PID/cgroup reads (the misses) */
    char (*names)[DM_CGROUP_MAX];   /* names[1..n_names): the paths */
    uint16_t *by_hash;              /* 2 * DM_CGROUP_NAMES slots: path -> index */
    uint32_t n_names;
    uint64_t names_full;            /* paths not interned: the table was full */
};

/* Returns 0 or DM_ENOMEM. */
int dm_cgroups_init(struct dm_cgroups *c);
void dm_cgroups_free(struct dm_cgroups *c);

/*
 * The cgroup v2 path of process pid, whose thread named comm
 * (DM_CGROUP_COMM bytes, NUL-padded) issued a request: from the cache, or
 * read from /proc/PID/cgroup on a miss. Pid 0 (no task: the request came
 * from an interrupt) is "/", where kernel threads also live. "" when the
 * process is gone or the machine has no v2 hierarchy; the answer is cached
 * either way. The string stays valid until the next call.
 */
const char *dm_cgroup_of(struct dm_cgroups *c, uint32_t pid, const char *comm);

/* The same as an interned index (0: unknown). */
uint16_t dm_cgroup_index_of(struct dm_cgroups *c, uint32_t pid, const char *comm);

/* The index of path (len bytes, need not be NUL-terminated; cut at
 * DM_CGROUP_MAX - 1), added if new. 0 for "" and when the table is full
 * (counted in names_full). */
uint16_t dm_cgroup_intern(struct dm_cgroups *c, const char *path, size_t len);

/* The path of an index; "" for 0 or an index never handed out. */
const char *dm_cgroup_name(const struct dm_cgroups *c, uint16_t index);

/*
 * The v2 path from the text of a /proc/PID/cgroup file into out (cap
 * bytes, NUL-terminated; a longer path keeps its start). Returns 1 when
 * the text has a "0::" line, else 0 with out "".
 */
int dm_cgroup_parse(const char *text, size_t len, char *out, size_t cap);

#endif /* DM_CGROUPS_H */
