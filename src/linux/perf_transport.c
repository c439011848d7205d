/*
 * perf_transport.c - block tracepoints through perf_event_open: the
 * fallback transport (transport.h).
 *
 * Each CPU has one ring: the first tracepoint's fd is mmap'd, the others are
 * redirected into it with PERF_EVENT_IOC_SET_OUTPUT. wait() sleeps in
 * epoll_wait on the rings' fds and an eventfd that wake() writes; the kernel
 * wakes it when a ring is a quarter full (wakeup_watermark) and the timeout
 * bounds how long a quiet ring waits.
 *
 * Losses: PERF_RECORD_LOST records count samples the kernel could not
 * write; at the end each event's own count (read() on its fd) is compared
 * with the samples that arrived, which also catches samples the kernel
 * dropped without any record (it happens under heavy load on 6.18, with
 * perf record too, and for nearly all completions of a virtio disk on a
 * Firecracker guest: docs/linux.md §1). The kernel can also skip a sample
 * before counting it (a softirq that interrupts a task running a BPF
 * tracing program: docs/linux-live.md, "Perf backend losses"); no count
 * shows those, and the pairing finds them as completions that never came.
 */
#include <errno.h>
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

#include "diskmon.h"
#include "linux/cgroup_ids.h"
#include "linux/perf_ring.h"
#include "linux/tracefs.h"
#include "linux/transport.h"
#include "platform/platform.h"

struct ring {
    int fd;                        /* the fd whose buffer this is */
    void *base;                    /* mmap: perf_event_mmap_page + data */
    size_t map_len;
    struct perf_event_mmap_page *meta;
    const uint8_t *data;
    uint64_t data_size;
    uint64_t tail, head;           /* our read position; the kernel's, as seen */
};

struct perf_transport {
    struct dm_blk_setup s;
    const struct dm_blk_decoder *dec;
    struct ring *rings;
    int *fds;                      /* n_cpus * n_kinds, -1 when not open */
    int epfd, stopfd;
    uint8_t *scratch;              /* DM_PERF_RECORD_MAX, for wrapped records */
    uint64_t kernel_lost;          /* PERF_RECORD_LOST / LOST_SAMPLES counts */
    uint64_t malformed;
    uint64_t received[DM_BLK_KIND_COUNT]; /* samples read, per tracepoint */
    int with_cgroup;               /* PERF_SAMPLE_CGROUP is on */
    struct dm_cgroup_ids ids;      /* its ids to paths */
};

