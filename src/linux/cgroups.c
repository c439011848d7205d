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
    c->names = calloc(DM_CGROUP_NAMES, sizeof *c->names);
    c->by_hash = calloc(2 * DM_CGROUP_NAMES, sizeof *c->by_hash);
    c->n_names = 1; /* index 0 is "unknown" */
    if (c->slots == NULL || c->names == NULL || c->by_hash == NULL) {
        dm_cgroups_free(c);
        return DM_ENOMEM;
    }
    return 0;
}

void dm_cgroups_free(struct dm_cgroups *c)
{
    free(c->slots);
    free(c->names);
    free(c->by_hash);
    c->slots = NULL;
    c->names = NULL;
    c->by_hash = NULL;
}

/* FNV-1a over the path's bytes. */
static uint32_t path_hash(const char *p, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)p[i]) * 16777619u;
    return h;
}

uint16_t dm_cgroup_intern(struct dm_cgroups *c, const char *path, size_t len)
{
    const uint32_t mask = 2 * DM_CGROUP_NAMES - 1;
    uint32_t i;

    _Static_assert(DM_CGROUP_NAMES <= UINT16_MAX, "an index fits in 16 bits");
    if (len >= DM_CGROUP_MAX)
        len = DM_CGROUP_MAX - 1;
    if (len == 0)
        return 0;
    /* Linear probing in a table twice the most names: never full. */
    for (i = path_hash(path, len) & mask; c->by_hash[i] != 0; i = (i + 1) & mask) {
        const char *name = c->names[c->by_hash[i]];

        if (strncmp(name, path, len) == 0 && name[len] == '\0')
            return c->by_hash[i];
    }
    if (c->n_names == DM_CGROUP_NAMES) {
        c->names_full++;
        return 0;
    }
    memcpy(c->names[c->n_names], path, len);
    c->names[c->n_names][len] = '\0';
    c->by_hash[i] = (uint16_t)c->n_names;
    return (uint16_t)c->n_names++;
}

const char *dm_cgroup_name(const struct dm_cgroups *c, uint16_t index)
{
    return index != 0 && index < c->n_names ? c->names[index] : "";
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

uint16_t dm_cgroup_index_of(struct dm_cgroups *c, uint32_t pid, const char *comm)
{
    struct dm_cgroup_entry *e;
    /* A /proc/PID/cgroup of a hybrid machine is a dozen short lines. */
    char path[64], buf[4096], v2[DM_CGROUP_MAX];
    long n;

    if (pid == 0)
        return dm_cgroup_intern(c, "/", 1);
    e = slot_of(c, pid);
    if (e->used && e->pid == pid && memcmp(e->comm, comm, DM_CGROUP_COMM) == 0)
        return e->name;
    e->used = 1;
    e->pid = pid;
    memcpy(e->comm, comm, DM_CGROUP_COMM);
    e->name = 0;
    c->reads++;
    snprintf(path, sizeof path, "%s/%u/cgroup", c->proc, (unsigned)pid);
    n = dm_read_text(path, buf, sizeof buf);
    if (n > 0 && dm_cgroup_parse(buf, (size_t)n, v2, sizeof v2))
        e->name = dm_cgroup_intern(c, v2, strlen(v2));
    return e->name;
}

const char *dm_cgroup_of(struct dm_cgroups *c, uint32_t pid, const char *comm)
{
    return dm_cgroup_name(c, dm_cgroup_index_of(c, pid, comm));
}
