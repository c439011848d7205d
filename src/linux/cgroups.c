/*
 * cgroups.c - the issuer's cgroup v2 path (rules in cgroups.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linux/cgroups.h"
#include "linux/tracefs.h"

int dm_cgroups_init(struct dm_cgroups *c)
{
    memset(c, 0, sizeof *c);
    c->proc = "/proc";
    c->slots = calloc(DM_CGROUP_SLOTS, sizeof *c->slots);
    return c->slots == NULL ? DM_ENOMEM : 0;
}

void dm_cgroups_free(struct dm_cgroups *c)
{
    free(c->slots);
    c->slots = NULL;
}

int dm_cgroup_parse(const char *text, size_t len, char *out, size_t cap)
{
    const char *p = text, *end = text + len;

    if (cap == 0)
        return 0;
    out[0] = '\0';
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl != NULL ? nl : end;

        /* The v2 line: hierarchy 0, no controllers. A v1 line never has
         * ID 0 (v1 hierarchy IDs start at 1). */
        if (eol - p >= 3 && memcmp(p, "0::", 3) == 0) {
            size_t n = (size_t)(eol - p - 3);

            if (n >= cap)
                n = cap - 1;
            memcpy(out, p + 3, n);
            out[n] = '\0';
            return 1;
        }
        p = eol + 1;
    }
    return 0;
}

/* Knuth's multiplicative hash: pids are dense, the top bits mix them. */
static struct dm_cgroup_entry *slot_of(struct dm_cgroups *c, uint32_t pid)
{
    _Static_assert((DM_CGROUP_SLOTS & (DM_CGROUP_SLOTS - 1)) == 0,
                   "DM_CGROUP_SLOTS is a power of two");
    return &c->slots[((pid * 2654435761u) >> 20) & (DM_CGROUP_SLOTS - 1)];
}

const char *dm_cgroup_of(struct dm_cgroups *c, uint32_t pid, const char *comm)
{
    struct dm_cgroup_entry *e;
    /* A /proc/PID/cgroup of a hybrid machine is a dozen short lines. */
    char path[64], buf[4096];
    long n;

    if (pid == 0)
        return "/";
    e = slot_of(c, pid);
    if (e->used && e->pid == pid && memcmp(e->comm, comm, DM_CGROUP_COMM) == 0)
        return e->path;
    e->used = 1;
    e->pid = pid;
    memcpy(e->comm, comm, DM_CGROUP_COMM);
    e->path[0] = '\0';
    c->reads++;
    snprintf(path, sizeof path, "%s/%u/cgroup", c->proc, (unsigned)pid);
    n = dm_read_text(path, buf, sizeof buf);
    if (n > 0)
        (void)dm_cgroup_parse(buf, (size_t)n, e->path, sizeof e->path);
    return e->path;
}
