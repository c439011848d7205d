/*
 * metrics_partitions.c - the --metrics figures per partition or volume
 * (metrics_state.h): requests and bytes per request kind, for the requests
 * that lie inside one partition. The whole disk's requests in none of them
 * are the disk's figures less the sum of its partitions'.
 *
 * Bounded like the disks: the first DM_METRICS_MAX_PARTITIONS names seen
 * get series; further ones are summed into "(other)".
 */
#include <string.h>

#include "views/metrics_state.h"

/* FNV-1a (Fowler, Noll, Vo), to compare one number before a name. */
static uint32_t part_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static struct dm_metrics_counts *counts_of(struct dm_metrics_parts *p, const char *name)
{
    uint32_t h = part_hash(name);
    int i;

    if (p->n > 0 && p->hash[p->last] == h && strcmp(p->name[p->last], name) == 0)
        return &p->counts[p->last];
    for (i = 0; i < p->n; i++) {
        if (p->hash[i] == h && strcmp(p->name[i], name) == 0) {
            p->last = i;
            return &p->counts[i];
        }
    }
    if (p->n == DM_METRICS_MAX_PARTITIONS) {
        p->other_used = 1;
        return &p->other;
    }
    i = p->n++;
    p->hash[i] = h;
    /* the source keeps names below DM_PARTITION_MAX (diskmon.h) */
    strncpy(p->name[i], name, sizeof p->name[i] - 1);
    p->last = i;
    return &p->counts[i];
}

void dm_metrics_partition_add(struct dm_metrics_parts *p, const struct dm_event *ev)
{
    struct dm_metrics_counts *c;

    if (ev->partition[0] == '\0' || ev->request >= DM_REQ_COUNT)
        return;
    c = counts_of(p, ev->partition);
    c->requests[ev->request]++;
    c->bytes[ev->request] += ev->transfer_size;
}
