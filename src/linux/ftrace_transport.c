/*
 * ftrace_transport.c - block tracepoints through a private tracefs
 * instance: the default transport (transport.h).
 *
 * open() makes instances/diskmon-PID under tracefs and sets, in it only
 * (the top-level tracing settings and other instances are never touched):
 *   tracing_on 0               until enable()
 *   options/overwrite 0        a full ring drops new events and counts them
 *                              ("dropped events" in per_cpu/cpuN/stats)
 *                              instead of overwriting unread ones
 *   trace_clock mono           CLOCK_MONOTONIC, like the perf transport
 *   options/record-tgid 1      the kernel keeps each traced thread's
 *                              process id (saved_tgids), for threads that
 *                              have exited before the reader sees them
 *   buffer_size_kb             the per-CPU ring, sized like the perf rings
 *   buffer_percent 25          poll() wakes the reader at a quarter full
 *                              under load; 0 (any data) while it is idle,
 *                              so a quiet disk's first event wakes it
 *   events/block/NAME/filter   -d as "dev == N || ..."
 *   events/block/NAME/enable   1 for each tracepoint
 * Each CPU's per_cpu/cpuN/trace_pipe_raw is read without blocking, one
 * whole sub-buffer per read(2) (a partly filled one is returned when the
 * reader catches up), after poll(2) with a timeout of at most 100 ms. The
 * sub-buffers are parsed by ftrace_page.c. Sub-buffers the merge has not
 * taken yet (cpu_merge.h holds back what another CPU could still precede)
 * stay in the CPU's buffer for the next pass. (The ring's mmap interface,
 * 6.10+, would save the copy; the read path works on every kernel with
 * instances and costs one system call per 4 KiB.)
 *
 * The instance is removed in close(), which every exit path reaches:
 * normal end, -n/-t, every signal that would end the process and can be
 * caught (platform.h: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, ...; the
 * pipeline stops and closes the source), a closed output pipe, and an
 * error after open. A diskmon
 * killed with SIGKILL leaves its instance; the next diskmon (or
 * diskmon --cleanup) removes instances whose process is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/cpu_merge.h"
#include "linux/ftrace_page.h"
#include "linux/tracefs.h"
#include "linux/transport.h"
#include "platform/platform.h"

#define INSTANCE_PREFIX "diskmon-"
#define PASS_PAGES 64              /* sub-buffers read per CPU per pass */
#define TGID_CACHE 256             /* thread -> process ids remembered */
#define BUFFER_PERCENT "25"
#define RMDIR_TRIES 50             /* x 10 ms: fds of a reader still closing */

struct cpu_reader {
    int fd;                        /* per_cpu/cpuN/trace_pipe_raw */
    uint8_t *buf;                  /* PASS_PAGES sub-buffers */
    int n_pages, page;             /* held in buf; the one being parsed */
    int full;                      /* buf was filled: the kernel may have more */
    int page_open;
    struct dm_ftrace_page pg;
};

struct tgid_slot {
    uint32_t tid, tgid;
    char comm[DM_BLK_COMM_MAX]; /* the thread's name when looked up */
};

struct ftrace_transport {
    struct dm_blk_setup s;
    const struct dm_blk_decoder *dec;
    char dir[192];                 /* the instance */
    int made;                      /* dir exists and is ours */
    int tgid_on;                   /* options/record-tgid was set */
    int percent_set;               /* buffer_percent exists (5.x+) */
    int idle_mode;                 /* buffer_percent is 0 (ftrace_wait) */
    struct dm_ftrace_layout layout;
    struct cpu_reader *cpus;
    struct pollfd *pfds;           /* n_cpus + the wake eventfd */
    int wakefd;
    struct dm_ftrace_counts counts;
    uint64_t undecodable;          /* records of no known event, or short */
    struct tgid_slot tgids[TGID_CACHE];
};

/* Write value into DIR/file. Returns 0 or -errno. */
static int put(const char *dir, const char *file, const char *value)
{
    char path[320];
    size_t len = strlen(value);
    ssize_t n;
    int fd, e;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = write(fd, value, len);
    e = errno;
    close(fd);
    return n == (ssize_t)len ? 0 : n < 0 ? -e : -EIO;
}

