/*
 * perf_source.c - the Linux live source: block tracepoints through
 * perf_event_open, one mmap'd ring per CPU, one reader thread.
 *
 * Which tracepoints (linux-block-facts.md, "Tracepoints"; checked on 6.18):
 *
 *   modern (block_io_start exists, Linux 6.5+):
 *     block_io_start     start time, and the submitter's pid and comm
 *     block_rq_complete  completion time and the final size
 *     block_rq_merge, block_bio_frontmerge (when present) keep the pairing
 *                        table right when requests merge; they fire only on
 *                        merges
 *     block_rq_issue     only with --queue: the dispatch time
 *   legacy (older kernels, or DM_LINUX_LEGACY=1 in the environment, which
 *   the tests use to cover this path on a new kernel):
 *     block_rq_issue     start time, pid and comm of the dispatching task
 *     block_rq_complete  completion
 *     block_rq_insert    only with --queue: when the request was queued
 *
 * block_io_done is not used as the completion even where it exists: it
 * fires after blk_update_request() has set the request's length to zero,
 * so its nr_sector and bytes are always 0 (seen on 6.18), while
 * block_io_start carries the size of the first bio only (later bios merge
 * in). block_rq_complete carries the size the device completed.
 *
 * Each CPU has one ring: the first tracepoint's fd is mmap'd, the others are
 * redirected into it with PERF_EVENT_IOC_SET_OUTPUT. The reader (run(), the
 * source thread) sleeps in epoll_wait on the rings' fds and an eventfd that
 * stop() writes; the kernel wakes it when a ring is a quarter full
 * (wakeup_watermark) and the timeout bounds how long a quiet ring waits.
 * Each pass merges the rings' records by timestamp (a small heap), so
 * events come out in time order and starts mostly precede their
 * completions; the pairing table (pairing.h) copes with the rest.
 *
 * Losses: PERF_RECORD_LOST records count samples the kernel could not
 * write; at the end each event's own count (read() on its fd) is compared
 * with the samples that arrived, which also catches samples the kernel
 * dropped without any record (it happens under heavy load on 6.18, with
 * perf record too). Starts or completions that never find their other half
 * are expired and counted (pairing.h). All of it goes into lost_events and
 * one line on stderr says where it went.
 *
 * Nothing on the per-record path allocates, locks or makes a system call;
 * device names are looked up once per device and cached.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/options.h"
#include "core/sink.h"
#include "diskmon.h"
#include "linux/block_decode.h"
#include "linux/pairing.h"
#include "linux/tracefs.h"
#include "platform/platform.h"

#define NS_PER_MS 1000000ull
#define SECTOR_BYTES 512u          /* tracepoint sectors: always 512 bytes */
/* Per-CPU ring data area: 2 MiB holds about 20,000 records (~100 bytes
 * each), 40 ms of a 240k IOPS load on one CPU; the total stays under
 * 64 MiB on big machines. Must be a power of two (perf_event_open(2)). */
#define RING_BYTES_MAX (2u << 20)
#define RING_BYTES_MIN (64u << 10)
#define RING_BYTES_TOTAL (64u << 20)
#define EPOLL_TIMEOUT_MS 100       /* most a quiet event waits to be shown */
#define EXPIRE_EVERY_NS (250 * NS_PER_MS)
#define RELEASE_EVERY 512          /* records between data_tail updates */
#define PAIR_SLOTS 16384u          /* 1 MiB: 12288 open requests */
#define MAX_CPUS 4096
#define NAME_CACHE 64
#define MAX_KINDS 5                /* tracepoints opened per CPU */

struct ring {
    int fd;                        /* the fd whose buffer this is */
    void *base;                    /* mmap: perf_event_mmap_page + data */
    size_t map_len;
    struct perf_event_mmap_page *meta;
    const uint8_t *data;
    uint64_t data_size;
    uint64_t tail, head;           /* our read position; the kernel's, as seen */
    struct dm_blk_sample cur;      /* the next record, decoded (heap key) */
};

struct disk_name {
    uint32_t dev;
    char name[DM_DISK_NAME_MAX];
};

