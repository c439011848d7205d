/*
 * disks.c - the disk of an event (disks.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "views/disks.h"

static int is_disk(const struct dm_disk_id *d, const struct dm_event *ev)
{
    if (ev->disk_name[0] == '\0')
        return d->numeric && d->number == ev->disk;
    /* d->text holds the name cut to its size: compare what it holds. */
    return !d->numeric && strncmp(d->text, ev->disk_name, sizeof d->text - 1) == 0;
}

int dm_disk_index_of(struct dm_disk_index *x, const struct dm_event *ev)
{
    int16_t *slot = &x->by_number[ev->disk & (DM_DISK_SLOTS - 1)];
    struct dm_disk_id *d;

    if (*slot != 0 && x->ids[*slot - 1].number == ev->disk && is_disk(&x->ids[*slot - 1], ev))
        return *slot - 1;
    for (int i = 0; i < x->n; i++) {
        if (is_disk(&x->ids[i], ev)) {
            *slot = (int16_t)(i + 1);
            return i;
        }
    }
    if (x->n == x->max)
        return -1;
    d = &x->ids[x->n];
    /* the source keeps disk names below DM_DISK_NAME_MAX (diskmon.h) */
    if (ev->disk_name[0] != '\0')
        snprintf(d->text, sizeof d->text, "%s", ev->disk_name);
    else
        snprintf(d->text, sizeof d->text, "%" PRIu32, ev->disk);
    d->numeric = ev->disk_name[0] == '\0';
    d->number = ev->disk;
    *slot = (int16_t)(x->n + 1);
    return x->n++;
}
