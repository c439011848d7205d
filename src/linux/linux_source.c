/*
 * linux_source.c - the Linux live source: block tracepoints read through a
 * transport (transport.h: a private tracefs instance by default, perf as
 * the fallback), merged across CPUs by time, paired into requests
 * (requests.h) and handed to the sink.
 *
 * One reader thread (run()). Each pass takes in what every CPU's buffer
 * holds, then merges the CPUs' samples by timestamp (cpu_merge.h), holding
 * back those a CPU read earlier in the pass could still precede, so the
 * pairing step sees one time order. Device names are looked up once per
 * device and cached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/options.h"
#include "core/sink.h"
#include "diskmon.h"
#include "linux/block_devices.h"
#include "linux/cpu_merge.h"
#include "linux/partitions.h"
#include "linux/requests.h"
#include "linux/task_io.h"
#include "linux/tracefs.h"
#include "linux/transport.h"
#include "platform/platform.h"

#define NS_PER_MS 1000000ull
/* How long the reader sleeps. Holding samples back (COMMIT_SLACK_NS), it
 * must look again once they are old enough. Idle, the transport wakes it at
 * the first event (transport.h), so the sleep only bounds how late the
 * expiry of requests that never complete runs. */
#define HOLD_WAIT_MS 12
#define IDLE_WAIT_MS 1000
#define EXPIRE_EVERY_NS (250 * NS_PER_MS)
/* Per-CPU buffer, sized from what was measured on a 2-CPU machine: fio at
 * full speed on a loop device (470k 4 KiB reads/s) writes up to 30 MB/s of
 * block_io_start + block_rq_complete records into one CPU's ring (about
 * 64 bytes a record, two per request), so 2 MiB held only 65 ms. A reader
 * on a busy machine is not scheduled for that long at times (requests 60 ms
 * old when read were seen beside two CPU-bound loops, and a 2 MiB ring
 * overflowed at 62k requests/s once, a stall of 450 ms), and the mapped
 * ring cannot be resized while it is mapped. 8 MiB holds 260 ms at the
 * full rate and about 2 s at 60k/s; the total stays under 64 MiB on big
 * machines, whose load spreads over more CPUs. A power of two
 * (perf_event_open(2) needs it). */
#define RING_BYTES_MAX (8u << 20)
#define RING_BYTES_MIN (64u << 10)
#define RING_BYTES_TOTAL (64u << 20)
#define MAX_CPUS 4096
#define RELEASE_EVERY 512          /* samples between release() calls */
/* A sample is merged once the clock, read before the pass, is this far past
 * it: the ring buffer stamps an event when it reserves room and shows it
 * to readers at commit, which an interrupt and the softirqs run at its
 * exit (up to MAX_SOFTIRQ_TIME, 2 ms, kernel/softirq.c) can delay. 10 ms
 * leaves room for that several times over and for a short vCPU stall. */
#define COMMIT_SLACK_NS (10 * NS_PER_MS)

struct linux_source {
    char tracefs[128];
    struct dm_blk_setup setup;
    struct dm_blk_decoder dec;
    int legacy;
    int *cpus;
    char filter[32 * DM_MAX_DISK_FILTERS]; /* "dev == N || ...", 22 bytes each */
    char flush_filter[32 * DM_MAX_DISK_FILTERS + 32]; /* "(filter) && rwbs ~ ..." */
    const struct dm_blk_transport_ops *tops;
    void *t;                       /* the transport */
    int other_ok;                  /* the other backend may be suggested */
    struct dm_requests req;
    struct dm_blk_names names;
    struct dm_blk_parts parts;     /* each disk's partitions */
    int read_partition;            /* something reads ev.partition
                                      (dm_options_read_partition) */
    struct dm_cpu_merge merge;
    struct dm_event ev;            /* reused for every emit */
    enum dm_cgroup_source cg_source; /* set by the transport's open */
    char cg_why[160];              /* why DM_CGROUPS_PROC */
};

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
        s->setup.kinds[s->setup.n_kinds++] = kind;
    return rc;
}

