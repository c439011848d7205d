/*
 * selftest_linux.c - the self-test's file and I/O on Linux (selftest.h).
 *
 * The file is made new (O_CREAT | O_EXCL | O_NOFOLLOW) in the folder asked
 * for, /var/tmp by default (a folder of the root file system's disk that,
 * unlike /tmp, is rarely a tmpfs), and every request goes through
 * O_DIRECT | O_DSYNC descriptors with a page-aligned buffer, so each read
 * and write is one request to the disk and each write is durable when the
 * call returns. Where the bytes are comes from FS_IOC_FIEMAP
 * (Documentation/filesystems/fiemap.rst): the extents' physical offsets,
 * relative to the file system's block device, plus the partition's start
 * (/sys/dev/block/MAJ:MIN/start, in 512-byte sectors) when that device is a
 * partition, since the request tracepoints name the whole disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "platform/platform.h"
#include "selftest/selftest.h"

/* statfs(2) f_type of the file systems that keep files in memory only. */
#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6
/* The events' disk: the kernel's dev_t encoding (diskmon.h, dm_event.disk). */
#define KERNEL_DEV(maj, min) (((uint32_t)(maj) << 20) | (uint32_t)(min))
/* FIEMAP extent flags after which fe_physical is not where the bytes are
 * on the disk (Documentation/filesystems/fiemap.rst). */
#define NOT_PLAIN_EXTENT                                                        \
    (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED |    \
     FIEMAP_EXTENT_DATA_ENCRYPTED | FIEMAP_EXTENT_NOT_ALIGNED |                  \
     FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_UNWRITTEN)
#define DEFAULT_DIR "/var/tmp"
#define FILE_BYTES (DM_ST_FILE_BLOCKS * DM_ST_BLOCK)

struct dm_st_file {
    int fd;            /* made by dm_st_prepare: the writes and the flush */
    int late_fd;       /* opened at the first read, during the capture */
    unsigned char *buf;
    char path[PATH_MAX];
};

static long read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    size_t n;

    if (f == NULL)
        return -1;
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return (long)n;
}

/* The folder to make the file in: path itself, or the folder of a file. */
static int pick_dir(const char *path, char *dir, size_t len, char *msg, size_t mlen)
{
    struct stat st;

    if (path == NULL)
        path = DEFAULT_DIR;
    if (stat(path, &st) != 0) {
        snprintf(msg, mlen, "cannot use %s: %s", path, strerror(errno));
        return dm_err_from_errno(errno);
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(dir, len, "%s", path);
    } else if (S_ISREG(st.st_mode)) {
        const char *slash = strrchr(path, '/');

        if (slash == NULL)
            snprintf(dir, len, ".");
        else
            snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    } else {
        snprintf(msg, mlen, "%s is not a folder or a file: give a folder on the file "
                 "system to test (for a disk, a folder where it is mounted)", path);
        return DM_EUSAGE;
    }
    return 0;
}

/* The whole disk behind st_dev, its partition start and its cache. */
static void find_disk(dev_t dev, struct dm_st_place *pl, uint64_t *start_bytes)
{
    char link[64], real[PATH_MAX], p[PATH_MAX + 32], text[64];
    unsigned maj = major(dev), mnr = minor(dev);
    const char *base;

    *start_bytes = 0;
    snprintf(pl->disk_name, sizeof pl->disk_name, "%u:%u", maj, mnr);
    pl->disk = KERNEL_DEV(maj, mnr);
    snprintf(link, sizeof link, "/sys/dev/block/%u:%u", maj, mnr);
    if (realpath(link, real) == NULL)
        return;
    snprintf(p, sizeof p, "%s/partition", real);
    if (access(p, F_OK) == 0) {
        snprintf(p, sizeof p, "%s/start", real);
        if (read_small(p, text, sizeof text) > 0)
            *start_bytes = strtoull(text, NULL, 10) * 512u;
        *strrchr(real, '/') = '\0'; /* the whole disk holds its partitions */
        snprintf(p, sizeof p, "%s/dev", real);
        if (read_small(p, text, sizeof text) > 0 && sscanf(text, "%u:%u", &maj, &mnr) == 2)
            pl->disk = KERNEL_DEV(maj, mnr);
    }
    base = strrchr(real, '/');
    snprintf(pl->disk_name, sizeof pl->disk_name, "%.*s", (int)sizeof pl->disk_name - 1,
             base != NULL ? base + 1 : real);
    snprintf(p, sizeof p, "%s/queue/write_cache", real);
    if (read_small(p, text, sizeof text) > 0)
        pl->write_cache = strcmp(text, "write back") == 0    ? 1
                          : strcmp(text, "write through") == 0 ? 0
                                                               : -1;
}