struct linux_source {
    char tracefs[128];
    int legacy;
    int queue;
    enum dm_blk_kind kinds[MAX_KINDS]; /* opened per CPU; [0] owns the ring */
    int n_kinds;
    struct dm_blk_decoder dec;
    int n_rings;
    struct ring *rings;
    int *fds;                      /* n_rings * n_kinds, -1 when not open */
    int epfd, stopfd;
    volatile int stop;
    struct dm_pairing pairs;
    uint8_t *scratch;              /* DM_PERF_RECORD_MAX, for wrapped records */
    int *heap;                     /* ring indexes ordered by cur.time_ns */
    int heap_n;
    uint64_t t0;                   /* CLOCK_MONOTONIC at capture start */
    uint64_t kernel_lost;          /* PERF_RECORD_LOST / LOST_SAMPLES counts */
    uint64_t malformed;
    uint64_t received[DM_BLK_KIND_COUNT]; /* samples read, per tracepoint */
    uint64_t counted[DM_BLK_KIND_COUNT];  /* samples the kernel counted (at the end) */
    struct disk_name names[NAME_CACHE];
    int n_names, last_name, next_evict;
    char filter[32 * DM_MAX_DISK_FILTERS]; /* "dev == N || ...", 22 bytes each */
    struct dm_event ev;            /* reused for every emit */
};

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
    return (int)syscall(SYS_perf_event_open, attr, -1, cpu, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

/* The clock the samples are stamped with (use_clockid, CLOCK_MONOTONIC). */
static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- small helpers ----------------------------------------------------- */

/* Read a short sysfs/procfs text file into buf (NUL-terminated). */
static int read_text(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* "0-3,6,8-9\n" into a list of CPU numbers. Returns the count, or -1. */
static int parse_cpu_list(const char *s, int *cpus, int max)
{
    int n = 0;

    while (*s != '\0' && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b;

        if (end == s || a < 0)
            return -1;
        b = a;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a)
                return -1;
            s = end;
        }
        for (long c = a; c <= b; c++) {
            if (n == max)
                return -1;
            cpus[n++] = (int)c;
        }
        if (*s == ',')
            s++;
    }
    return n;
}

/* ---- device names -------------------------------------------------------- */

/* The kernel dev_t encoding in tracepoints: major = dev >> 20, minor =
 * dev & 0xFFFFF (include/linux/kdev_t.h, MINORBITS 20). */
static unsigned dev_major(uint32_t dev)
{
    return dev >> 20;
}

static unsigned dev_minor(uint32_t dev)
{
    return dev & 0xFFFFFu;
}

/* The device's name from /sys/dev/block/MAJ:MIN/uevent (DEVNAME=loop0), or
 * "MAJ:MIN" when the device is gone. */
static void lookup_disk_name(uint32_t dev, char *name, size_t cap)
{
    char path[64], buf[1024];

    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", dev_major(dev),
             dev_minor(dev));
    if (read_text(path, buf, sizeof buf) == 0) {
        const char *p = strstr(buf, "DEVNAME=");

        if (p != NULL) {
            size_t n = strcspn(p + 8, "\n");

            if (n > 0 && n < cap) {
                memcpy(name, p + 8, n);
                name[n] = '\0';
                return;
            }
        }
    }
    snprintf(name, cap, "%u:%u", dev_major(dev), dev_minor(dev));
}

static const char *disk_name(struct linux_source *s, uint32_t dev)
{
    struct disk_name *slot;

    if (s->n_names > 0 && s->names[s->last_name].dev == dev)
        return s->names[s->last_name].name;
    for (int i = 0; i < s->n_names; i++) {
        if (s->names[i].dev == dev) {
            s->last_name = i;
            return s->names[i].name;
        }
    }
    if (s->n_names < NAME_CACHE) {
        s->last_name = s->n_names++;
    } else {
        s->last_name = s->next_evict;
        s->next_evict = (s->next_evict + 1) % NAME_CACHE;
    }
    slot = &s->names[s->last_name];
    slot->dev = dev;
    lookup_disk_name(dev, slot->name, sizeof slot->name);
    return slot->name;
}

/* ---- -d: device names to a kernel filter -------------------------------- */

/* One -d entry to a kernel dev_t. Partitions are refused: block tracepoints
 * report the whole disk (rq->q->disk), so a partition filter would never
 * match. */
static int resolve_disk(const char *entry, uint32_t *dev, char *err, size_t errlen)
{
    char path[256], buf[64];
    unsigned maj, min;
    int used = 0;

    if (sscanf(entry, "%u:%u%n", &maj, &min, &used) == 2 && entry[used] == '\0') {
        if (maj >= (1u << 12) || min > 0xFFFFFu) {
            snprintf(err, errlen, "-d %s: no such device number", entry);
            return DM_EUSAGE;
        }
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/partition", maj, min);
        if (access(path, F_OK) == 0) {
            snprintf(err, errlen, "-d %s is a partition; the kernel reports I/O per "
                     "whole disk: give the disk instead", entry);
            return DM_EUSAGE;
        }
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u", maj, min);
        if (access(path, F_OK) != 0) {
            snprintf(err, errlen, "-d %s: no block device with that number "
                     "(see /sys/dev/block)", entry);
            return DM_ENOTFOUND;
        }
        *dev = (maj << 20) | min;
        return 0;
    }
    if (entry[0] == '\0' || strchr(entry, '/') != NULL || strlen(entry) > 64 ||
        strspn(entry, "0123456789") == strlen(entry)) {
        snprintf(err, errlen, "-d %s: on Linux give a block device name as in "
                 "/sys/class/block (sda, nvme0n1, loop0) or MAJ:MIN (8:0)", entry);
        return DM_EUSAGE;
    }
    snprintf(path, sizeof path, "/sys/class/block/%s/partition", entry);
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "-d %s is a partition; the kernel reports I/O per "
                 "whole disk: give the disk instead", entry);
        return DM_EUSAGE;
    }
    snprintf(path, sizeof path, "/sys/class/block/%s/dev", entry);
    if (read_text(path, buf, sizeof buf) != 0 ||
        sscanf(buf, "%u:%u", &maj, &min) != 2) {
        snprintf(err, errlen, "-d %s: no such block device (see /sys/class/block)",
                 entry);
        return DM_ENOTFOUND;
    }
    *dev = (maj << 20) | min;
    return 0;
}

