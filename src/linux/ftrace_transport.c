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
 *                              have exited before the reader sees them;
 *                              left on until the instance is removed
 *                              (ftrace_close says why)
 *   buffer_subbuf_size_kb 64   (6.8+) fewer, larger sub-buffers: the reader
 *                              asks the kernel for each one (SUBBUF_KB)
 *   buffer_size_kb             the per-CPU ring, sized like the perf rings
 *   buffer_percent 25          poll() wakes the reader at a quarter full
 *                              under load; 0 (any data) while it is idle,
 *                              so a quiet disk's first event wakes it
 *   events/block/NAME/filter   -d as "dev == N || ...", and flush requests
 *   events/block/NAME/enable   1 for each tracepoint
 * and beside it instances/diskmon-PID-tasks, never polled, with the
 * process lifetime events that give each request its cgroup
 * (ftrace_tasks.h).
 * Each CPU's per_cpu/cpuN/trace_pipe_raw is read by ftrace_ring.h with
 * read(2), one sub-buffer at a time, or mapped (Linux 6.10+, the records
 * parsed in the kernel's own sub-buffers) when DM_TRACEFS_RING=mmap asks.
 * read(2) is the default because it costs less: the kernel swaps a full
 * sub-buffer out whole and copies it once, where the mapped path's ioctl
 * walks every event of it (docs/linux.md §6); measured, the mapped path
 * cost diskmon more CPU per request (docs/benchmarks.md).
 * A CPU's next sub-buffer is fetched only when the merge has taken every
 * record of the current one, so nothing is copied ahead and what the merge
 * holds back stays in the kernel's ring. The reader sleeps in poll(2) on
 * all the files (the kernel wakes it at buffer_percent, see ftrace_wait)
 * and never asks a ring that has said it is empty again in the same pass.
 * DM_TRACEFS_RING=mmap asks for the mapped path, DM_TRACEFS_RING=read (or
 * nothing) the read path (a test knob: both paths are tested on kernels
 * that can map).
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
#include "linux/ftrace_ring.h"
#include "linux/ftrace_tasks.h"
#include "linux/saved_tgids.h"
#include "linux/tracefs.h"
#include "linux/transport.h"
#include "platform/platform.h"

#define INSTANCE_PREFIX "diskmon-"
#define TGID_CACHE 256             /* thread -> process ids remembered */
#define BUFFER_PERCENT "25"
/* The sub-buffer size. A mapped reader makes one GET_READER ioctl per
 * sub-buffer and a read(2) reader one read; with the 4 KiB default (about
 * 60 block records) the ioctl was 12% of the reader's time at 100k
 * requests/s. The kernel takes a power of two up to 512 KiB here (6.18,
 * ring_buffer_subbuf_order_set; seen). A reader still gets a sub-buffer
 * the writer is on, so a quiet disk's events are read as soon (docs/
 * linux.md §6), and 8 MiB rings still have 128 sub-buffers. */
#define SUBBUF_KB "64"

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
    struct dm_ftrace_cpu *cpus;
    int n_open;                    /* cpus[0..n_open) are open */
    int read_failed;               /* a ring read failed: said once */
    struct pollfd *pfds;           /* n_cpus + the wake eventfd */
    int wakefd;
    struct dm_ftrace_counts counts;
    uint64_t undecodable;          /* records of no known event, or short */
    struct tgid_slot tgids[TGID_CACHE];
    struct dm_saved_tgids saved;   /* for threads gone from /proc */
    char saved_path[160];          /* TRACEFS/saved_tgids */
    struct dm_ftrace_tasks tasks;  /* fork and move events (ftrace_tasks.h) */
    int tasks_on;                  /* that instance is open */
};