/* Read DIR/file (a small text file) into buf. Returns its length or -errno. */
static long get(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[320];
    long n;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    n = dm_read_text(path, buf, cap);
    return n < 0 ? -errno : n;
}

/* rmdir, retrying briefly while the kernel still holds a file open. */
static int remove_instance(const char *dir)
{
    for (int i = 0; i < RMDIR_TRIES; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        usleep(10000);
    }
    return -errno;
}

/* Whether the diskmon that made instance diskmon-PID is gone. */
static int owner_gone(long pid)
{
    char path[64], comm[64];

    if (pid <= 0 || pid == (long)getpid())
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    /* The pid was reused by another program. */
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    return dm_read_text(path, comm, sizeof comm) >= 0 &&
           strncmp(comm, "diskmon", 7) != 0;
}

int dm_ftrace_remove_stale(const char *tracefs, struct dm_notes *notes)
{
    char dir[160], path[448];
    struct dirent *de;
    int removed = 0;
    DIR *d;

    snprintf(dir, sizeof dir, "%s/instances", tracefs);
    d = opendir(dir);
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name, *digits = name + strlen(INSTANCE_PREFIX);
        char *end;
        long pid;
        int rc;

        if (strncmp(name, INSTANCE_PREFIX, strlen(INSTANCE_PREFIX)) != 0 ||
            *digits < '0' || *digits > '9')
            continue;
        pid = strtol(digits, &end, 10);
        if (*end != '\0' || !owner_gone(pid))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        rc = remove_instance(path);
        if (rc == 0) {
            removed++;
            dm_note(notes, "diskmon: removed the tracefs instance %s left by diskmon "
                    "process %ld, which is no longer running\n", path, pid);
        } else {
            dm_note(notes, "diskmon: cannot remove the leftover tracefs instance %s: "
                    "%s\n", path, strerror(-rc));
        }
    }
    closedir(d);
    return removed;
}

static void ftrace_close(void *t)
{
    struct ftrace_transport *f = t;

    if (f == NULL)
        return;
    if (f->made)
        put(f->dir, "tracing_on", "0");
    /* The kernel counts the users of its tgid recording; an instance
     * removed with the option on would keep it counted. */
    if (f->tgid_on)
        put(f->dir, "options/record-tgid", "0");
    if (f->cpus != NULL) {
        for (int i = 0; i < f->s.n_cpus; i++) {
            if (f->cpus[i].fd >= 0)
                close(f->cpus[i].fd);
            free(f->cpus[i].buf);
        }
    }
    if (f->wakefd >= 0)
        close(f->wakefd);
    if (f->made) {
        int rc = remove_instance(f->dir);

        if (rc != 0)
            dm_note(f->s.notes, "diskmon: cannot remove the tracefs instance %s: %s; "
                    "remove it with: rmdir %s\n", f->dir, strerror(-rc), f->dir);
    }
    free(f->cpus);
    free(f->pfds);
    free(f);
}

/* Release f and report what failed with errno e. */
static int fail(struct ftrace_transport *f, char *err, size_t errlen, const char *what,
                int e)
{
    snprintf(err, errlen, "%s: %s", what, strerror(e));
    ftrace_close(f);
    return dm_err_from_errno(e);
}

/* Read the sub-buffer layout from the kernel's header files. */
static int read_layout(struct ftrace_transport *f, char *err, size_t errlen)
{
    char page[1024], event[1024], sub[32], events[192];
    long np, ne;
    uint32_t subbuf = 0;

    snprintf(events, sizeof events, "%s/events", f->s.tracefs);
    np = get(events, "header_page", page, sizeof page);
    ne = get(events, "header_event", event, sizeof event);
    if (np < 0 || ne < 0) {
        snprintf(err, errlen, "cannot read %s/header_page or header_event", events);
        return DM_EUNSUPPORTED;
    }
    /* buffer_subbuf_size_kb (6.8+); without it a sub-buffer is one page. */
    if (get(f->dir, "buffer_subbuf_size_kb", sub, sizeof sub) > 0)
        subbuf = (uint32_t)strtoul(sub, NULL, 10) * 1024u;
    return dm_ftrace_layout_parse(page, (size_t)np, event, (size_t)ne, subbuf,
                                  &f->layout, err, errlen);
}