/* Whether the device is a device-mapper or md device: the requests the
 * tracepoints see are then those of the disks below it, at remapped
 * sectors (its sysfs folder has dm/ or md/, Documentation/ABI). */
static int stacked(dev_t dev)
{
    char p[96];
    struct stat st;

    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/dm", major(dev), minor(dev));
    if (stat(p, &st) == 0)
        return 1;
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/md", major(dev), minor(dev));
    return stat(p, &st) == 0;
}

static void map_file(int fd, uint64_t start_bytes, struct dm_st_place *pl)
{
    /* struct fiemap ends in its extents (a flexible array member,
     * linux/fiemap.h): one buffer holds the header and room for ours. */
    union {
        struct fiemap fm;
        unsigned char bytes[sizeof(struct fiemap) +
                            DM_ST_MAX_EXTENTS * sizeof(struct fiemap_extent)];
    } q;
    uint64_t next = 0;

    memset(&q, 0, sizeof q);
    q.fm.fm_start = 0;
    q.fm.fm_length = FILE_BYTES;
    q.fm.fm_flags = FIEMAP_FLAG_SYNC;
    q.fm.fm_extent_count = DM_ST_MAX_EXTENTS;
    if (ioctl(fd, FS_IOC_FIEMAP, &q.fm) != 0) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the file system does not answer FIEMAP: %s", strerror(errno));
        return;
    }
    for (uint32_t i = 0; i < q.fm.fm_mapped_extents && i < DM_ST_MAX_EXTENTS; i++) {
        const struct fiemap_extent *x = &q.fm.fm_extents[i];
        struct dm_st_extent *e = &pl->ext[pl->n_ext];

        if (x->fe_flags & NOT_PLAIN_EXTENT) {
            snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                     "FIEMAP extent flags 0x%x: not a plain place on the disk",
                     (unsigned)x->fe_flags);
            pl->n_ext = 0;
            return;
        }
        if (x->fe_logical > next)
            break; /* a hole: not the whole file */
        e->file_offset = x->fe_logical;
        e->disk_offset = x->fe_physical + start_bytes;
        e->bytes = x->fe_length;
        next = x->fe_logical + x->fe_length;
        pl->n_ext++;
    }
    if (next < FILE_BYTES) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "FIEMAP maps %llu of its %u bytes", (unsigned long long)next, FILE_BYTES);
        pl->n_ext = 0;
        return;
    }
    pl->mapped = 1;
    if (start_bytes > 0)
        snprintf(pl->where, sizeof pl->where, "FIEMAP, plus the partition's start at "
                 "sector %llu", (unsigned long long)(start_bytes / 512u));
    else
        snprintf(pl->where, sizeof pl->where, "FIEMAP");
}

/* Where the file is (selftest.h, struct dm_st_place). Returns 0, or a
 * negative dm_err when the folder is on no disk at all. */
static int place_of(int fd, const char *dir, struct dm_st_place *pl, char *msg, size_t len)
{
    struct stat st;
    struct statfs sf;
    uint64_t start_bytes = 0;

    memset(pl, 0, sizeof *pl);
    pl->write_cache = -1;
    snprintf(pl->where, sizeof pl->where, "unknown");
    if (fstat(fd, &st) != 0 || fstatfs(fd, &sf) != 0) {
        snprintf(msg, len, "cannot read what holds %s: %s", dir, strerror(errno));
        return dm_err_from_errno(errno);
    }
    if ((unsigned long)sf.f_type == TMPFS_MAGIC_ || (unsigned long)sf.f_type == RAMFS_MAGIC_) {
        snprintf(msg, len, "%s is on a %s, which keeps files in memory: there is no disk "
                 "I/O to watch; give a folder on a disk (diskmon --self-test DIR)", dir,
                 (unsigned long)sf.f_type == TMPFS_MAGIC_ ? "tmpfs" : "ramfs");
        return DM_EUSAGE;
    }
    if (major(st.st_dev) == 0) {
        /* btrfs, overlayfs, network file systems: st_dev is no block device. */
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the file system (type 0x%lx) has no block device of its own",
                 (unsigned long)sf.f_type);
        snprintf(pl->disk_name, sizeof pl->disk_name, "?");
        return 0;
    }
    find_disk(st.st_dev, pl, &start_bytes);
    if (stacked(st.st_dev)) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "%u:%u is a device-mapper or md device, whose requests reach the disks "
                 "below it at remapped sectors", major(st.st_dev), minor(st.st_dev));
        return 0;
    }
    map_file(fd, start_bytes, pl);
    return 0;
}