static int choose_tracepoints(struct dm_source *src, struct linux_source *s, int queue)
{
    const char *env = getenv("DM_LINUX_LEGACY");
    int rc;

    s->legacy = !dm_tracefs_has_event(s->tracefs, "block_io_start") ||
                (env != NULL && strcmp(env, "1") == 0);
    rc = add_tracepoint(src, s, s->legacy ? DM_BLK_RQ_ISSUE : DM_BLK_IO_START);
    if (rc == 0)
        rc = add_tracepoint(src, s, DM_BLK_RQ_COMPLETE);
    /* Modern mode needs block_rq_issue even without --queue: the flush
     * machinery's own flush requests never pass block_io_start, and are
     * seen first when dispatched (docs/linux.md §7). Without --queue the
     * kernel filter keeps only those. */
    if (rc == 0 && (queue || !s->legacy))
        rc = add_tracepoint(src, s, s->legacy ? DM_BLK_RQ_INSERT : DM_BLK_RQ_ISSUE);
    /* Merges matter only when starts are taken before the scheduler, which
     * is where requests merge. */
    if (rc == 0 && (!s->legacy || queue) &&
        dm_tracefs_has_event(s->tracefs, "block_rq_merge"))
        rc = add_tracepoint(src, s, DM_BLK_RQ_MERGE);
    if (rc == 0 && (!s->legacy || queue) &&
        dm_tracefs_has_event(s->tracefs, "block_bio_frontmerge"))
        rc = add_tracepoint(src, s, DM_BLK_BIO_FRONTMERGE);
    return rc;
}

/* One kernel filter per tracepoint: -d for all; block_rq_issue, when it is
 * there only for the flush machinery's requests, also keeps only flush ops
 * (rwbs "FF": blk_fill_rwbs writes F for REQ_PREFLUSH, then F for
 * REQ_OP_FLUSH). The glob is ftrace's string match (Documentation/trace/
 * events.rst, "Event filtering"). A refused filter only costs speed:
 * requests.c checks the op itself. */
static void set_filters(struct linux_source *s, int queue)
{
    if (s->filter[0] != '\0')
        snprintf(s->flush_filter, sizeof s->flush_filter, "(%s) && rwbs ~ \"FF*\"",
                 s->filter);
    else
        snprintf(s->flush_filter, sizeof s->flush_filter, "rwbs ~ \"FF*\"");
    for (int k = 0; k < s->setup.n_kinds; k++)
        s->setup.filters[k] = !s->legacy && !queue &&
                                      s->setup.kinds[k] == DM_BLK_RQ_ISSUE
                                  ? s->flush_filter
                                  : s->filter;
}

static int online_cpus(struct dm_source *src, struct linux_source *s)
{
    char buf[4096];
    int n;

    s->cpus = malloc(MAX_CPUS * sizeof *s->cpus);
    if (s->cpus == NULL)
        return DM_ENOMEM;
    if (dm_read_text("/sys/devices/system/cpu/online", buf, sizeof buf) < 0 ||
        (n = parse_cpu_list(buf, s->cpus, MAX_CPUS)) <= 0) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "cannot read the online CPUs from /sys/devices/system/cpu/online");
        return DM_EOS;
    }
    s->setup.cpus = s->cpus;
    s->setup.n_cpus = n;
    s->setup.ring_bytes = RING_BYTES_MAX;
    while (s->setup.ring_bytes > RING_BYTES_MIN &&
           s->setup.ring_bytes * (uint64_t)n > RING_BYTES_TOTAL)
        s->setup.ring_bytes /= 2;
    return 0;
}

/* Open the chosen transport; by default tracefs, falling back to perf with
 * one note when the instance cannot be made or used. */
static int open_transport(struct dm_source *src, struct linux_source *s,
                          enum dm_backend backend)
{
    char why[sizeof src->errmsg];
    int rc;

    if (backend != DM_BACKEND_PERF) {
        s->tops = &dm_ftrace_transport;
        rc = s->tops->open(&s->t, &s->setup, src->errmsg, sizeof src->errmsg);
        if (rc == 0 || backend == DM_BACKEND_TRACEFS || rc == DM_ENOMEM) {
            s->other_ok = 1;
            return rc;
        }
        snprintf(why, sizeof why, "%s", src->errmsg);
        src->errmsg[0] = '\0';
        s->tops = &dm_perf_transport;
        rc = s->tops->open(&s->t, &s->setup, src->errmsg, sizeof src->errmsg);
        if (rc == 0)
            dm_note(&src->notes,
                    "diskmon: using perf events, not a tracefs instance (%s)\n", why);
        return rc;
    }
    s->tops = &dm_perf_transport;
    s->other_ok = 1;
    return s->tops->open(&s->t, &s->setup, src->errmsg, sizeof src->errmsg);
}