/* Build "dev == A || dev == B" for PERF_EVENT_IOC_SET_FILTER (the ftrace
 * filter syntax, Documentation/trace/events.rst "Event filtering"). */
static int build_filter(struct linux_source *s, const struct dm_options *opt,
                        char *err, size_t errlen)
{
    size_t len = 0;

    s->filter[0] = '\0';
    for (int i = 0; i < opt->n_disks; i++) {
        uint32_t dev;
        int rc = resolve_disk(opt->disks[i], &dev, err, errlen);

        if (rc != 0)
            return rc;
        len += (size_t)snprintf(s->filter + len, sizeof s->filter - len, "%sdev == %u",
                                i > 0 ? " || " : "", (unsigned)dev);
        if (len >= sizeof s->filter) {
            snprintf(err, errlen, "too many -d devices");
            return DM_EUSAGE;
        }
    }
    return 0;
}

/* ---- opening ------------------------------------------------------------- */

static int access_error(struct dm_source *src, const char *what, int e)
{
    snprintf(src->errmsg, sizeof src->errmsg,
             "cannot open %s: %s. Run diskmon as root (sudo diskmon), or grant it "
             "CAP_PERFMON (sudo setcap cap_perfmon+ep diskmon), or lower "
             "kernel.perf_event_paranoid (sudo sysctl kernel.perf_event_paranoid=-1)",
             what, strerror(e));
    return DM_EACCESS;
}

static int add_tracepoint(struct dm_source *src, struct linux_source *s,
                          enum dm_blk_kind kind)
{
    const char *name = dm_blk_event_names[kind];
    struct dm_tp_format *fmt = malloc(sizeof *fmt);
    uint32_t id;
    int rc;

    if (fmt == NULL)
        return DM_ENOMEM;
    rc = dm_tracefs_read_id(s->tracefs, name, &id, src->errmsg, sizeof src->errmsg);
    if (rc == 0)
        rc = dm_tracefs_read_format(s->tracefs, name, fmt, src->errmsg,
                                    sizeof src->errmsg);
    if (rc == 0)
        rc = dm_blk_decoder_add(&s->dec, kind, id, fmt, src->errmsg,
                                sizeof src->errmsg);
    free(fmt);
    if (rc == 0)
        s->kinds[s->n_kinds++] = kind;
    return rc;
}

static int choose_tracepoints(struct dm_source *src, struct linux_source *s)
{
    const char *env = getenv("DM_LINUX_LEGACY");
    int rc;

    s->legacy = !dm_tracefs_has_event(s->tracefs, "block_io_start") ||
                (env != NULL && strcmp(env, "1") == 0);
    /* The first kind owns each CPU's ring; the order also sets the enable
     * order (see enable_all). */
    rc = add_tracepoint(src, s, s->legacy ? DM_BLK_RQ_ISSUE : DM_BLK_IO_START);
    if (rc == 0)
        rc = add_tracepoint(src, s, DM_BLK_RQ_COMPLETE);
    if (rc == 0 && s->queue)
        rc = add_tracepoint(src, s, s->legacy ? DM_BLK_RQ_INSERT : DM_BLK_RQ_ISSUE);
    /* Merges matter only when starts are taken before the scheduler, which
     * is where requests merge. */
    if (rc == 0 && (!s->legacy || s->queue) &&
        dm_tracefs_has_event(s->tracefs, "block_rq_merge"))
        rc = add_tracepoint(src, s, DM_BLK_RQ_MERGE);
    if (rc == 0 && (!s->legacy || s->queue) &&
        dm_tracefs_has_event(s->tracefs, "block_bio_frontmerge"))
        rc = add_tracepoint(src, s, DM_BLK_BIO_FRONTMERGE);
    return rc;
}

static uint64_t ring_bytes(int n_rings)
{
    uint64_t bytes = RING_BYTES_MAX;

    while (bytes > RING_BYTES_MIN && bytes * (uint64_t)n_rings > RING_BYTES_TOTAL)
        bytes /= 2;
    return bytes;
}