int dm_st_prepare(struct dm_st_file **out, const char *path, struct dm_st_place *place,
                  char *msg, size_t len)
{
    struct dm_st_file *f = calloc(1, sizeof *f);
    char dir[PATH_MAX - 64];
    int rc;

    *out = NULL;
    memset(place, 0, sizeof *place);
    if (f == NULL || posix_memalign((void **)&f->buf, DM_ST_BLOCK, FILE_BYTES) != 0) {
        free(f);
        snprintf(msg, len, "%s", dm_strerror(DM_ENOMEM));
        return DM_ENOMEM;
    }
    f->fd = f->late_fd = -1;
    *out = f;
    rc = pick_dir(path, dir, sizeof dir, msg, len);
    if (rc != 0)
        return rc;
    /* A new name, never an existing file or a symlink planted under it
     * (O_EXCL fails on both). */
    for (unsigned tries = 0; f->fd < 0 && tries < 100; tries++) {
        snprintf(f->path, sizeof f->path, "%s%sdiskmon-selftest.%u.%u", dir,
                 dir[strlen(dir) - 1] == '/' ? "" : "/", (unsigned)getpid(),
                 (unsigned)(dm_monotonic_ns() % 1000000u) + tries);
        f->fd = open(f->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
                     O_DIRECT | O_DSYNC, 0600);
        if (f->fd < 0 && errno != EEXIST)
            break;
    }
    if (f->fd < 0) {
        int e = errno;

        snprintf(msg, len, "cannot create a file in %s%s: %s", dir,
                 e == EINVAL ? " with O_DIRECT (the file system refuses unbuffered I/O)"
                             : "", strerror(e));
        f->path[0] = '\0';
        return dm_err_from_errno(e);
    }
    dm_st_fill(f->buf, 0, FILE_BYTES);
    if (pwrite(f->fd, f->buf, FILE_BYTES, 0) != (ssize_t)FILE_BYTES || fsync(f->fd) != 0) {
        snprintf(msg, len, "cannot write %s: %s", f->path, strerror(errno));
        return DM_EIO;
    }
    return place_of(f->fd, dir, place, msg, len);
}

const char *dm_st_path(const struct dm_st_file *f)
{
    return f->path;
}

const char *dm_st_file_name(const struct dm_st_file *f)
{
    (void)f;
    return NULL; /* Linux block events name no files */
}

int dm_st_request(struct dm_st_file *f, int request, uint64_t offset, uint32_t bytes,
                  int early, char *msg, size_t len)
{
    ssize_t n;
    int fd = f->fd;

    if (!early && f->late_fd < 0) {
        /* The same file, opened anew: through /proc/self/fd, never by its
         * name, which another process could have replaced meanwhile. */
        char self[64];

        snprintf(self, sizeof self, "/proc/self/fd/%d", f->fd);
        f->late_fd = open(self, O_RDWR | O_CLOEXEC | O_DIRECT | O_DSYNC);
        if (f->late_fd < 0) {
            snprintf(msg, len, "cannot open %s again: %s", self, strerror(errno));
            return dm_err_from_errno(errno);
        }
    }
    if (!early)
        fd = f->late_fd;
    switch (request) {
    case DM_REQ_FLUSH:
        if (fdatasync(fd) != 0) {
            snprintf(msg, len, "fdatasync: %s", strerror(errno));
            return dm_err_from_errno(errno);
        }
        return 0;
    case DM_REQ_WRITE:
        dm_st_fill(f->buf, offset, bytes);
        n = pwrite(fd, f->buf, bytes, (off_t)offset);
        break;
    default:
        memset(f->buf, 0, bytes);
        n = pread(fd, f->buf, bytes, (off_t)offset);
        break;
    }
    if (n != (ssize_t)bytes) {
        snprintf(msg, len, "%s of %u bytes at %llu: %s",
                 request == DM_REQ_WRITE ? "pwrite" : "pread", bytes,
                 (unsigned long long)offset, n < 0 ? strerror(errno) : "short");
        return n < 0 ? dm_err_from_errno(errno) : DM_EIO;
    }
    return request == DM_REQ_READ ? dm_st_check_read(f->buf, offset, bytes, msg, len) : 0;
}

void dm_st_remove(struct dm_st_file *f)
{
    if (f == NULL)
        return;
    if (f->path[0] != '\0')
        unlink(f->path);
    if (f->late_fd >= 0)
        close(f->late_fd);
    if (f->fd >= 0)
        close(f->fd);
    free(f->buf);
    free(f);
}

uint32_t dm_st_own_pid(void)
{
    return (uint32_t)getpid();
}

void dm_st_own_name(char *buf, size_t len)
{
    if (read_small("/proc/self/comm", buf, len) <= 0)
        snprintf(buf, len, "diskmon");
}