static int ftrace_open(void **out, const struct dm_blk_setup *s, char *err,
                       size_t errlen)
{
    struct ftrace_transport *f = calloc(1, sizeof *f);
    char value[64];
    int rc;

    *out = NULL;
    if (f == NULL)
        return DM_ENOMEM;
    f->s = *s;
    f->dec = s->dec;
    f->wakefd = -1;
    snprintf(f->dir, sizeof f->dir, "%s/instances/" INSTANCE_PREFIX "%ld", s->tracefs,
             (long)getpid());
    /* An instance with our own pid can only be a leftover of a killed
     * diskmon whose pid we now have: replace it. */
    if (mkdir(f->dir, 0700) != 0 &&
        (errno != EEXIST || remove_instance(f->dir) != 0 || mkdir(f->dir, 0700) != 0)) {
        int e = errno;

        snprintf(err, errlen, "cannot make the tracefs instance %s: %s", f->dir,
                 strerror(e));
        ftrace_close(f);
        return dm_err_from_errno(e);
    }
    f->made = 1;
    if ((rc = put(f->dir, "tracing_on", "0")) != 0 ||
        (rc = put(f->dir, "options/overwrite", "0")) != 0 ||
        (rc = put(f->dir, "trace_clock", "mono")) != 0)
        return fail(f, err, errlen, "cannot set up the tracefs instance", -rc);
    /* Kernels before 4.14 have no record-tgid: exited threads then keep
     * their own id, as before. (record-cmd is a top-level option only, on
     * by default; the block events carry comm themselves.) */
    f->tgid_on = put(f->dir, "options/record-tgid", "1") == 0;
    snprintf(value, sizeof value, "%" PRIu64, s->ring_bytes / 1024);
    if ((rc = put(f->dir, "buffer_size_kb", value)) != 0)
        return fail(f, err, errlen, "cannot size the tracefs instance's buffer", -rc);
    /* Older kernels have no buffer_percent: poll then wakes on any data. */
    f->percent_set = put(f->dir, "buffer_percent", BUFFER_PERCENT) == 0;
    rc = read_layout(f, err, errlen);
    if (rc != 0) {
        ftrace_close(f);
        return rc;
    }
    for (int k = 0; k < s->n_kinds; k++) {
        char file[128];
        const char *name = dm_blk_event_names[s->kinds[k]];

        /* The core filter still checks -d, so a refused kernel filter only
         * costs speed. */
        if (s->filter[0] != '\0') {
            snprintf(file, sizeof file, "events/block/%s/filter", name);
            put(f->dir, file, s->filter);
        }
        snprintf(file, sizeof file, "events/block/%s/enable", name);
        if ((rc = put(f->dir, file, "1")) != 0) {
            snprintf(value, sizeof value, "cannot enable block:%s", name);
            return fail(f, err, errlen, value, -rc);
        }
    }
    f->cpus = calloc((size_t)s->n_cpus, sizeof *f->cpus);
    f->pfds = calloc((size_t)s->n_cpus + 1, sizeof *f->pfds);
    if (f->cpus == NULL || f->pfds == NULL) {
        ftrace_close(f);
        return DM_ENOMEM;
    }
    for (int i = 0; i < s->n_cpus; i++)
        f->cpus[i].fd = -1;
    for (int i = 0; i < s->n_cpus; i++) {
        char file[256];
        struct cpu_reader *c = &f->cpus[i];

        snprintf(file, sizeof file, "%s/per_cpu/cpu%d/trace_pipe_raw", f->dir, s->cpus[i]);
        c->fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        c->buf = malloc((size_t)PASS_PAGES * f->layout.subbuf_size);
        if (c->fd < 0)
            return fail(f, err, errlen, "cannot open trace_pipe_raw", errno);
        if (c->buf == NULL) {
            ftrace_close(f);
            return DM_ENOMEM;
        }
        f->pfds[i].fd = c->fd;
        f->pfds[i].events = POLLIN;
    }
    f->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (f->wakefd < 0)
        return fail(f, err, errlen, "eventfd", errno);
    f->pfds[s->n_cpus].fd = f->wakefd;
    f->pfds[s->n_cpus].events = POLLIN;
    *out = f;
    return 0;
}

static void ftrace_enable(void *t, int on)
{
    struct ftrace_transport *f = t;

    /* All tracepoints at once: a request cut by either edge shows up as a
     * completion before the capture or a start still open at its end,
     * neither of which is counted as a loss. */
    put(f->dir, "tracing_on", on ? "1" : "0");
}

