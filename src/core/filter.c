/*
 * filter.c - the user's filters (-d, --op, --flags, -p, -c, --cgroup, -m) as one
 * predicate.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/filter.h"
#include "platform/atomics.h"

/* Every request --op can name: enum dm_request values below DM_REQ_COUNT. */
#define ALL_REQUESTS (DM_OP_BIT(DM_REQ_COUNT) - 1u)

void dm_filter_init(struct dm_filter *f, const struct dm_options *opt)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < opt->n_disks && i < DM_MAX_DISK_FILTERS; i++)
        f->disks[i] = opt->disks[i];
    f->n_disks = opt->n_disks < DM_MAX_DISK_FILTERS ? opt->n_disks : DM_MAX_DISK_FILTERS;
    f->op_mask = opt->op_mask;
    f->req_flags_mask = opt->req_flags_mask;
    for (int i = 0; i < opt->n_pids && i < DM_MAX_PID_FILTERS; i++)
        f->pids[f->n_pids++] = opt->pids[i];
    for (int i = 0; i < opt->n_comms && i < DM_MAX_COMM_FILTERS; i++)
        snprintf(f->comms[f->n_comms++], DM_PROCESS_MAX, "%s", opt->comms[i]);
    for (int i = 0; i < opt->n_cgroups && i < DM_MAX_CGROUP_FILTERS; i++)
        f->cgroups[f->n_cgroups++] = opt->cgroups[i];
    f->min_latency_ns = opt->min_latency_ns;
    f->pass_all = f->n_disks == 0 && f->n_pids == 0 && f->n_comms == 0 &&
                  f->n_cgroups == 0 &&
                  f->req_flags_mask == 0 &&
                  f->min_latency_ns == 0 && (f->op_mask & ALL_REQUESTS) == ALL_REQUESTS;
}

void dm_filter_keep_census(struct dm_filter *f, struct dm_disk_census *census)
{
    f->census = census;
    if (census != NULL)
        memset(census, 0, sizeof *census);
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    if (!isdigit((unsigned char)s[0]))
        return 0;
    v = strtoul(s, &end, 10);
    if (*end != '\0' || v > UINT32_MAX)
        return 0;
    *out = (uint32_t)v;
    return 1;
}

static int eq_nocase(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
        if (a[i] == '\0')
            return 1;
    }
    return 1;
}

/* "/dev/sda" means sda. */
static const char *without_dev(const char *entry)
{
    return strncmp(entry, "/dev/", 5) == 0 ? entry + 5 : entry;
}

/* One -d entry against a request's partition or volume ("sda2", "C:"; ""
 * is the whole disk and matches no entry). A drive letter in either case. */
static int partition_entry_matches(const char *entry, const char *partition)
{
    entry = without_dev(entry);
    if (partition == NULL || partition[0] == '\0')
        return 0;
    if (strlen(entry) == 2 && entry[1] == ':')
        return eq_nocase(entry, partition, 3);
    return strcmp(entry, partition) == 0;
}

/* One -d entry against one disk. "MAJ:MIN" compares with a Linux dev_t in
 * the kernel's encoding (major = dev >> 20, minor = dev & 0xFFFFF:
 * include/linux/kdev_t.h MINORBITS 20). */
static int disk_entry_matches(const char *entry, uint32_t disk, const char *name)
{
    const char *colon;
    uint32_t num;

    entry = without_dev(entry);
    colon = strchr(entry, ':');

    if (name != NULL && name[0] != '\0') {
        if (strcmp(entry, name) == 0)
            return 1;
        if (colon != NULL) {
            char major[16];
            size_t len = (size_t)(colon - entry);
            uint32_t maj, min;

            if (len == 0 || len >= sizeof major)
                return 0;
            memcpy(major, entry, len);
            major[len] = '\0';
            if (parse_u32(major, &maj) && parse_u32(colon + 1, &min))
                return disk == ((maj << 20) | min);
        }
        return 0;
    }
    return parse_u32(entry, &num) && num == disk;
}