/* What was set up, for --self-test (diskmon.h, struct dm_source info),
 * after the transport's own lines (its instance, ring and buffers). */
static void describe(struct dm_source *src, const struct linux_source *s)
{
    struct utsname u;

    dm_note(&src->info, "backend: %s\n", s->tops->name);
    if (uname(&u) == 0)
        dm_note(&src->info, "kernel: %s %s\n", u.sysname, u.release);
    dm_note(&src->info, "tracepoints:");
    for (int i = 0; i < s->setup.n_kinds; i++)
        dm_note(&src->info, " block:%s", dm_blk_event_names[s->setup.kinds[i]]);
    dm_note(&src->info, "\nCPUs: %d, each with a ring of %llu KiB asked\n", s->setup.n_cpus,
            (unsigned long long)(s->setup.ring_bytes >> 10));
    if (s->cg_source == DM_CGROUPS_PROC)
        dm_note(&src->info, "cgroups: read from /proc/PID/cgroup as requests are read (%s)\n",
                s->cg_why);
    else if (s->cg_source == DM_CGROUPS_NONE)
        dm_note(&src->info, "cgroups: not followed (no output, filter or view of this run "
                "reads them)\n");
}

/* DM_LINUX_CGROUPS=proc: the fallback reading even where the kernel gives
 * better (a test knob, like DM_LINUX_LEGACY: the fallback's unknown
 * cgroups are tested on kernels that have both sources). */
static void force_cgroup_fallback(struct linux_source *s)
{
    const char *env = getenv("DM_LINUX_CGROUPS");

    if (env != NULL && strcmp(env, "proc") == 0 && s->cg_source != DM_CGROUPS_PROC &&
        s->cg_source != DM_CGROUPS_NONE) {
        s->cg_source = DM_CGROUPS_PROC;
        snprintf(s->cg_why, sizeof s->cg_why, "DM_LINUX_CGROUPS=proc");
    }
}

/* The fallback said where the user looks at cgroups: a process that exits
 * before the reader gets to its request is then of unknown cgroup. */
static void note_cgroup_fallback(struct dm_source *src, const struct linux_source *s,
                                 const struct dm_options *opt)
{
    if (s->cg_source == DM_CGROUPS_PROC &&
        (opt->n_cgroups > 0 || (opt->top_ns != 0 && opt->top_by == DM_TOP_BY_CGROUP)))
        dm_note(&src->notes,
                "diskmon: cgroups are read from /proc/PID/cgroup as requests are read "
                "(%s): a process that has exited by then is of unknown cgroup, and "
                "counted\n", s->cg_why);
}

static int linux_open(struct dm_source *src, const struct dm_options *opt)
{
    struct linux_source *s = calloc(1, sizeof *s);
    uint64_t t0;
    int rc;

    src->impl = s;
    src->is_live = 1;
    src->task_io = &dm_linux_task_io;
    src->disk_size = dm_blk_size;
    if (s == NULL)
        return DM_ENOMEM;
    s->setup.notes = &src->notes;
    s->setup.info = &src->info;
    s->read_partition = dm_options_read_partition(opt);
    /* -d first: a disk that does not exist is a usage error, whoever runs
     * diskmon. */
    rc = dm_blk_filter(opt->disks, opt->n_disks, s->filter, sizeof s->filter,
                       src->errmsg, sizeof src->errmsg);
    if (rc == 0)
        rc = dm_tracefs_locate(s->tracefs, sizeof s->tracefs, geteuid() == 0,
                               src->errmsg, sizeof src->errmsg);
    if (rc != 0)
        return rc;
    if (opt->cleanup) {
        /* --cleanup: remove what a killed diskmon left, and capture nothing. */
        if (dm_ftrace_remove_stale(s->tracefs, &src->notes) == 0)
            snprintf(src->errmsg, sizeof src->errmsg,
                     "no leftover tracefs instance under %s/instances", s->tracefs);
        return DM_ESTOPPED;
    }
    dm_ftrace_remove_stale(s->tracefs, &src->notes);
    rc = choose_tracepoints(src, s, opt->queue);
    if (rc == 0)
        rc = online_cpus(src, s);
    if (rc != 0)
        return rc;
    s->setup.tracefs = s->tracefs;
    s->setup.dec = &s->dec;
    set_filters(s, opt->queue);
    /* The requests first: the transport interns cgroup paths into them. */
    if (dm_requests_init(&s->req, s->legacy, opt->queue, dm_monotonic_ns()) != 0)
        return DM_ENOMEM;
    s->setup.cgroups = &s->req.cgroups;
    s->setup.want_cgroups = dm_options_read_cgroup(opt);
    s->setup.cg_source = &s->cg_source;
    s->setup.cg_why = s->cg_why;
    s->setup.cg_why_len = sizeof s->cg_why;
    rc = open_transport(src, s, opt->backend);
    if (rc != 0)
        return rc;
    force_cgroup_fallback(s);
    s->req.cg_source = s->cg_source;
    /* The merge takes every stream the transport serves. */
    if (dm_cpu_merge_init(&s->merge, s->tops->streams(s->t)) != 0)
        return DM_ENOMEM;
    src->backend = s->tops->name;
    describe(src, s);
    note_cgroup_fallback(src, s, opt);
    t0 = dm_monotonic_ns();
    dm_requests_set_t0(&s->req, t0);
    src->start_wall_ns = dm_wall_ns();
    s->tops->enable(s->t, 1);
    return 0;
}