static int open_cpu(struct dm_source *src, struct linux_source *s, int r, int cpu,
                    uint64_t data_bytes, int *kernel_filter)
{
    long page = sysconf(_SC_PAGESIZE);
    struct ring *ring = &s->rings[r];

    for (int k = 0; k < s->n_kinds; k++) {
        struct perf_event_attr attr;
        int fd;

        memset(&attr, 0, sizeof attr);
        attr.type = PERF_TYPE_TRACEPOINT;
        attr.size = sizeof attr;
        attr.config = s->dec.layouts[s->kinds[k]].id;
        attr.sample_period = 1;
        attr.sample_type = dm_blk_sample_type();
        attr.disabled = 1;
        attr.watermark = 1;
        attr.wakeup_watermark = (uint32_t)(data_bytes / 4);
        attr.use_clockid = 1;
        attr.clockid = CLOCK_MONOTONIC;
        fd = perf_event_open(&attr, cpu);
        if (fd < 0) {
            int e = errno;
            char what[96];

            snprintf(what, sizeof what, "tracepoint block:%s on CPU %d",
                     dm_blk_event_names[s->kinds[k]], cpu);
            if (e == EACCES || e == EPERM)
                return access_error(src, what, e);
            if (e == EMFILE || e == ENFILE) {
                snprintf(src->errmsg, sizeof src->errmsg,
                         "cannot open %s: too many open files; diskmon needs %d "
                         "descriptors: raise the limit (ulimit -n)",
                         what, s->n_rings * s->n_kinds + 16);
                return DM_EOS;
            }
            snprintf(src->errmsg, sizeof src->errmsg, "cannot open %s: %s", what,
                     strerror(e));
            return DM_EOS;
        }
        s->fds[r * s->n_kinds + k] = fd;
        if (s->filter[0] != '\0' && *kernel_filter &&
            ioctl(fd, PERF_EVENT_IOC_SET_FILTER, s->filter) != 0) {
            fprintf(stderr, "diskmon: the kernel refused the device filter \"%s\" "
                    "(%s); filtering in diskmon instead\n", s->filter, strerror(errno));
            *kernel_filter = 0;
            /* Clear the filters already set so every fd behaves alike. */
            for (int i = 0; i <= r * s->n_kinds + k; i++)
                if (s->fds[i] >= 0)
                    ioctl(s->fds[i], PERF_EVENT_IOC_SET_FILTER, "");
        }
        if (k == 0) {
            uint64_t len = data_bytes;

            /* Retry smaller when locked memory is short (non-root users
             * with CAP_PERFMON are held to perf_event_mlock_kb). */
            for (;;) {
                ring->map_len = (size_t)(len + (uint64_t)page);
                ring->base = mmap(NULL, ring->map_len, PROT_READ | PROT_WRITE,
                                  MAP_SHARED, fd, 0);
                if (ring->base != MAP_FAILED)
                    break;
                if ((errno != EPERM && errno != ENOMEM) || len <= (uint64_t)page * 2) {
                    int e = errno;

                    ring->base = NULL;
                    snprintf(src->errmsg, sizeof src->errmsg,
                             "cannot map the perf buffer of CPU %d: %s", cpu,
                             strerror(e));
                    return e == EPERM ? DM_EACCESS : DM_EOS;
                }
                /* The wakeup watermark was set for the full size; the
                 * kernel caps it at the buffer size, and the epoll timeout
                 * still bounds the wait. */
                len /= 2;
            }
            ring->fd = fd;
            ring->meta = ring->base;
            ring->data = (const uint8_t *)ring->base + page;
            ring->data_size = len;
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
            snprintf(src->errmsg, sizeof src->errmsg,
                     "cannot redirect block:%s into CPU %d's buffer: %s",
                     dm_blk_event_names[s->kinds[k]], cpu, strerror(errno));
            return DM_EOS;
        }
    }
    return 0;
}

static int open_rings(struct dm_source *src, struct linux_source *s)
{
    char buf[4096];
    int n, kernel_filter = 1, *cpus = malloc(MAX_CPUS * sizeof *cpus), rc = 0;
    uint64_t bytes;

    if (cpus == NULL)
        return DM_ENOMEM;
    if (read_text("/sys/devices/system/cpu/online", buf, sizeof buf) != 0 ||
        (n = parse_cpu_list(buf, cpus, MAX_CPUS)) <= 0) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "cannot read the online CPUs from /sys/devices/system/cpu/online");
        free(cpus);
        return DM_EOS;
    }
    s->n_rings = n;
    s->rings = calloc((size_t)n, sizeof *s->rings);
    s->fds = malloc((size_t)n * (size_t)s->n_kinds * sizeof *s->fds);
    s->heap = malloc((size_t)n * sizeof *s->heap);
    if (s->rings == NULL || s->fds == NULL || s->heap == NULL) {
        s->n_rings = 0;
        free(cpus);
        return DM_ENOMEM;
    }
    for (int i = 0; i < n * s->n_kinds; i++)
        s->fds[i] = -1;
    for (int r = 0; r < n; r++)
        s->rings[r].fd = -1;
    bytes = ring_bytes(n);
    for (int r = 0; r < n && rc == 0; r++) {
        struct epoll_event ev;

        rc = open_cpu(src, s, r, cpus[r], bytes, &kernel_filter);
        if (rc != 0)
            break;
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.u32 = (uint32_t)r;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->rings[r].fd, &ev) != 0) {
            snprintf(src->errmsg, sizeof src->errmsg, "epoll_ctl: %s", strerror(errno));
            rc = DM_EOS;
        }
    }
    free(cpus);
    return rc;
}