static int ftrace_wait(void *t, int timeout_ms, int idle, char *err, size_t errlen)
{
    struct ftrace_transport *f = t;

    /* Idle: poll(2) returns at the first event (buffer_percent 0: "any
     * data", ring_buffer_poll_wait). Busy: at a quarter full, one wake-up
     * per many sub-buffers. One write when the mode changes. */
    if (f->percent_set && idle != f->idle_mode &&
        put(f->dir, "buffer_percent", idle ? "0" : BUFFER_PERCENT) == 0)
        f->idle_mode = idle;

    if (poll(f->pfds, (nfds_t)f->s.n_cpus + 1, timeout_ms) < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll on trace_pipe_raw: %s", strerror(errno));
        return DM_EOS;
    }
    return 0;
}

static int ftrace_fill(void *t)
{
    struct ftrace_transport *f = t;
    uint32_t size = f->layout.subbuf_size;
    int more = 0;

    for (int i = 0; i < f->s.n_cpus; i++) {
        struct cpu_reader *c = &f->cpus[i];
        int keep = c->n_pages - c->page;

        /* Keep the sub-buffers not handed out yet, the one being parsed
         * first (its cursor moves with it), then read after them. */
        if (keep > 0 && c->page > 0) {
            size_t shift = (size_t)c->page * size;

            memmove(c->buf, c->buf + shift, (size_t)keep * size);
            if (c->page_open)
                c->pg.entries -= shift;
        }
        if (keep <= 0) {
            keep = 0;
            c->page_open = 0;
        }
        c->n_pages = keep;
        c->page = 0;
        while (c->n_pages < PASS_PAGES) {
            uint8_t *dst = c->buf + (size_t)c->n_pages * size;
            ssize_t n = read(c->fd, dst, size);

            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; /* EAGAIN: nothing more for now */
            if ((size_t)n < size) {
                /* Not a whole sub-buffer: the page parser counts it as bad
                 * (a truncated page) and skips it. Its own cursor: c->pg
                 * may be a kept page's, half read. */
                struct dm_ftrace_page short_pg;

                memset(dst + n, 0, size - (size_t)n);
                dm_ftrace_page_open(&f->layout, dst, (size_t)n, &short_pg, &f->counts);
                continue;
            }
            c->n_pages++;
        }
        c->full = c->n_pages == PASS_PAGES;
        more |= c->full;
    }
    return more;
}

/*
 * The process of a thread that /proc no longer has, from the kernel's own
 * record: with options/record-tgid on, the kernel saves a traced task's
 * tgid at its next context switch after the event (its exit is one), in
 * tgid_map (kernel/trace/trace.c), an array indexed by pid with pid_max
 * entries (kernel.pid_max; 5.14+, older kernels PID_MAX_DEFAULT). The
 * top-level saved_tgids lists it as "PID TGID" lines. An entry stays until
 * a later task with the same pid overwrites it, so a hit is the latest
 * thread of that id, the one that just did I/O. 0 when absent.
 */
static uint32_t saved_tgid(const struct ftrace_transport *f, uint32_t tid)
{
    char path[160];
    unsigned long pid, tgid;
    uint32_t found = 0;
    FILE *in;

    snprintf(path, sizeof path, "%s/saved_tgids", f->s.tracefs);
    in = fopen(path, "r");
    if (in == NULL)
        return 0;
    while (fscanf(in, "%lu %lu", &pid, &tgid) == 2) {
        if (pid == tid) {
            found = (uint32_t)tgid;
            break;
        }
    }
    fclose(in);
    return found;
}

/* The process (thread group) of a thread, from /proc/TID/status, or from
 * saved_tgids once the thread has exited, cached: the tracepoint's
 * common_pid is the thread. A cached entry whose name differs from the
 * sample's is looked up again (the id may have been reused). A thread
 * found in neither keeps its own id. */