/* The merge's view of the transport: the next sample of one CPU. */
static int next_sample(void *ctx, int cpu, struct dm_blk_sample *out)
{
    struct linux_source *s = ctx;

    return s->tops->next(s->t, cpu, out);
}

/*
 * One pass: take in what the kernel has and feed it, merged by time. With
 * keep_going (the final drain after stop, when the kernel writes no more),
 * DM_ESTOPPED from the sink does not end the pass and nothing is held
 * back. Returns 1 when more is waiting, 0, or DM_ESTOPPED.
 */
static int drain(struct linux_source *s, struct dm_sink *sink, int keep_going)
{
    uint64_t now = dm_monotonic_ns();
    int stopped = 0, since_release = 0, more = s->tops->fill(s->t);
    const struct dm_blk_sample *smp;

    dm_cpu_merge_begin(&s->merge, next_sample, s,
                       keep_going ? UINT64_MAX
                       : now > COMMIT_SLACK_NS ? now - COMMIT_SLACK_NS : 0);
    while ((smp = dm_cpu_merge_next(&s->merge)) != NULL) {
        if (dm_requests_feed(&s->req, smp, &s->ev)) {
            /* Cache names are NUL-terminated within DM_DISK_NAME_MAX. */
            s->ev.disk_name = dm_blk_name(&s->names, s->ev.disk);
            /* Nothing asked for the partition: leave it "" (the lookup
             * was 2% of the reader's CPU at full speed). */
            if (s->read_partition)
                s->ev.partition = dm_blk_partition(&s->parts, s->ev.disk,
                                                   s->ev.byte_offset,
                                                   s->ev.transfer_size, s->ev.time_ns);
            if (dm_sink_emit(sink, &s->ev) == DM_ESTOPPED) {
                stopped = 1;
                if (!keep_going)
                    break;
            }
        }
        if (++since_release == RELEASE_EVERY) {
            s->tops->release(s->t);
            since_release = 0;
        }
    }
    s->tops->release(s->t);
    return stopped ? DM_ESTOPPED : more || dm_cpu_merge_cut(&s->merge);
}

/* How often the tail looks again for the completions it waits for. */
#define TAIL_POLL_MS 20

/*
 * perf only (the transport's stop_starts): with the starts off and the
 * completions still on, read until no request is open that the end would
 * take for one in flight (requests.h), at most the grace. A completion the
 * kernel dropped without counting it (docs/linux-live.md, "Perf backend
 * losses") then leaves its start open past the grace, where it is counted
 * as lost; a request that was really in flight completes meanwhile.
 */
static void tail(struct linux_source *s, struct dm_sink *sink)
{
    dm_requests_starts_off(&s->req, dm_monotonic_ns());
    s->tops->stop_starts(s->t);
    for (;;) {
        while (drain(s, sink, 1) == 1)
            ;
        if (!dm_requests_open_young(&s->req, dm_monotonic_ns()))
            return;
        dm_sleep_ms(TAIL_POLL_MS);
    }
}