/* Read DIR/file (a small text file) into buf. Returns its length or -errno. */
static long get(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[320];
    long n;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    n = dm_read_text(path, buf, cap);
    return n < 0 ? -errno : n;
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
        /* diskmon-PID, and its lifetime instance diskmon-PID-tasks. */
        if ((*end != '\0' && strcmp(end, DM_FTRACE_TASKS_SUFFIX) != 0) || !owner_gone(pid))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        /* One try, not remove_instance's retries: a process that is gone
         * has closed its files, so a busy instance is in use. */
        rc = rmdir(path) == 0 || errno == ENOENT ? 0 : -errno;
        if (rc == 0) {
            removed++;
            dm_note(notes, "diskmon: removed the tracefs instance %s left by diskmon "
                    "process %ld, which is no longer running\n", path, pid);
        } else if (rc != -EBUSY) {
            /* Busy: a reader holds it open, so it is no leftover: a
             * diskmon whose pid this namespace cannot see (another
             * container sharing tracefs) is capturing. */
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
        dm_tracefs_put(f->dir, "tracing_on", "0");
    /* The kernel counts the users of its tgid recording; an instance
     * removed with the option on would keep it counted. */
    /* options/record-tgid stays on: writing 0 would not only end this
     * instance's share of the kernel's tgid recording. The kernel applies
     * a change of the option to the enabled events of every instance
     * (trace_event_enable_tgid_record walks them all), so turning it off
     * here would also take one count for each event another tool enabled,
     * and the recording stops kernel-wide when the count reaches 0: with a
     * second instance that enabled block events without the option, a
     * diskmon beside this one showed 49 of 50 short-lived threads with
     * their thread id once this one ended. Removing the instance disables
     * its events, which gives back exactly the counts they took
     * (__ftrace_event_enable_disable), and nothing of anyone else's. */
    for (int i = 0; i < f->n_open; i++)
        dm_ftrace_cpu_close(&f->cpus[i]);
    dm_ftrace_tasks_close(&f->tasks, f->s.notes);
    if (f->wakefd >= 0)
        close(f->wakefd);
    if (f->made) {
        int rc = dm_tracefs_rmdir(f->dir);

        if (rc != 0)
            dm_note(f->s.notes, "diskmon: cannot remove the tracefs instance %s: %s; "
                    "remove it with: rmdir %s\n", f->dir, strerror(-rc), f->dir);
    }
    dm_saved_tgids_free(&f->saved);
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

/* The info lines (diskmon.h, struct dm_source): what was set up, and what
 * the kernel answered. */
static void note_setup(struct ftrace_transport *f, enum dm_ftrace_path want,
                       const char *why)
{
    struct dm_notes *info = f->s.info;
    char kb[32];
    int mapped = 0;

    if (info == NULL)
        return;
    dm_note(info, "tracefs instance: %s\n", f->dir);
    dm_note(info, "record-tgid: %s\n", f->tgid_on ? "on" : "off (not in this kernel)");
    for (int i = 0; i < f->n_open; i++)
        mapped += f->cpus[i].path == DM_FTRACE_MMAP;
    if (mapped == f->n_open)
        dm_note(info, "ring: mmap (DM_TRACEFS_RING=mmap)\n");
    else if (mapped > 0)
        dm_note(info, "ring: mmap on %d of %d CPUs, read on the others (%s)\n", mapped,
                f->n_open, why);
    else if (want == DM_FTRACE_READ)
        dm_note(info, "ring: read\n");
    else
        dm_note(info, "ring: read (%s)\n", why[0] != '\0' ? why : "mapping refused");
    if (get(f->dir, "buffer_size_kb", kb, sizeof kb) <= 0)
        snprintf(kb, sizeof kb, "?");
    kb[strcspn(kb, "\n")] = '\0';
    dm_note(info, "per-CPU buffer: %" PRIu64 " KiB asked, %s KiB read back, %u-byte "
            "sub-buffers\n", f->s.ring_bytes / 1024, kb, (unsigned)f->layout.subbuf_size);
    dm_note(info, "buffer_percent: %s\n", f->percent_set ? BUFFER_PERCENT " under load, 0 idle"
                                                         : "absent (poll wakes on any data)");
}

/* The lifetime events (task_cgroups.h), in an instance of their own
 * (ftrace_tasks.h), so that a request's cgroup is where its process was
 * when it started; without them, the /proc reading (requests.h), with the
 * reason in cg_why; none when nothing reads cgroups. Returns 0 or
 * DM_ENOMEM. */
static int open_task_events(struct ftrace_transport *f)
{
    int rc;

    if (!f->s.want_cgroups) {
        *f->s.cg_source = DM_CGROUPS_NONE;
        return 0;
    }
    rc = dm_ftrace_tasks_open(&f->tasks, &f->s, f->dir, &f->layout, f->s.cg_why,
                              f->s.cg_why_len);
    *f->s.cg_source = rc == 0 ? DM_CGROUPS_TRACK : DM_CGROUPS_PROC;
    f->tasks_on = rc == 0;
    if (rc == 0 && f->s.info != NULL)
        dm_note(f->s.info, "cgroups: followed from sched:sched_process_fork and "
                "cgroup:cgroup_attach_task in the instance %s\n", f->tasks.dir);
    return rc == DM_ENOMEM ? rc : 0;
}

static int ftrace_open(void **out, const struct dm_blk_setup *s, char *err,
                       size_t errlen)
{
    struct ftrace_transport *f = calloc(1, sizeof *f);
    enum dm_ftrace_path want;
    char value[64], why[160] = "";
    const char *ring;
    int rc;

    *out = NULL;
    if (f == NULL)
        return DM_ENOMEM;
    f->s = *s;
    f->dec = s->dec;
    f->wakefd = -1;
    snprintf(f->dir, sizeof f->dir, "%s/instances/" INSTANCE_PREFIX "%ld", s->tracefs,
             (long)getpid());
    snprintf(f->saved_path, sizeof f->saved_path, "%s/saved_tgids", s->tracefs);
    /* An instance with our own pid can only be a leftover of a killed
     * diskmon whose pid we now have: replace it. */
    if (mkdir(f->dir, 0700) != 0 &&
        (errno != EEXIST || dm_tracefs_rmdir(f->dir) != 0 || mkdir(f->dir, 0700) != 0)) {
        int e = errno;

        snprintf(err, errlen, "cannot make the tracefs instance %s: %s", f->dir,
                 strerror(e));
        ftrace_close(f);
        return dm_err_from_errno(e);
    }
    f->made = 1;
    if ((rc = dm_tracefs_put(f->dir, "tracing_on", "0")) != 0 ||
        (rc = dm_tracefs_put(f->dir, "options/overwrite", "0")) != 0 ||
        (rc = dm_tracefs_put(f->dir, "trace_clock", "mono")) != 0)
        return fail(f, err, errlen, "cannot set up the tracefs instance", -rc);
    /* Kernels before 4.14 have no record-tgid: exited threads then keep
     * their own id, as before. (record-cmd is a top-level option only, on
     * by default; the block events carry comm themselves.) */
    f->tgid_on = dm_tracefs_put(f->dir, "options/record-tgid", "1") == 0;
    /* Before the ring is sized, so it is allocated once. Kernels before 6.8
     * have no such file and keep one page per sub-buffer; read_layout reads
     * back what the kernel has. */
    dm_tracefs_put(f->dir, "buffer_subbuf_size_kb", SUBBUF_KB);
    snprintf(value, sizeof value, "%" PRIu64, s->ring_bytes / 1024);
    if ((rc = dm_tracefs_put(f->dir, "buffer_size_kb", value)) != 0)
        return fail(f, err, errlen, "cannot size the tracefs instance's buffer", -rc);
    /* Older kernels have no buffer_percent: poll then wakes on any data. */
    f->percent_set = dm_tracefs_put(f->dir, "buffer_percent", BUFFER_PERCENT) == 0;
    rc = read_layout(f, err, errlen);
    if (rc != 0) {
        ftrace_close(f);
        return rc;
    }
    for (int k = 0; k < s->n_kinds; k++) {
        char file[128];
        const char *name = dm_blk_event_names[s->kinds[k]];

        /* The core filter still checks -d, and requests.c the op, so a
         * refused kernel filter only costs speed. */
        if (s->filters[k][0] != '\0') {
            snprintf(file, sizeof file, "events/block/%s/filter", name);
            dm_tracefs_put(f->dir, file, s->filters[k]);
        }
        snprintf(file, sizeof file, "events/block/%s/enable", name);
        if ((rc = dm_tracefs_put(f->dir, file, "1")) != 0) {
            snprintf(value, sizeof value, "cannot enable block:%s", name);
            return fail(f, err, errlen, value, -rc);
        }
    }
    f->cpus = calloc((size_t)s->n_cpus, sizeof *f->cpus);
    f->pfds = calloc((size_t)s->n_cpus + 1, sizeof *f->pfds);
    if (f->cpus == NULL || f->pfds == NULL || open_task_events(f) != 0) {
        ftrace_close(f);
        return DM_ENOMEM;
    }
    ring = getenv("DM_TRACEFS_RING");
    want = ring != NULL && strcmp(ring, "mmap") == 0 ? DM_FTRACE_MMAP : DM_FTRACE_READ;
    for (int i = 0; i < s->n_cpus; i++) {
        char file[256];
        struct dm_ftrace_cpu *c = &f->cpus[i];

        snprintf(file, sizeof file, "%s/per_cpu/cpu%d/trace_pipe_raw", f->dir, s->cpus[i]);
        rc = dm_ftrace_cpu_open(c, file, &f->layout, want, why, sizeof why, err, errlen);
        if (rc != 0) {
            ftrace_close(f);
            return rc;
        }
        f->n_open++;
        f->pfds[i].fd = c->fd;
        f->pfds[i].events = POLLIN;
    }
    note_setup(f, want, why);
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
     * neither of which is counted as a loss. The lifetime instance is on
     * around the block one, so no start misses a fork before it. */
    if (on)
        dm_ftrace_tasks_enable(&f->tasks, 1);
    dm_tracefs_put(f->dir, "tracing_on", on ? "1" : "0");
    if (!on)
        dm_ftrace_tasks_enable(&f->tasks, 0);
}

static int ftrace_wait(void *t, int timeout_ms, int idle, char *err, size_t errlen)
{
    struct ftrace_transport *f = t;

    /* Idle: poll(2) returns at the first event (buffer_percent 0: "any
     * data", ring_buffer_poll_wait). Busy: at a quarter full, one wake-up
     * per many sub-buffers. One write when the mode changes. */
    if (f->percent_set && idle != f->idle_mode &&
        dm_tracefs_put(f->dir, "buffer_percent", idle ? "0" : BUFFER_PERCENT) == 0)
        f->idle_mode = idle;

    if (poll(f->pfds, (nfds_t)f->s.n_cpus + 1, timeout_ms) < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll on trace_pipe_raw: %s", strerror(errno));
        return DM_EOS;
    }
    return 0;
}

static int ftrace_fill(void *t)
{
    (void)t; /* next() fetches each CPU's sub-buffers as the merge asks */
    return 0;
}

/*
 * The process of a thread that /proc no longer has is the kernel's own
 * record: with options/record-tgid on, the kernel saves a traced task's
 * tgid at its next context switch after the event (its exit is one), in
 * tgid_map (kernel/trace/trace.c), an array indexed by pid with pid_max
 * entries (kernel.pid_max; 5.14+, older kernels PID_MAX_DEFAULT). The
 * top-level saved_tgids lists it as "PID TGID" lines, read by
 * saved_tgids.h. An entry stays until a later task with the same pid
 * overwrites it, so a hit is the latest thread of that id, the one that
 * just did I/O.
 */
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
    /* Both names are NUL-padded (block_decode.h, and the slot below), so
     * the same name is the same 16 bytes: memcmp, inlined, not strncmp. */
    if (slot->tid == s->tid &&
        (!s->has_comm || memcmp(slot->comm, s->comm, sizeof slot->comm) == 0))
        return slot->tgid;
    slot->tid = s->tid;
    slot->tgid = s->tid;
    memset(slot->comm, 0, sizeof slot->comm);
    if (s->has_comm)
        memcpy(slot->comm, s->comm, strnlen(s->comm, sizeof slot->comm));
    snprintf(path, sizeof path, "/proc/%u/status", (unsigned)s->tid);
    if (dm_read_text(path, buf, sizeof buf) >= 0 && (p = strstr(buf, "\nTgid:")) != NULL)
        slot->tgid = (uint32_t)strtoul(p + 6, NULL, 10);
    else if ((saved = dm_saved_tgid(&f->saved, f->saved_path, s->tid, s->time_ns)) != 0)
        slot->tgid = saved;
    return slot->tgid;
}

static int ftrace_next(void *t, int cpu, struct dm_blk_sample *out)
{
    struct ftrace_transport *f = t;
    struct dm_ftrace_cpu *c;
    struct dm_ftrace_record rec;
    int rc;

    /* The streams past the CPUs are the lifetime instance's. */
    if (cpu >= f->s.n_cpus)
        return dm_ftrace_tasks_next(&f->tasks, cpu - f->s.n_cpus, out);
    c = &f->cpus[cpu];
    while ((rc = dm_ftrace_cpu_next(c, &rec, &f->counts)) == 1) {
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
    if (rc < 0 && !f->read_failed) {
        f->read_failed = 1;
        dm_note(f->s.notes, "diskmon: reading CPU %d's tracefs ring failed: %s\n",
                f->s.cpus[cpu], strerror(errno));
    }
    return 0;
}

static void ftrace_release(void *t)
{
    (void)t; /* a sub-buffer is given back when the next is fetched */
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
    if (f->tasks_on) {
        uint64_t bad, lost = dm_ftrace_tasks_dropped(&f->tasks, &bad);

        *malformed += bad;
        if (lost > 0)
            dm_note(f->s.notes, "diskmon: %" PRIu64 " fork or cgroup-move events dropped "
                    "with the kernel's buffer full: some requests' cgroups may be "
                    "unknown (counted under --cgroup) or out of date\n", lost);
    }
}

/* The merge's streams: one per CPU, and as many again for the lifetime
 * instance's rings when it is open. */
static int ftrace_streams(void *t)
{
    const struct ftrace_transport *f = t;

    return f->s.n_cpus * (f->tasks_on ? 2 : 1);
}

const struct dm_blk_transport_ops dm_ftrace_transport = {
    "tracefs",      ftrace_open,    ftrace_enable, ftrace_wait,   ftrace_fill, ftrace_next,
    ftrace_release, ftrace_wake,    ftrace_losses, ftrace_streams, ftrace_close,
    NULL,
};