/* Enable completions before starts, and disable starts before completions:
 * then every start diskmon sees has its completion watched too, and the
 * edges of the capture leave no false "unmatched" starts. kinds[0] is the
 * start event; the others are completions and bookkeeping. */
static void enable_kind(struct linux_source *s, int k, int enable)
{
    for (int r = 0; r < s->n_rings; r++) {
        int fd = s->fds[r * s->n_kinds + k];

        if (fd >= 0)
            ioctl(fd, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    }
}

static void enable_all(struct linux_source *s, int enable)
{
    if (!enable)
        enable_kind(s, 0, 0);
    for (int k = 1; k < s->n_kinds; k++)
        enable_kind(s, k, enable);
    if (enable)
        enable_kind(s, 0, 1);
}

static int linux_open(struct dm_source *src, const struct dm_options *opt)
{
    struct linux_source *s = calloc(1, sizeof *s);
    int rc;

    src->impl = s;
    src->is_live = 1;
    if (s == NULL)
        return DM_ENOMEM;
    s->epfd = -1;
    s->stopfd = -1;
    s->queue = opt->queue;
    rc = dm_tracefs_locate(s->tracefs, sizeof s->tracefs, geteuid() == 0,
                           src->errmsg, sizeof src->errmsg);
    if (rc == 0)
        rc = choose_tracepoints(src, s);
    if (rc == 0)
        rc = build_filter(s, opt, src->errmsg, sizeof src->errmsg);
    if (rc != 0)
        return rc;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->epfd < 0 || s->stopfd < 0) {
        snprintf(src->errmsg, sizeof src->errmsg, "epoll/eventfd: %s", strerror(errno));
        return DM_EOS;
    }
    {
        struct epoll_event ev;

        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.u32 = UINT32_MAX;
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->stopfd, &ev) != 0) {
            snprintf(src->errmsg, sizeof src->errmsg, "epoll_ctl: %s", strerror(errno));
            return DM_EOS;
        }
    }
    rc = open_rings(src, s);
    if (rc != 0)
        return rc;
    s->scratch = malloc(DM_PERF_RECORD_MAX);
    if (s->scratch == NULL || dm_pairing_init(&s->pairs, PAIR_SLOTS) != 0)
        return DM_ENOMEM;

    s->t0 = mono_ns();
    src->start_wall_ns = dm_wall_ns();
    /* A completion without a start in the first start-TTL may belong to a
     * request issued before the capture: not a loss. */
    s->pairs.grace_until_ns = s->t0 + s->pairs.start_ttl_ns;
    enable_all(s, 1);
    return 0;
}

/* ---- reading ------------------------------------------------------------- */

/* Decode records of ring r until one block sample is in r->cur (returns 1)
 * or the ring's snapshot is exhausted (0). Lost and malformed records are
 * counted on the way. */
static int fetch(struct linux_source *s, struct ring *r)
{
    for (;;) {
        const uint8_t *rec;
        size_t len;
        int rc = dm_perf_ring_next(r->data, r->data_size, r->tail, r->head,
                                   s->scratch, &rec, &len);

        if (rc == 0)
            return 0;
        if (rc < 0) {
            /* Positions make no sense: skip what is there. */
            s->malformed++;
            r->tail = r->head;
            return 0;
        }
        r->tail += len;
        rc = dm_blk_decode(&s->dec, rec, len, &r->cur, &s->kernel_lost);
        if (rc == DM_BLK_REC_SAMPLE) {
            s->received[r->cur.kind]++;
            /* The table slot is a likely cache miss (a random key); start
             * loading it now, the heap work for other rings comes first. */
            dm_pairing_prefetch(&s->pairs, r->cur.dev, r->cur.sector);
            return 1;
        }
        if (rc < 0)
            s->malformed++;
    }
}

static int heap_less(const struct linux_source *s, int a, int b)
{
    return s->rings[s->heap[a]].cur.time_ns < s->rings[s->heap[b]].cur.time_ns;
}

static void heap_swap(struct linux_source *s, int a, int b)
{
    int t = s->heap[a];

    s->heap[a] = s->heap[b];
    s->heap[b] = t;
}

static void heap_down(struct linux_source *s, int i)
{
    for (;;) {
        int l = 2 * i + 1, m = i;

        if (l < s->heap_n && heap_less(s, l, m))
            m = l;
        if (l + 1 < s->heap_n && heap_less(s, l + 1, m))
            m = l + 1;
        if (m == i)
            return;
        heap_swap(s, i, m);
        i = m;
    }
}

