/*
 * ftrace_tasks.c - the process lifetime instance of the tracefs transport
 * (rules in ftrace_tasks.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diskmon.h"
#include "linux/ftrace_tasks.h"
#include "linux/tracefs.h"
#include "platform/platform.h"

/* Per-CPU buffer: a fork or a move record is under 100 bytes, and a busy
 * machine forks a few thousand times a second at most; 512 KiB holds
 * seconds of that between two passes of the reader (at most a second
 * apart: IDLE_WAIT_MS, linux_source.c). */
#define TASKS_BUFFER_KB "512"

/* DIR/file (a small text file) into buf: its length, or -1. */
static long get_at(const char *dir, const char *file, char *buf, size_t cap)
{
    char path[320];

    snprintf(path, sizeof path, "%s/%s", dir, file);
    return dm_read_text(path, buf, cap);
}

/* Read one lifetime tracepoint's format and enable it (with filter, "" for
 * none). Returns 0 or a negative dm_err, with why. */
static int task_event(struct dm_ftrace_tasks *t, const char *tracefs, const char *event,
                      const char *filter, struct dm_tp_format *fmt, char *why,
                      size_t whylen)
{
    char file[128];
    int rc;

    if (!dm_tracefs_has_event(tracefs, event)) {
        snprintf(why, whylen, "this kernel has no %s tracepoint", event);
        return DM_ENOTFOUND;
    }
    rc = dm_tracefs_read_format(tracefs, event, fmt, why, whylen);
    if (rc == 0 && filter[0] != '\0') {
        snprintf(file, sizeof file, "events/%s/filter", event);
        /* Refused, the decoder drops other hierarchies' moves itself. */
        dm_tracefs_put(t->dir, file, filter);
    }
    snprintf(file, sizeof file, "events/%s/enable", event);
    if (rc == 0 && (rc = dm_tracefs_put(t->dir, file, "1")) != 0) {
        snprintf(why, whylen, "cannot enable %s: %s", event, strerror(-rc));
        rc = dm_err_from_errno(-rc);
    }
    return rc;
}

/* The instance's settings: off, dropping rather than overwriting, the
 * block instance's clock and sub-buffer size (so one layout reads both),
 * a small ring. */
static int set_up(struct dm_ftrace_tasks *t, const struct dm_ftrace_layout *block,
                  char *why, size_t whylen)
{
    char sub[32];
    int rc;

    if ((rc = dm_tracefs_put(t->dir, "tracing_on", "0")) != 0 ||
        (rc = dm_tracefs_put(t->dir, "options/overwrite", "0")) != 0 ||
        (rc = dm_tracefs_put(t->dir, "trace_clock", "mono")) != 0) {
        snprintf(why, whylen, "cannot set up the tracefs instance %s: %s", t->dir,
                 strerror(-rc));
        return dm_err_from_errno(-rc);
    }
    snprintf(sub, sizeof sub, "%u", (unsigned)(block->subbuf_size / 1024));
    dm_tracefs_put(t->dir, "buffer_subbuf_size_kb", sub);
    dm_tracefs_put(t->dir, "buffer_size_kb", TASKS_BUFFER_KB);
    t->ring_layout = *block;
    /* Kernels before 6.8 have no such file, and one page per sub-buffer
     * in both instances. */
    if (get_at(t->dir, "buffer_subbuf_size_kb", sub, sizeof sub) > 0 &&
        strtoul(sub, NULL, 10) * 1024u != block->subbuf_size) {
        snprintf(why, whylen, "the tracefs instance %s took another sub-buffer size", t->dir);
        return DM_EUNSUPPORTED;
    }
    return 0;
}

static int open_cpus(struct dm_ftrace_tasks *t, const struct dm_blk_setup *s, char *why,
                     size_t whylen)
{
    char err[256], path_why[64];

    t->cpus = calloc((size_t)s->n_cpus, sizeof *t->cpus);
    if (t->cpus == NULL)
        return DM_ENOMEM;
    t->n_cpus = s->n_cpus;
    t->cpu_ids = s->cpus;
    for (int i = 0; i < s->n_cpus; i++) {
        char file[256];
        int rc;

        snprintf(file, sizeof file, "%s/per_cpu/cpu%d/trace_pipe_raw", t->dir, s->cpus[i]);
        rc = dm_ftrace_cpu_open(&t->cpus[i], file, &t->ring_layout, DM_FTRACE_READ,
                                path_why, sizeof path_why, err, sizeof err);
        if (rc != 0) {
            snprintf(why, whylen, "%s", err);
            return rc;
        }
        t->n_open++;
    }
    return 0;
}