static int perf_event_open(struct perf_event_attr *attr, int cpu)
{
    return (int)syscall(SYS_perf_event_open, attr, -1, cpu, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

static int open_cpu(struct perf_transport *p, int r, char *err, size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    struct ring *ring = &p->rings[r];
    int cpu = p->s.cpus[r];

    for (int k = 0; k < p->s.n_kinds; k++) {
        struct perf_event_attr attr;
        int fd;

        memset(&attr, 0, sizeof attr);
        attr.type = PERF_TYPE_TRACEPOINT;
        attr.size = sizeof attr;
        attr.config = p->dec->layouts[p->s.kinds[k]].id;
        attr.sample_period = 1;
        attr.sample_type = dm_perf_sample_type(p->with_cgroup);
        attr.disabled = 1;
        attr.watermark = 1;
        attr.wakeup_watermark = (uint32_t)(p->s.ring_bytes / 4);
        attr.use_clockid = 1;
        attr.clockid = CLOCK_MONOTONIC;
        fd = perf_event_open(&attr, cpu);
        if (fd < 0 && errno == EINVAL && p->with_cgroup && r == 0 && k == 0) {
            /* Before 5.7 the kernel refuses the unknown sample bit: the
             * cgroup is then read from /proc (requests.h). */
            p->with_cgroup = 0;
            snprintf(p->s.cg_why, p->s.cg_why_len,
                     "the kernel refused PERF_SAMPLE_CGROUP (Linux 5.7+)");
            attr.sample_type = dm_perf_sample_type(0);
            fd = perf_event_open(&attr, cpu);
        }
        if (fd < 0) {
            int e = errno;

            snprintf(err, errlen, "cannot open tracepoint block:%s on CPU %d: %s%s%s",
                     dm_blk_event_names[p->s.kinds[k]], cpu, strerror(e),
                     dm_err_from_errno(e) == DM_EACCESS ? ". "
                     : e == EMFILE || e == ENFILE
                         ? ": raise the open files limit (ulimit -n)"
                         : "",
                     dm_err_from_errno(e) == DM_EACCESS ? dm_linux_privilege_hint() : "");
            return dm_err_from_errno(e);
        }
        p->fds[r * p->s.n_kinds + k] = fd;
        /* The core filter still checks -d, and requests.c the op, so a
         * refused kernel filter only costs speed. */
        if (p->s.filters[k][0] != '\0')
            (void)ioctl(fd, PERF_EVENT_IOC_SET_FILTER, p->s.filters[k]);
        if (k == 0) {
            uint64_t len = p->s.ring_bytes;

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
                    snprintf(err, errlen, "cannot map the perf buffer of CPU %d: %s",
                             cpu, strerror(e));
                    return dm_err_from_errno(e);
                }
                len /= 2;
            }
            ring->fd = fd;
            ring->meta = ring->base;
            ring->data = (const uint8_t *)ring->base + page;
            ring->data_size = len;
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->fd) != 0) {
            snprintf(err, errlen, "cannot redirect block:%s into CPU %d's buffer: %s",
                     dm_blk_event_names[p->s.kinds[k]], cpu, strerror(errno));
            return DM_EOS;
        }
    }
    return 0;
}

static void perf_close(void *t)
{
    struct perf_transport *p = t;
    int n;

    if (p == NULL)
        return;
    n = p->s.n_cpus * p->s.n_kinds;
    if (p->fds != NULL)
        for (int i = 0; i < n; i++)
            if (p->fds[i] >= 0)
                ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    if (p->rings != NULL)
        for (int r = 0; r < p->s.n_cpus; r++)
            if (p->rings[r].base != NULL)
                munmap(p->rings[r].base, p->rings[r].map_len);
    if (p->fds != NULL)
        for (int i = 0; i < n; i++)
            if (p->fds[i] >= 0)
                close(p->fds[i]);
    if (p->epfd >= 0)
        close(p->epfd);
    if (p->stopfd >= 0)
        close(p->stopfd);
    free(p->rings);
    free(p->fds);
    free(p->scratch);
    dm_cgroup_ids_free(&p->ids);
    free(p);
}

/* PERF_SAMPLE_CGROUP's ids mapped through the cgroup2 mount, when they are
 * v2 ids (cgroup_ids.h); else the reason in cg_why. Not asked for when
 * nothing reads cgroups. */
static int open_cgroup_ids(struct perf_transport *p)
{
    enum { MOUNTS_MAX = 1 << 16 };
    char *mounts, self[4096];
    int rc = DM_ENOMEM;

    p->with_cgroup = 0;
    if (!p->s.want_cgroups)
        return 0;
    mounts = malloc(MOUNTS_MAX);
    if (mounts != NULL) {
        if (dm_read_text("/proc/self/mounts", mounts, MOUNTS_MAX) < 0)
            mounts[0] = '\0';
        if (dm_read_text("/proc/self/cgroup", self, sizeof self) < 0)
            self[0] = '\0';
        rc = dm_cgroup_ids_open(&p->ids, p->s.cgroups, mounts, self, p->s.cg_why,
                                p->s.cg_why_len);
        free(mounts);
    }
    p->with_cgroup = rc == 0;
    return rc == DM_ENOMEM ? rc : 0;
}

