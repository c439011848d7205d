/*
 * filter.c - the user's filters (-d, --op, -p, -c, -m) as one predicate.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/filter.h"

void dm_filter_init(struct dm_filter *f, const struct dm_options *opt)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < opt->n_disks && i < DM_MAX_DISK_FILTERS; i++)
        f->disks[i] = opt->disks[i];
    f->n_disks = opt->n_disks;
    f->op_mask = opt->op_mask;
    f->has_pid = opt->has_pid;
    f->pid = opt->pid;
    if (opt->comm != NULL)
        snprintf(f->comm, sizeof f->comm, "%s", opt->comm);
    f->min_latency_ns = opt->min_latency_ns;
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

/* One -d entry against one disk. "MAJ:MIN" compares with a Linux dev_t in
 * the kernel's encoding (major = dev >> 20, minor = dev & 0xFFFFF:
 * include/linux/kdev_t.h MINORBITS 20). */
static int disk_entry_matches(const char *entry, uint32_t disk, const char *name)
{
    const char *colon;
    uint32_t num;

    /* "-d /dev/sda" means sda. */
    if (strncmp(entry, "/dev/", 5) == 0)
        entry += 5;
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

int dm_filter_disk(const struct dm_filter *f, uint32_t disk, const char *name)
{
    if (f->n_disks == 0)
        return 1;
    for (int i = 0; i < f->n_disks; i++)
        if (disk_entry_matches(f->disks[i], disk, name))
            return 1;
    return 0;
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

int dm_filter_match(const struct dm_filter *f, const struct dm_event *ev)
{
    if (!(f->op_mask & DM_OP_BIT(ev->request)))
        return 0;
    if (ev->duration_ns < f->min_latency_ns)
        return 0;
    if (f->has_pid && (!(ev->flags & DM_EV_HAS_PID) || ev->pid != f->pid))
        return 0;
    if (f->comm[0] != '\0' &&
        (!(ev->flags & DM_EV_HAS_PROCESS) || !comm_matches(f->comm, ev->process)))
        return 0;
    return dm_filter_disk(f, ev->disk, ev->disk_name);
}