int dm_ftrace_tasks_open(struct dm_ftrace_tasks *t, const struct dm_blk_setup *s,
                         const char *block_dir, const struct dm_ftrace_layout *block,
                         char *why, size_t whylen)
{
    struct dm_tp_format *fmt = malloc(2 * sizeof *fmt);
    int rc;

    memset(t, 0, sizeof *t);
    t->cgroups = s->cgroups;
    if (fmt == NULL)
        return DM_ENOMEM;
    snprintf(t->dir, sizeof t->dir, "%s" DM_FTRACE_TASKS_SUFFIX, block_dir);
    /* Ours by name, as the block instance is (ftrace_transport.c). */
    if (mkdir(t->dir, 0700) != 0 &&
        (errno != EEXIST || dm_tracefs_rmdir(t->dir) != 0 || mkdir(t->dir, 0700) != 0)) {
        snprintf(why, whylen, "cannot make the tracefs instance %s: %s", t->dir,
                 strerror(errno));
        free(fmt);
        return dm_err_from_errno(errno);
    }
    t->made = 1;
    rc = set_up(t, block, why, whylen);
    if (rc == 0)
        rc = task_event(t, s->tracefs, DM_TASK_FORK_EVENT, "", &fmt[0], why, whylen);
    if (rc == 0)
        rc = task_event(t, s->tracefs, DM_TASK_ATTACH_EVENT, DM_TASK_ATTACH_FILTER, &fmt[1],
                        why, whylen);
    if (rc == 0)
        rc = dm_task_layout_set(&t->layout, &fmt[0], &fmt[1], why, whylen);
    free(fmt);
    if (rc == 0)
        rc = open_cpus(t, s, why, whylen);
    if (rc != 0)
        dm_ftrace_tasks_close(t, NULL);
    return rc;
}

void dm_ftrace_tasks_enable(struct dm_ftrace_tasks *t, int on)
{
    if (t->made)
        dm_tracefs_put(t->dir, "tracing_on", on ? "1" : "0");
}

int dm_ftrace_tasks_next(struct dm_ftrace_tasks *t, int cpu, struct dm_blk_sample *out)
{
    struct dm_ftrace_record rec;

    if (cpu >= t->n_open)
        return 0;
    while (dm_ftrace_cpu_next(&t->cpus[cpu], &rec, &t->counts) == 1) {
        int skip, rc = dm_task_decode(&t->layout, rec.data, rec.len, t->cgroups, out, &skip);

        /* Only the two events are enabled: anything else is malformed,
         * as is a short record; a v1 hierarchy's move is skipped. */
        if (rc != 1) {
            t->undecodable += !skip;
            continue;
        }
        out->time_ns = rec.ts;
        out->cpu = (uint32_t)t->cpu_ids[cpu];
        return 1;
    }
    return 0;
}

uint64_t dm_ftrace_tasks_dropped(const struct dm_ftrace_tasks *t, uint64_t *malformed)
{
    uint64_t dropped = 0;

    for (int i = 0; t->made && i < t->n_cpus; i++) {
        char file[64], text[1024];
        const char *p;

        snprintf(file, sizeof file, "per_cpu/cpu%d/stats", t->cpu_ids[i]);
        if (get_at(t->dir, file, text, sizeof text) > 0 &&
            (p = strstr(text, "dropped events:")) != NULL)
            dropped += strtoull(p + strlen("dropped events:"), NULL, 10);
    }
    *malformed = t->counts.bad_pages + t->counts.bad_records + t->undecodable;
    return dropped;
}

void dm_ftrace_tasks_close(struct dm_ftrace_tasks *t, struct dm_notes *notes)
{
    if (t->made)
        dm_tracefs_put(t->dir, "tracing_on", "0");
    for (int i = 0; i < t->n_open; i++)
        dm_ftrace_cpu_close(&t->cpus[i]);
    free(t->cpus);
    t->cpus = NULL;
    t->n_open = 0;
    if (t->made) {
        int rc = dm_tracefs_rmdir(t->dir);

        if (rc != 0 && notes != NULL)
            dm_note(notes, "diskmon: cannot remove the tracefs instance %s: %s; "
                    "remove it with: rmdir %s\n", t->dir, strerror(-rc), t->dir);
        t->made = 0;
    }
}