static int add_epoll(int epfd, int fd, uint32_t tag)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.u32 = tag;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int perf_open(void **out, const struct dm_blk_setup *s, char *err, size_t errlen)
{
    struct perf_transport *p = calloc(1, sizeof *p);
    int n, rc = 0;

    *out = NULL;
    if (p == NULL)
        return DM_ENOMEM;
    p->s = *s;
    p->dec = s->dec;
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    n = s->n_cpus * s->n_kinds;
    p->rings = calloc((size_t)s->n_cpus, sizeof *p->rings);
    p->fds = malloc((size_t)n * sizeof *p->fds);
    p->scratch = malloc(DM_PERF_RECORD_MAX);
    if (p->rings == NULL || p->fds == NULL || p->scratch == NULL) {
        perf_close(p);
        return DM_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        p->fds[i] = -1;
    if (open_cgroup_ids(p) != 0) {
        perf_close(p);
        return DM_ENOMEM;
    }
    if (p->epfd < 0 || p->stopfd < 0 || add_epoll(p->epfd, p->stopfd, UINT32_MAX) != 0) {
        snprintf(err, errlen, "epoll/eventfd: %s", strerror(errno));
        perf_close(p);
        return DM_EOS;
    }
    for (int r = 0; r < s->n_cpus && rc == 0; r++) {
        p->rings[r].fd = -1;
        rc = open_cpu(p, r, err, errlen);
        if (rc == 0 && add_epoll(p->epfd, p->rings[r].fd, (uint32_t)r) != 0) {
            snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
            rc = DM_EOS;
        }
    }
    if (rc != 0) {
        perf_close(p);
        return rc;
    }
    *s->cg_source = !s->want_cgroups ? DM_CGROUPS_NONE
                    : p->with_cgroup ? DM_CGROUPS_SAMPLE
                                     : DM_CGROUPS_PROC;
    if (s->info != NULL && p->with_cgroup)
        dm_note(s->info, "cgroups: PERF_SAMPLE_CGROUP ids, mapped through %s "
                "(%" PRIu64 " cgroups)\n", p->ids.mount, (uint64_t)p->ids.used);
    *out = p;
    return 0;
}

static void enable_kind(struct perf_transport *p, int k, int on)
{
    for (int r = 0; r < p->s.n_cpus; r++) {
        int fd = p->fds[r * p->s.n_kinds + k];

        if (fd >= 0)
            ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    }
}

static void perf_enable(void *t, int on)
{
    struct perf_transport *p = t;

    if (!on)
        enable_kind(p, 0, 0);
    for (int k = 1; k < p->s.n_kinds; k++)
        enable_kind(p, k, on);
    if (on)
        enable_kind(p, 0, 1);
}

/* Every event off but block_rq_complete's (transport.h). */
static void perf_stop_starts(void *t)
{
    struct perf_transport *p = t;

    for (int k = 0; k < p->s.n_kinds; k++)
        if (p->s.kinds[k] != DM_BLK_RQ_COMPLETE)
            enable_kind(p, k, 0);
}

/* The longest a perf reader sleeps: the kernel wakes it only at a quarter
 * full ring (wakeup_watermark, fixed at open), so a quiet disk's events are
 * shown by this timeout. */
#define PERF_QUIET_MS 100

static int perf_wait(void *t, int timeout_ms, int idle, char *err, size_t errlen)
{
    struct perf_transport *p = t;
    struct epoll_event evs[8];

    (void)idle;
    if (timeout_ms < 0 || timeout_ms > PERF_QUIET_MS)
        timeout_ms = PERF_QUIET_MS;
    if (epoll_wait(p->epfd, evs, 8, timeout_ms) < 0 && errno != EINTR) {
        snprintf(err, errlen, "epoll_wait: %s", strerror(errno));
        return DM_EOS;
    }
    return 0;
}

static int perf_fill(void *t)
{
    struct perf_transport *p = t;

    /* data_head is written by the kernel: acquire, so the records before
     * it are visible (perf_event_open(2), "data_head"). */
    for (int r = 0; r < p->s.n_cpus; r++)
        p->rings[r].head = __atomic_load_n(&p->rings[r].meta->data_head,
                                           __ATOMIC_ACQUIRE);
    return 0;
}

static int perf_next(void *t, int cpu, struct dm_blk_sample *out)
{
    struct perf_transport *p = t;
    struct ring *r = &p->rings[cpu];

    for (;;) {
        const uint8_t *rec;
        uint64_t cgroup_id;
        size_t len;
        int rc = dm_perf_ring_next(r->data, r->data_size, r->tail, r->head,
                                   p->scratch, &rec, &len);

        if (rc == 0)
            return 0;
        if (rc < 0) {
            /* Positions make no sense: skip what is there. */
            p->malformed++;
            r->tail = r->head;
            return 0;
        }
        r->tail += len;
        rc = dm_perf_decode_cg(p->dec, rec, len, p->with_cgroup, out, &p->kernel_lost,
                               &cgroup_id);
        if (rc == DM_PERF_REC_SAMPLE) {
            p->received[out->kind]++;
            /* Only a start's task issued the request (requests.h): a
             * completion's is whatever the interrupt found running. */
            if (p->with_cgroup && (out->kind == DM_BLK_IO_START ||
                                   out->kind == DM_BLK_RQ_INSERT ||
                                   out->kind == DM_BLK_RQ_ISSUE)) {
                out->cgroup = dm_cgroup_ids_name(&p->ids, cgroup_id);
            }
            return 1;
        }
        if (rc < 0)
            p->malformed++;
    }
}

static void perf_release(void *t)
{
    struct perf_transport *p = t;

    /* data_tail tells the kernel the space before it is free: release,
     * after our reads of it (perf_event_open(2), "data_tail"). Samples
     * handed out were copied, so nothing points into the ring. */
    for (int r = 0; r < p->s.n_cpus; r++)
        __atomic_store_n(&p->rings[r].meta->data_tail, p->rings[r].tail,
                         __ATOMIC_RELEASE);
}

static void perf_wake(void *t)
{
    struct perf_transport *p = t;
    uint64_t one = 1;

    if (p->stopfd >= 0 && write(p->stopfd, &one, sizeof one) < 0) {
        /* The counter is already nonzero: wait() returns anyway. */
    }
}

/*
 * Samples the kernel counted that never reached diskmon: each event's count
 * (read() on its fd) against the samples read. This covers the samples a
 * PERF_RECORD_LOST reported, those whose LOST record was never written, and
 * those the kernel drops without any report after counting them.
 */
static void perf_losses(void *t, struct dm_blk_losses *l, uint64_t *malformed)
{
    struct perf_transport *p = t;
    uint64_t counted[DM_BLK_KIND_COUNT] = {0}, missing = 0;

    for (int r = 0; r < p->s.n_cpus; r++) {
        for (int k = 0; k < p->s.n_kinds; k++) {
            int fd = p->fds[r * p->s.n_kinds + k];
            uint64_t value;

            if (fd >= 0 && read(fd, &value, sizeof value) == (ssize_t)sizeof value)
                counted[p->s.kinds[k]] += value;
        }
    }
    for (int k = 0; k < p->s.n_kinds; k++) {
        enum dm_blk_kind kind = p->s.kinds[k];

        if (counted[kind] > p->received[kind])
            missing += counted[kind] - p->received[kind];
    }
    l->kernel_dropped = p->kernel_lost;
    l->undelivered = missing > p->kernel_lost ? missing - p->kernel_lost : 0;
    *malformed = p->malformed;
}

/* One ring, so one stream of the merge, per CPU. */
static int perf_streams(void *t)
{
    const struct perf_transport *p = t;

    return p->s.n_cpus;
}

const struct dm_blk_transport_ops dm_perf_transport = {
    "perf",      perf_open,    perf_enable, perf_wait,    perf_fill, perf_next,
    perf_release, perf_wake,   perf_losses, perf_streams, perf_close, perf_stop_starts,
};
