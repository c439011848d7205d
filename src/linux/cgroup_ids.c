/*
 * cgroup_ids.c - cgroup ids to v2 paths, by walking the cgroup2 mount
 * (rules in cgroup_ids.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/cgroup_ids.h"

/* A cgroup tree deeper than this is not walked further (systemd's are 4
 * or 5 levels; the kernel allows cgroup.max.depth, unlimited by default). */
#define MAX_DEPTH 32

uint64_t dm_cgroup_dir_id(int dirfd, const char *name)
{
    struct {
        struct file_handle fh;
        uint64_t id;
    } h;
    struct stat st;
    int mount_id;

    h.fh.handle_bytes = sizeof h.id;
    if (name_to_handle_at(dirfd, name, &h.fh, &mount_id, 0) == 0 &&
        h.fh.handle_bytes == sizeof h.id) {
        uint64_t id;

        memcpy(&id, h.fh.f_handle, sizeof id);
        return id;
    }
    /* No handles (or a longer one): the inode number, which is the id on
     * 64-bit kernels. */
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    return (uint64_t)st.st_ino;
}

static struct dm_cgroup_id_slot *find(struct dm_cgroup_ids *m, uint64_t id)
{
    uint32_t i = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) & (DM_CGROUP_ID_SLOTS - 1);

    _Static_assert((DM_CGROUP_ID_SLOTS & (DM_CGROUP_ID_SLOTS - 1)) == 0,
                   "DM_CGROUP_ID_SLOTS is a power of two");
    while (m->slots[i].id != 0 && m->slots[i].id != id)
        i = (i + 1) & (DM_CGROUP_ID_SLOTS - 1);
    return &m->slots[i];
}

/* Remember id -> name; a full map (3/4) keeps what it has. */
static void put(struct dm_cgroup_ids *m, uint64_t id, uint16_t name)
{
    struct dm_cgroup_id_slot *s;

    if (id == 0)
        return;
    s = find(m, id);
    if (s->id == 0) {
        if (m->used >= DM_CGROUP_ID_SLOTS / 4 * 3)
            return;
        m->used++;
        s->id = id;
    }
    s->name = name;
}

/* Walk dirfd (the cgroup at path, len bytes) and every cgroup below it. */
static void walk(struct dm_cgroup_ids *m, int fd, char *path, size_t len, int depth)
{
    DIR *d;
    struct dirent *e;

    if (depth > MAX_DEPTH || (d = fdopendir(fd)) == NULL) {
        close(fd);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        int sub;

        if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 ||
            strcmp(e->d_name, "..") == 0 || len + 1 + n >= DM_CGROUP_MAX)
            continue;
        path[len] = '/';
        memcpy(path + len + 1, e->d_name, n + 1);
        put(m, dm_cgroup_dir_id(dirfd(d), e->d_name),
            dm_cgroup_intern(m->names, path, len + 1 + n));
        sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub >= 0)
            walk(m, sub, path, len + 1 + n, depth + 1);
    }
    path[len] = '\0';
    closedir(d);
}

static void walk_mount(struct dm_cgroup_ids *m)
{
    char path[DM_CGROUP_MAX];
    int fd = open(m->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    m->walks++;
    if (fd < 0)
        return;
    put(m, dm_cgroup_dir_id(fd, "."), dm_cgroup_intern(m->names, "/", 1));
    path[0] = '\0';
    walk(m, fd, path, 0, 0);
}

int dm_cgroup_ids_open_at(struct dm_cgroup_ids *m, struct dm_cgroups *names,
                          const char *dir)
{
    memset(m, 0, sizeof *m);
    snprintf(m->mount, sizeof m->mount, "%s", dir);
    m->names = names;
    m->slots = calloc(DM_CGROUP_ID_SLOTS, sizeof *m->slots);
    if (m->slots == NULL)
        return DM_ENOMEM;
    walk_mount(m);
    return 0;
}

/* The mount point of the first cgroup2 line of /proc/self/mounts
 * ("cgroup2 /sys/fs/cgroup cgroup2 rw,... 0 0"; spaces in it are \040,
 * which a cgroup mount point does not have in practice). */
static int cgroup2_mount(const char *mounts, char *dir, size_t cap)
{
    char dev[64], point[256], type[32];
    const char *p = mounts;

    while (p != NULL && *p != '\0') {
        if (sscanf(p, "%63s %255s %31s", dev, point, type) == 3 &&
            strcmp(type, "cgroup2") == 0) {
            snprintf(dir, cap, "%s", point);
            return 1;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return 0;
}

/* Nonzero when a v1 line of /proc/self/cgroup ("ID:CONTROLLERS:PATH")
 * lists perf_event among its controllers. */
static int perf_event_on_v1(const char *self_cgroup)
{
    const char *p = self_cgroup;

    while (p != NULL && *p != '\0') {
        const char *c = strchr(p, ':'), *nl = strchr(p, '\n');
        const char *end = nl != NULL ? nl : p + strlen(p);

        if (c != NULL && c < end && strncmp(p, "0:", 2) != 0) {
            const char *k = c + 1;
            const char *ke = memchr(k, ':', (size_t)(end - k));

            for (const char *w = k; ke != NULL && w < ke;) {
                const char *comma = memchr(w, ',', (size_t)(ke - w));
                const char *we = comma != NULL ? comma : ke;

                if ((size_t)(we - w) == 10 && strncmp(w, "perf_event", 10) == 0)
                    return 1;
                w = we + 1;
            }
        }
        p = nl != NULL ? nl + 1 : NULL;
    }
    return 0;
}

int dm_cgroup_ids_open(struct dm_cgroup_ids *m, struct dm_cgroups *names,
                       const char *mounts_text, const char *self_cgroup, char *why,
                       size_t whylen)
{
    char dir[256];

    memset(m, 0, sizeof *m);
    if (!cgroup2_mount(mounts_text, dir, sizeof dir)) {
        snprintf(why, whylen, "no cgroup2 file system is mounted");
        return DM_EUNSUPPORTED;
    }
    if (perf_event_on_v1(self_cgroup)) {
        snprintf(why, whylen, "the perf_event controller is on a v1 hierarchy, so the "
                 "samples' cgroup ids are not v2 ones");
        return DM_EUNSUPPORTED;
    }
    return dm_cgroup_ids_open_at(m, names, dir);
}

void dm_cgroup_ids_free(struct dm_cgroup_ids *m)
{
    free(m->slots);
    m->slots = NULL;
}

uint16_t dm_cgroup_ids_name(struct dm_cgroup_ids *m, uint64_t id)
{
    struct dm_cgroup_id_slot *s = find(m, id);

    if (id != 0 && s->id != id) {
        /* A first miss: a cgroup made since the last walk. The id is
         * remembered either way, so a removed cgroup costs one walk, not
         * one a request. */
        walk_mount(m);
        s = find(m, id);
        if (s->id != id) {
            put(m, id, 0);
            s = find(m, id);
        }
    }
    if (id == 0 || s->id != id || s->name == 0) {
        m->unknown++;
        return 0;
    }
    return s->name;
}