static int linux_run(struct dm_source *src, struct dm_sink *sink)
{
    struct linux_source *s = src->impl;
    uint64_t last_expire = dm_monotonic_ns();
    struct dm_blk_losses losses;
    int rc = 0, more = 0;

    while (!dm_sink_stopping(sink)) {
        uint64_t now;

        if (!more) {
            int idle = !dm_cpu_merge_holding_below(&s->merge, s->setup.n_cpus);

            rc = s->tops->wait(s->t, idle ? IDLE_WAIT_MS : HOLD_WAIT_MS, idle,
                               src->errmsg, sizeof src->errmsg);
            if (rc != 0)
                break;
        }
        if (dm_sink_stopping(sink))
            break;
        more = drain(s, sink, 0);
        if (more == DM_ESTOPPED)
            break;
        now = dm_monotonic_ns();
        if (now - last_expire >= EXPIRE_EVERY_NS) {
            dm_requests_expire(&s->req, now);
            last_expire = now;
        }
    }
    if (s->tops->stop_starts != NULL)
        tail(s, sink);
    /* Stop the kernel side, then show what it had already recorded. */
    s->tops->enable(s->t, 0);
    while (drain(s, sink, 1) == 1)
        ;
    /* The samples' clock is CLOCK_MONOTONIC (perf use_clockid, ftrace
     * "mono"): the end of the capture is now, not the last sample, which
     * may be long before on a quiet disk. */
    dm_requests_finish(&s->req, dm_monotonic_ns());
    memset(&losses, 0, sizeof losses);
    losses.backend = s->tops->name;
    if (s->other_ok)
        losses.other = s->tops == &dm_perf_transport ? "tracefs" : "perf";
    s->tops->losses(s->t, &losses, &src->malformed);
    src->lost_events = dm_requests_report(&s->req, &losses, &s->names, src->loss_detail,
                                          sizeof src->loss_detail, &src->notes);
    return rc;
}

static void linux_stop(struct dm_source *src)
{
    struct linux_source *s = src->impl;

    /* The run ends on the sink's stop flag (the dm_source_ops stop rule):
     * this only wakes a reader asleep in wait(). */
    if (s != NULL && s->t != NULL)
        s->tops->wake(s->t);
}

static void linux_close(struct dm_source *src)
{
    struct linux_source *s = src->impl;

    if (s == NULL)
        return;
    if (s->t != NULL)
        s->tops->close(s->t);
    dm_requests_free(&s->req);
    free(s->cpus);
    dm_cpu_merge_free(&s->merge);
    free(s);
    src->impl = NULL;
}

/* The kernel keeps a task's name in TASK_COMM_LEN (16) bytes with the NUL:
 * the block tracepoints and /proc/PID/comm show at most 15 characters. */
#define LINUX_COMM_MAX 15

/* A -c name Linux can never show: longer than a comm (a trailing ".exe",
 * which -c ignores, not counted), or NULL. */
static const char *long_comm(const struct dm_options *opt, size_t *len)
{
    for (int i = 0; i < opt->n_comms && i < DM_MAX_COMM_FILTERS; i++) {
        size_t n = strlen(opt->comms[i]);

        if (n > 4 && strcasecmp(opt->comms[i] + n - 4, ".exe") == 0)
            n -= 4;
        if (n > LINUX_COMM_MAX) {
            *len = n;
            return opt->comms[i];
        }
    }
    return NULL;
}

/* Options with nothing to act on here: a -c name longer than any comm,
 * --by file (block events name no files) and --force (Linux has no kernel
 * session to take over). */
static const char *linux_refuse(const struct dm_options *opt)
{
    static char why[512];
    const char *name;
    size_t len = 0;

    /* Refused rather than matched on a prefix: a prefix could match other
     * programs, and a filter that silently shows nothing is worse. */
    if ((name = long_comm(opt, &len)) != NULL) {
        /* A name of any length: cut in the message rather than overflow. */
        if (snprintf(why, sizeof why,
                     "-c %.300s: Linux keeps only the first %d characters of a "
                     "process name and this one has %zu, so nothing would match; "
                     "use -c %.*s",
                     name, LINUX_COMM_MAX, len, LINUX_COMM_MAX, name) < 0)
            why[0] = '\0';
        return why;
    }
    if (opt->top_ns != 0 && opt->top_by == DM_TOP_BY_FILE)
        return "--by file needs file names, which Linux block events do not "
               "carry; use --by process or --by disk";
    if (opt->force)
        return "--force is for Windows (it stops a running NT Kernel Logger "
               "session); Linux live capture has no such session to take over";
    return NULL;
}

static const struct dm_source_ops dm_linux_source = {
    "linux", linux_open, linux_run, linux_stop, linux_close, linux_refuse,
};

const struct dm_source_ops *const dm_live_source = &dm_linux_source;
