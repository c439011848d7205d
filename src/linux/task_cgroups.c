/*
 * task_cgroups.c - processes followed from fork to move (rules in
 * task_cgroups.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytes.h"
#include "diskmon.h"
#include "linux/task_cgroups.h"

int dm_task_cgroups_init(struct dm_task_cgroups *t)
{
    memset(t, 0, sizeof *t);
    t->slots = calloc(DM_TASK_SLOTS, sizeof *t->slots);
    return t->slots == NULL ? DM_ENOMEM : 0;
}

void dm_task_cgroups_free(struct dm_task_cgroups *t)
{
    free(t->slots);
    t->slots = NULL;
}

/* Pids are handed out in order, so the low bits spread them well; the
 * multiply spreads pids a stride apart too (Knuth's constant). */
static struct dm_task_slot *slot_of(const struct dm_task_cgroups *t, uint32_t pid)
{
    _Static_assert((DM_TASK_SLOTS & (DM_TASK_SLOTS - 1)) == 0,
                   "DM_TASK_SLOTS is a power of two");
    return &t->slots[(pid * 2654435761u) >> 16 & (DM_TASK_SLOTS - 1)];
}

void dm_task_fork(struct dm_task_cgroups *t, uint32_t child, uint16_t parent_name)
{
    struct dm_task_slot *s = slot_of(t, child);

    s->pid = child;
    s->name = parent_name;
    s->used = 1;
    t->forks++;
}

void dm_task_move(struct dm_task_cgroups *t, uint32_t pid, uint16_t name)
{
    struct dm_task_slot *s = slot_of(t, pid);

    s->pid = pid;
    s->name = name;
    s->used = 1;
    t->moves++;
}

int dm_task_lookup(const struct dm_task_cgroups *t, uint32_t pid, uint16_t *name)
{
    const struct dm_task_slot *s = slot_of(t, pid);

    if (!s->used || s->pid != pid)
        return 0;
    *name = s->name;
    return 1;
}

/* A field of fmt of one of the sizes given (size_b 0: only size_a). */
static const struct dm_tp_field *field(const struct dm_tp_format *fmt, const char *name,
                                       uint32_t size, int data_loc, int *bad, char *err,
                                       size_t errlen)
{
    const struct dm_tp_field *f = dm_tp_format_field(fmt, name);

    if (f == NULL || f->size != size || (data_loc && !f->is_data_loc)) {
        if (!*bad)
            snprintf(err, errlen, "tracepoint %s: field %s %s", fmt->name, name,
                     f == NULL ? "missing" : "of an unexpected size");
        *bad = 1;
        return NULL;
    }
    return f;
}

static uint32_t end_of(const struct dm_tp_field *f)
{
    return f->offset + f->size;
}

int dm_task_layout_set(struct dm_task_layout *l, const struct dm_tp_format *fork,
                       const struct dm_tp_format *attach, char *err, size_t errlen)
{
    const struct dm_tp_field *ft, *at, *parent, *child, *root, *pid, *path;
    int bad = 0;

    memset(l, 0, sizeof *l);
    ft = field(fork, "common_type", 2, 0, &bad, err, errlen);
    at = field(attach, "common_type", 2, 0, &bad, err, errlen);
    parent = field(fork, "parent_pid", 4, 0, &bad, err, errlen);
    child = field(fork, "child_pid", 4, 0, &bad, err, errlen);
    root = field(attach, "dst_root", 4, 0, &bad, err, errlen);
    pid = field(attach, "pid", 4, 0, &bad, err, errlen);
    path = field(attach, "dst_path", 4, 1, &bad, err, errlen);
    if (bad)
        return DM_EUNSUPPORTED;
    if (ft->offset != at->offset) {
        snprintf(err, errlen, "tracepoints %s and %s: the common header differs",
                 fork->name, attach->name);
        return DM_EUNSUPPORTED;
    }
    l->fork_id = fork->id;
    l->attach_id = attach->id;
    l->type_off = ft->offset;
    l->parent_pid_off = parent->offset;
    l->child_pid_off = child->offset;
    l->root_off = root->offset;
    l->pid_off = pid->offset;
    l->path_loc_off = path->offset;
    l->fork_min = end_of(parent) > end_of(child) ? end_of(parent) : end_of(child);
    l->attach_min = end_of(root);
    if (end_of(pid) > l->attach_min)
        l->attach_min = end_of(pid);
    if (end_of(path) > l->attach_min)
        l->attach_min = end_of(path);
    return 0;
}

/* dst_path: a __data_loc string, u32 (length << 16 | offset) into the
 * record (include/trace/stages/stage5_get_offsets.h); the length counts
 * the NUL. Returns the path's length, or -1 when it lies outside. */
static long data_loc_str(const uint8_t *raw, size_t len, uint32_t loc_off,
                         const char **str)
{
    uint32_t loc = dm_ne32(raw + loc_off);
    uint32_t off = loc & 0xFFFFu, n = loc >> 16;

    if (off > len || n > len - off)
        return -1;
    *str = (const char *)raw + off;
    /* Up to the NUL, never past the field. */
    return (long)strnlen(*str, n);
}

int dm_task_decode(const struct dm_task_layout *l, const uint8_t *raw, size_t len,
                   struct dm_cgroups *c, struct dm_blk_sample *out, int *skip)
{
    uint16_t type;
    const char *path;
    long n;

    *skip = 0;
    if (l->fork_id == 0 || len < (size_t)l->type_off + 2)
        return 0;
    type = dm_ne16(raw + l->type_off);
    if (type != l->fork_id && type != l->attach_id)
        return 0;
    memset(out, 0, sizeof *out);
    if (type == l->fork_id) {
        if (len < l->fork_min)
            return DM_ECORRUPT;
        out->kind = DM_BLK_TASK_FORK;
        out->pid = dm_ne32(raw + l->parent_pid_off);
        out->child_pid = dm_ne32(raw + l->child_pid_off);
        return 1;
    }
    if (len < l->attach_min || (n = data_loc_str(raw, len, l->path_loc_off, &path)) < 0)
        return DM_ECORRUPT;
    /* The kernel filter keeps v2 moves; a kernel that refused the filter
     * hands out v1 moves too, which say nothing of the v2 path. */
    if (dm_ne32(raw + l->root_off) != 0) {
        *skip = 1;
        return DM_ECORRUPT;
    }
    out->kind = DM_BLK_TASK_MOVE;
    out->pid = dm_ne32(raw + l->pid_off);
    out->cgroup = dm_cgroup_intern(c, path, (size_t)n);
    return 1;
}