static void heap_push(struct linux_source *s, int ring)
{
    int i = s->heap_n++;

    s->heap[i] = ring;
    while (i > 0 && heap_less(s, i, (i - 1) / 2)) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static int emit(struct linux_source *s, struct dm_sink *sink,
                const struct dm_pair_entry *start, uint64_t done_ns,
                uint64_t sector, uint32_t nr_sector)
{
    struct dm_event *ev = &s->ev;
    uint64_t bytes = (uint64_t)nr_sector * SECTOR_BYTES;
    size_t n;

    ev->time_ns = done_ns > s->t0 ? done_ns - s->t0 : 0;
    ev->duration_ns = done_ns > start->time_ns ? done_ns - start->time_ns : 0;
    ev->flags = DM_EV_HAS_PID | DM_EV_HAS_TID;
    ev->queue_ns = 0;
    if (s->queue && start->issue_ns != 0) {
        ev->queue_ns = start->issue_ns > start->time_ns ? start->issue_ns - start->time_ns
                                                        : 0;
        ev->flags |= DM_EV_HAS_QUEUE;
    }
    /* Flush keys are normalised to UINT64_MAX in legacy mode: no offset. */
    ev->byte_offset = sector == UINT64_MAX ? 0 : sector * SECTOR_BYTES;
    /* A discard can exceed 4 GiB; the field is 32-bit. */
    ev->transfer_size = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
    ev->disk = start->dev;
    /* Cache names are NUL-terminated within DM_DISK_NAME_MAX. */
    memcpy(ev->disk_name, disk_name(s, start->dev), sizeof ev->disk_name);
    ev->pid = start->pid;
    ev->tid = start->tid;
    ev->request = start->request;
    n = 0;
    if (start->has_comm) {
        while (n < sizeof start->comm && start->comm[n] != '\0')
            n++;
        memcpy(ev->process, start->comm, n);
    }
    ev->process[n] = '\0';
    if (n > 0)
        ev->flags |= DM_EV_HAS_PROCESS;
    return dm_sink_emit(sink, ev);
}

/* The comm of a process for tracepoints without a comm field (old kernels):
 * /proc/PID/comm. Only on that path: one read per start. */
static void proc_comm(uint32_t pid, char *comm, size_t cap)
{
    char path[32], buf[64];
    size_t n;

    snprintf(path, sizeof path, "/proc/%u/comm", (unsigned)pid);
    if (read_text(path, buf, sizeof buf) != 0) {
        comm[0] = '\0';
        return;
    }
    n = strcspn(buf, "\n");
    /* comm is NUL-padded to cap, like the tracepoint field. */
    memset(comm, 0, cap);
    memcpy(comm, buf, n < cap ? n : cap);
}

static void start_entry(const struct dm_blk_sample *smp, uint64_t sector,
                        struct dm_pair_entry *e)
{
    memset(e, 0, sizeof *e);
    e->dev = smp->dev;
    e->sector = sector;
    e->time_ns = smp->time_ns;
    e->pid = smp->pid;
    e->tid = smp->tid;
    e->nr_sector = smp->nr_sector;
    e->request = smp->request;
    e->has_comm = 1;
    if (smp->has_comm)
        memcpy(e->comm, smp->comm, sizeof e->comm);
    else
        proc_comm(smp->pid, e->comm, sizeof e->comm);
}

/* One block sample, in time order. Returns dm_sink_emit's result. */
static int process(struct linux_source *s, struct dm_sink *sink,
                   const struct dm_blk_sample *smp)
{
    struct dm_pair_entry e, other;
    /* In legacy mode the flush machinery's own request is paired: it is
     * issued at sector 0 and completes at sector -1 (seen on 6.18), so
     * flush-op keys are made equal. */
    uint64_t sector = s->legacy && smp->op == 'F' ? UINT64_MAX : smp->sector;

    switch (smp->kind) {
    case DM_BLK_IO_START:
    case DM_BLK_RQ_INSERT:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        start_entry(smp, sector, &e);
        if (dm_pairing_start(&s->pairs, &e, &other) == DM_PAIR_MATCHED)
            return emit(s, sink, &e, other.time_ns, sector, other.nr_sector);
        return 0;
    case DM_BLK_RQ_ISSUE:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        if (!s->legacy) {
            /* --queue: the dispatch time. For an empty flush the request
             * dispatched is the flush machinery's own (rwbs FF, sector 0),
             * which annotates the flush request waiting at sector 0. */
            dm_pairing_issue(&s->pairs, smp->dev, sector, smp->time_ns);
            return 0;
        }
        if (dm_pairing_issue(&s->pairs, smp->dev, sector, smp->time_ns))
            return 0; /* inserted earlier (--queue), or a requeue */
        start_entry(smp, sector, &e);
        e.issue_ns = smp->time_ns;
        if (dm_pairing_start(&s->pairs, &e, &other) == DM_PAIR_MATCHED)
            return emit(s, sink, &e, other.time_ns, sector, other.nr_sector);
        return 0;
    case DM_BLK_RQ_COMPLETE:
        if (smp->request == DM_BLK_REQ_OTHER)
            return 0;
        /* Modern mode: a flush-op request is the flush machinery's own
         * (blk-flush.c) and never has a block_io_start; the request that
         * asked for the flush completes on its own. */
        if (!s->legacy && smp->op == 'F')
            return 0;
        memset(&e, 0, sizeof e);
        e.dev = smp->dev;
        e.sector = sector;
        e.time_ns = smp->time_ns;
        e.nr_sector = smp->nr_sector;
        /* An empty non-flush completion may have no start of its own: the
         * second completion of a write with a flush sequence, or (legacy)
         * the never-issued request behind an empty flush. */
        e.quiet = smp->nr_sector == 0 && smp->op != 'F';
        if (dm_pairing_done(&s->pairs, &e, 1, &other) == DM_PAIR_MATCHED)
            return emit(s, sink, &other, smp->time_ns, sector, smp->nr_sector);
        return 0;
    case DM_BLK_RQ_MERGE:
        dm_pairing_merge(&s->pairs, smp->dev, sector, smp->time_ns);
        return 0;
    case DM_BLK_BIO_FRONTMERGE:
        /* The bio [sector, sector + nr) joined the front of the request
         * that began at sector + nr. */
        dm_pairing_move(&s->pairs, smp->dev, smp->sector + smp->nr_sector,
                        smp->sector, smp->time_ns);
        return 0;
    default:
        return 0;
    }
}

static void release_all(struct linux_source *s)
{
    for (int r = 0; r < s->n_rings; r++)
        __atomic_store_n(&s->rings[r].meta->data_tail, s->rings[r].tail,
                         __ATOMIC_RELEASE);
}

/*
 * Read every ring up to the head seen at the start, merging by time. With
 * keep_going, DM_ESTOPPED from the sink does not end the pass (the final
 * drain after stop()). Returns 0 or DM_ESTOPPED.
 */
static int drain(struct linux_source *s, struct dm_sink *sink, int keep_going)
{
    int stopped = 0, since_release = 0;

    s->heap_n = 0;
    for (int r = 0; r < s->n_rings; r++) {
        struct ring *ring = &s->rings[r];

        /* data_head is written by the kernel: acquire, so the records
         * before it are visible (perf_event_open(2), "data_head"). */
        ring->head = __atomic_load_n(&ring->meta->data_head, __ATOMIC_ACQUIRE);
        if (fetch(s, ring))
            heap_push(s, r);
    }
    while (s->heap_n > 0) {
        struct ring *ring = &s->rings[s->heap[0]];

        if (process(s, sink, &ring->cur) == DM_ESTOPPED) {
            stopped = 1;
            if (!keep_going)
                break;
        }
        if (fetch(s, ring)) {
            heap_down(s, 0);
        } else {
            s->heap[0] = s->heap[--s->heap_n];
            heap_down(s, 0);
        }
        if (++since_release == RELEASE_EVERY) {
            release_all(s);
            since_release = 0;
        }
    }
    release_all(s);
    return stopped ? DM_ESTOPPED : 0;
}

/*
 * Samples the kernel generated that never reached diskmon: each event's
 * count (read() on its fd) against the samples read. This covers the
 * samples a PERF_RECORD_LOST reported, those whose LOST record was never
 * written (the capture ended first), and those the kernel drops without
 * any report: under heavy load on 6.18 a few in 100,000 block_rq_complete
 * or block_io_start samples go missing that way (perf record shows the
 * same). Duplicated samples (see pairing.h) are taken off first. Returns 0
 * when no count could be read. *requests gets the number of requests the
 * kernel saw start or complete, an upper bound for the requests lost.
 */
static uint64_t missing_samples(struct linux_source *s, uint64_t *requests)
{
    uint64_t counted[DM_BLK_KIND_COUNT] = {0}, missing = 0;

    for (int r = 0; r < s->n_rings; r++) {
        for (int k = 0; k < s->n_kinds; k++) {
            int fd = s->fds[r * s->n_kinds + k];
            uint64_t value;

            if (fd >= 0 && read(fd, &value, sizeof value) == (ssize_t)sizeof value)
                counted[s->kinds[k]] += value;
        }
    }
    memcpy(s->counted, counted, sizeof s->counted);
    for (int k = 0; k < s->n_kinds; k++) {
        enum dm_blk_kind kind = s->kinds[k];
        uint64_t got = s->received[kind];

        if (k == 0)
            got = got > s->pairs.counts.duplicates ? got - s->pairs.counts.duplicates : 0;
        if (counted[kind] > got)
            missing += counted[kind] - got;
        /* Requests seen by the kernel: starts or completions, the larger. */
        if ((kind == DM_BLK_IO_START || kind == DM_BLK_RQ_ISSUE ||
             kind == DM_BLK_RQ_COMPLETE) && counted[kind] > *requests)
            *requests = counted[kind];
    }
    return missing;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void report(struct linux_source *s, uint64_t missing)
{
    const struct dm_pair_counts *c = &s->pairs.counts;
    uint64_t unmatched = c->expired_starts + c->expired_dones + c->full;
    uint64_t unreported = missing > s->kernel_lost ? missing - s->kernel_lost : 0;

    if (s->kernel_lost == 0 && missing == 0 && unmatched == 0)
        return;
    /* Seen on a Firecracker guest (virtio-blk, kernel 6.18): tracepoints
     * that fire in hard interrupt context are counted but never sampled, so
     * no completion of such a device arrives at all (perf record shows the
     * same). Say so plainly rather than only as a loss count. */
    if (s->counted[DM_BLK_RQ_COMPLETE] > 0 && s->received[DM_BLK_RQ_COMPLETE] == 0)
        fprintf(stderr,
                "diskmon: the kernel counted %" PRIu64 " request completions but "
                "delivered none of them to perf: on this system completions in "
                "interrupt context cannot be sampled, so none of those requests "
                "could be shown\n",
                s->counted[DM_BLK_RQ_COMPLETE]);
    fprintf(stderr,
            "diskmon: block tracepoints: %" PRIu64 " samples lost (%" PRIu64
            " reported by the kernel as lost in its buffers, %" PRIu64 " dropped "
            "unreported); %" PRIu64 " requests unmatched (%" PRIu64 " starts "
            "without a completion, %" PRIu64 " completions without a start, %" PRIu64
            " dropped with the pairing table full)\n",
            max_u64(missing, s->kernel_lost), s->kernel_lost, unreported, unmatched,
            c->expired_starts, c->expired_dones, c->full);
}

static int linux_run(struct dm_source *src, struct dm_sink *sink)
{
    struct linux_source *s = src->impl;
    uint64_t last_expire = mono_ns(), missing, unmatched, requests = 0;
    int rc = 0;

    while (!dm_atomic_load_int(&s->stop) && !dm_sink_stopping(sink)) {
        struct epoll_event evs[8];
        uint64_t now;
        int n = epoll_wait(s->epfd, evs, 8, EPOLL_TIMEOUT_MS);

        if (n < 0 && errno != EINTR) {
            snprintf(src->errmsg, sizeof src->errmsg, "epoll_wait: %s", strerror(errno));
            rc = DM_EOS;
            break;
        }
        if (dm_atomic_load_int(&s->stop))
            break;
        if (drain(s, sink, 0) == DM_ESTOPPED)
            break;
        now = mono_ns();
        if (now - last_expire >= EXPIRE_EVERY_NS) {
            dm_pairing_expire(&s->pairs, now);
            last_expire = now;
        }
    }
    /* Stop the kernel side, then show what it had already recorded. */
    enable_all(s, 0);
    drain(s, sink, 1);
    dm_pairing_finish(&s->pairs);
    missing = max_u64(missing_samples(s, &requests), s->kernel_lost);
    /* Each lost sample costs at most one request, and leaves that request's
     * other half unmatched: the two counts mostly describe the same
     * requests, so take the larger. When both halves of requests are lost
     * this overcounts; it never exceeds the requests the kernel saw. */
    unmatched = s->pairs.counts.expired_starts + s->pairs.counts.expired_dones;
    src->lost_events = max_u64(missing, unmatched) + s->pairs.counts.full;
    if (requests > 0 && src->lost_events > requests)
        src->lost_events = requests;
    src->malformed = s->malformed;
    report(s, missing);
    return rc;
}

static void linux_stop(struct dm_source *src)
{
    struct linux_source *s = src->impl;
    uint64_t one = 1;

    if (s == NULL)
        return;
    dm_atomic_store_int(&s->stop, 1);
    if (s->stopfd >= 0 && write(s->stopfd, &one, sizeof one) < 0) {
        /* The counter is already nonzero: run() wakes up anyway. */
    }
}

static void linux_close(struct dm_source *src)
{
    struct linux_source *s = src->impl;

    if (s == NULL)
        return;
    if (s->fds != NULL) {
        for (int i = 0; i < s->n_rings * s->n_kinds; i++)
            if (s->fds[i] >= 0)
                ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    }
    if (s->rings != NULL) {
        for (int r = 0; r < s->n_rings; r++)
            if (s->rings[r].base != NULL)
                munmap(s->rings[r].base, s->rings[r].map_len);
    }
    if (s->fds != NULL) {
        for (int i = 0; i < s->n_rings * s->n_kinds; i++)
            if (s->fds[i] >= 0)
                close(s->fds[i]);
    }
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->stopfd >= 0)
        close(s->stopfd);
    dm_pairing_free(&s->pairs);
    free(s->rings);
    free(s->fds);
    free(s->heap);
    free(s->scratch);
    free(s);
    src->impl = NULL;
}

const struct dm_source_ops dm_linux_source = {
    "linux-perf", linux_open, linux_run, linux_stop, linux_close,
};

const struct dm_source_ops *const dm_live_source = &dm_linux_source;