static void disk_text(uint32_t disk, const char *name, char *buf, size_t cap)
{
    if (name != NULL && name[0] != '\0')
        snprintf(buf, cap, "%s", name);
    else
        snprintf(buf, cap, "%lu", (unsigned long)disk);
}

/* Count a disk the first time it is seen, and which -d entries match it. */
static void census_add(struct dm_disk_census *c, const struct dm_filter *f,
                       uint32_t disk, const char *name)
{
    char text[DM_DISK_NAME_MAX];

    if (name == NULL)
        name = "";
    if (c->has_last && c->last_disk == disk && strcmp(c->last_name, name) == 0)
        return;
    c->has_last = 1;
    c->last_disk = disk;
    snprintf(c->last_name, sizeof c->last_name, "%s", name);
    disk_text(disk, name, text, sizeof text);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], text) == 0)
            return;
    for (int i = 0; i < f->n_disks; i++)
        if (disk_entry_matches(f->disks[i], disk, name))
            c->entry_matched[i] = 1;
    if (c->n == DM_CENSUS_MAX) {
        c->more = 1;
        return;
    }
    memcpy(c->names[c->n++], text, sizeof text);
}

int dm_filter_disk(const struct dm_filter *f, uint32_t disk, const char *name)
{
    return dm_filter_place(f, disk, name, "");
}

int dm_filter_place(const struct dm_filter *f, uint32_t disk, const char *name,
                    const char *partition)
{
    if (f->n_disks == 0)
        return 1;
    for (int i = 0; i < f->n_disks; i++)
        if (disk_entry_matches(f->disks[i], disk, name) ||
            partition_entry_matches(f->disks[i], partition))
            return 1;
    return 0;
}

/* The census's "matched" for entries that name a partition: checked on
 * every event in one, since a disk's first event may lie in another. */
static void census_partition(struct dm_disk_census *c, const struct dm_filter *f,
                             const char *partition)
{
    if (partition[0] == '\0')
        return;
    for (int i = 0; i < f->n_disks; i++)
        if (!c->entry_matched[i] && partition_entry_matches(f->disks[i], partition))
            c->entry_matched[i] = 1;
}


/* -c NAME matches the process name case-insensitively, with or without a
 * Windows ".exe" suffix, so `-c svchost` finds svchost.exe. */
static int comm_matches(const char *want, const char *process)
{
    size_t wl = strlen(want), pl = strlen(process);

    if (wl == pl && eq_nocase(want, process, wl))
        return 1;
    return pl == wl + 4 && eq_nocase(want, process, wl) &&
           eq_nocase(process + wl, ".exe", 4);
}

static int pid_matches(const struct dm_filter *f, const struct dm_event *ev)
{
    for (int i = 0; i < f->n_pids; i++)
        if (ev->pid == f->pids[i])
            return 1;
    return 0;
}

static int any_comm_matches(const struct dm_filter *f, const struct dm_event *ev)
{
    for (int i = 0; i < f->n_comms; i++)
        if (comm_matches(f->comms[i], ev->process))
            return 1;
    return 0;
}

/* One --cgroup prefix, whole components (filter.h); cgroup is known. */
static int cgroup_matches(const char *want, const char *cgroup)
{
    size_t n = strlen(want);

    if (n == 1) /* "/": the root holds every cgroup */
        return 1;
    return strncmp(cgroup, want, n) == 0 && (cgroup[n] == '\0' || cgroup[n] == '/');
}

static int any_cgroup_matches(const struct dm_filter *f, const struct dm_event *ev)
{
    for (int i = 0; i < f->n_cgroups; i++)
        if (cgroup_matches(f->cgroups[i], ev->cgroup))
            return 1;
    return 0;
}

static int pid_known(const struct dm_event *ev)
{
    return (ev->flags & DM_EV_HAS_PID) != 0;
}