static uint32_t tgid_of(struct ftrace_transport *f, const struct dm_blk_sample *s)
{
    struct tgid_slot *slot = &f->tgids[(s->tid * 2654435761u) >> 24];
    char path[48], buf[1024];
    const char *p;
    uint32_t saved;

    if (s->tid == 0)
        return 0;
    if (slot->tid == s->tid &&
        (!s->has_comm || strncmp(slot->comm, s->comm, sizeof slot->comm) == 0))
        return slot->tgid;
    slot->tid = s->tid;
    slot->tgid = s->tid;
    memset(slot->comm, 0, sizeof slot->comm);
    if (s->has_comm)
        memcpy(slot->comm, s->comm, strnlen(s->comm, sizeof slot->comm));
    snprintf(path, sizeof path, "/proc/%u/status", (unsigned)s->tid);
    if (dm_read_text(path, buf, sizeof buf) >= 0 && (p = strstr(buf, "\nTgid:")) != NULL)
        slot->tgid = (uint32_t)strtoul(p + 6, NULL, 10);
    else if ((saved = saved_tgid(f, s->tid)) != 0)
        slot->tgid = saved;
    return slot->tgid;
}

static int ftrace_next(void *t, int cpu, struct dm_blk_sample *out)
{
    struct ftrace_transport *f = t;
    struct cpu_reader *c = &f->cpus[cpu];

    while (c->page < c->n_pages) {
        struct dm_ftrace_record rec;
        int rc;

        if (!c->page_open) {
            c->page_open = 1;
            if (dm_ftrace_page_open(&f->layout,
                                    c->buf + (size_t)c->page * f->layout.subbuf_size,
                                    f->layout.subbuf_size, &c->pg, &f->counts) != 0) {
                c->page++;
                c->page_open = 0;
                continue;
            }
        }
        rc = dm_ftrace_page_next(&c->pg, &rec, &f->counts);
        if (rc <= 0) {
            c->page++;
            c->page_open = 0;
            continue;
        }
        if (dm_blk_decode_raw(f->dec, rec.data, rec.len, out) != 0) {
            f->undecodable++;
            continue;
        }
        out->time_ns = rec.ts;
        out->cpu = (uint32_t)f->s.cpus[cpu];
        /* Only a start's thread issued the request; a completion's is
         * whatever task the interrupt found running (requests.h). */
        out->pid = out->kind == DM_BLK_IO_START || out->kind == DM_BLK_RQ_INSERT ||
                           out->kind == DM_BLK_RQ_ISSUE
                       ? tgid_of(f, out)
                       : out->tid;
        return 1;
    }
    return c->full ? DM_MERGE_CUT : 0;
}

static void ftrace_release(void *t)
{
    (void)t; /* read(2) already consumed the sub-buffers */
}

static void ftrace_wake(void *t)
{
    struct ftrace_transport *f = t;
    uint64_t one = 1;

    if (f->wakefd >= 0 && write(f->wakefd, &one, sizeof one) < 0) {
        /* The counter is already nonzero: poll() returns anyway. */
    }
}

/* "key: N" out of a per_cpu stats file; 0 when absent. */
static uint64_t stat_value(const char *text, const char *key)
{
    const char *p = strstr(text, key);

    return p != NULL ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void ftrace_losses(void *t, struct dm_blk_losses *l, uint64_t *malformed)
{
    struct ftrace_transport *f = t;
    uint64_t dropped = 0, overrun = 0, missed;

    for (int i = 0; i < f->s.n_cpus; i++) {
        char file[64], text[1024];

        snprintf(file, sizeof file, "per_cpu/cpu%d/stats", f->s.cpus[i]);
        if (get(f->dir, file, text, sizeof text) > 0) {
            dropped += stat_value(text, "dropped events:");
            overrun += stat_value(text, "\noverrun:");
        }
    }
    /* Sub-buffers flagged with missed events report the same losses as
     * overrun, from the reader's side; a flag without a stored count means
     * at least one. */
    missed = f->counts.missed_events > f->counts.missed_pages ? f->counts.missed_events
                                                              : f->counts.missed_pages;
    l->kernel_dropped = dropped;
    l->kernel_overrun = overrun > missed ? overrun : missed;
    *malformed = f->counts.bad_pages + f->counts.bad_records + f->undecodable;
}

const struct dm_blk_transport_ops dm_ftrace_transport = {
    "tracefs",      ftrace_open,    ftrace_enable, ftrace_wait,   ftrace_fill, ftrace_next,
    ftrace_release, ftrace_wake,    ftrace_losses, ftrace_close,
};