static int process_known(const struct dm_event *ev)
{
    return (ev->flags & DM_EV_HAS_PROCESS) != 0 && ev->process[0] != '\0';
}

/* A cgroup v2 path starts at the root, "/": "" is unknown. */
static int cgroup_known(const struct dm_event *ev)
{
    return ev->cgroup != NULL && ev->cgroup[0] == '/';
}

static int pid_on(const struct dm_filter *f)
{
    return f->n_pids > 0;
}

static int process_on(const struct dm_filter *f)
{
    return f->n_comms > 0;
}

static int cgroup_on(const struct dm_filter *f)
{
    return f->n_cgroups > 0;
}

/* The filters on fields an event may lack, by enum dm_field: whether the
 * filter is on, whether the event has the field, and whether it matches.
 * A new such filter is one more row; the counting below serves them all. */
static const struct field_filter {
    int (*on)(const struct dm_filter *f);
    int (*known)(const struct dm_event *ev);
    int (*matches)(const struct dm_filter *f, const struct dm_event *ev);
} field_filters[DM_FIELD_COUNT] = {
    [DM_FIELD_PID] = {pid_on, pid_known, pid_matches},
    [DM_FIELD_PROCESS] = {process_on, process_known, any_comm_matches},
    [DM_FIELD_CGROUP] = {cgroup_on, cgroup_known, any_cgroup_matches},
};

/* The field filters' verdict: 1 all that are on match, 0 one does not,
 * or -1 none says no but one cannot tell (*unknown: the fields lacked). */
static int match_fields(const struct dm_filter *f, const struct dm_event *ev,
                        unsigned *unknown)
{
    *unknown = 0;
    for (int i = 0; i < DM_FIELD_COUNT; i++) {
        const struct field_filter *ff = &field_filters[i];

        if (!ff->on(f))
            continue;
        if (!ff->known(ev))
            *unknown |= 1u << i;
        else if (!ff->matches(f, ev))
            return 0;
    }
    return *unknown != 0 ? -1 : 1;
}

/* One writer (the source thread): a plain load, a release store. */
static void count_unknown(struct dm_filter_unknown_counts *u, unsigned fields)
{
    for (int i = 0; i < DM_FIELD_COUNT; i++)
        if (fields & (1u << i))
            dm_atomic_store_release(&u->field[i], dm_atomic_load_relaxed(&u->field[i]) + 1);
    dm_atomic_store_release(&u->requests, dm_atomic_load_relaxed(&u->requests) + 1);
}

void dm_filter_unknown_read(const struct dm_filter *f, struct dm_filter_unknown *out)
{
    for (int i = 0; i < DM_FIELD_COUNT; i++)
        out->field[i] = dm_atomic_load_acquire(&f->unknown.field[i]);
    out->requests = dm_atomic_load_acquire(&f->unknown.requests);
}

int dm_filter_match_all(const struct dm_filter *f, const struct dm_event *ev)
{
    unsigned unknown;

    /* The census sees every event, before any filter says no. */
    if (f->census != NULL && f->n_disks > 0) {
        census_add(f->census, f, ev->disk, ev->disk_name);
        census_partition(f->census, f, ev->partition);
    }
    if (!(f->op_mask & DM_OP_BIT(ev->request)))
        return 0;
    if (ev->duration_ns < f->min_latency_ns)
        return 0;
    /* --flags: a request with any one of the flags named. */
    if (f->req_flags_mask != 0 && !(ev->req_flags & f->req_flags_mask))
        return 0;
    if (!dm_filter_place(f, ev->disk, ev->disk_name, ev->partition))
        return 0;
    switch (match_fields(f, ev, &unknown)) {
    case 1:
        return 1;
    case 0:
        return 0;
    default:
        /* The filter is never defined const (filter.h): the cast only
         * undoes the sink's const view of it. */
        count_unknown((struct dm_filter_unknown_counts *)&f->unknown, unknown);
        return 0;
    }
}
