/*
 * metrics_text.c - the --metrics file: the counters of metrics.c in the
 * Prometheus text format (0.0.4), built in one buffer with the shared
 * number writers and label escaper, then handed to dm_file_out_write
 * (file_out.h, over platform.h's dm_replace_*), the one safe way to
 * replace an output file.
 *
 * Every family has its # HELP and # TYPE and all its samples together;
 * every series exists from the first write on (zeros included), so none
 * appears or disappears later; values are exact integers or seconds with
 * nine decimals (whole nanoseconds).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "output/digits.h"
#include "output/escape.h"
#include "output/text.h"
#include "views/metrics.h"
#include "views/metrics_state.h"
#include "platform/platform.h"

#define NS_PER_SEC 1000000000u
#define NS_PER_US 1000u

/* The op label: Prometheus label values are conventionally lower case. */
static const char *const op_labels[DM_REQ_COUNT] = {"read", "write", "flush", "discard"};

/* ---- the text ------------------------------------------------------------------ */

/* The most a byte of a label value becomes (dm_escape_label). */
#define LABEL_MAX DM_ESCAPE_LABEL_MAX

/* ns as seconds, exact to the nanosecond (a Go float literal). */
static char *put_seconds(char *p, uint64_t ns)
{
    return dm_put_fixed(p, 0, ns / NS_PER_SEC, (uint32_t)(ns % NS_PER_SEC), 9);
}

/* A growing text buffer; each append first makes room for its bound. */
struct text {
    struct dm_metrics *m;
    size_t len;
    int failed;
};

/* Room for need more bytes plus the writers' slack; NULL when out of memory. */
static char *room(struct text *t, size_t need)
{
    struct dm_metrics *m = t->m;

    need += t->len + DM_DIGITS_SLACK + 1;
    if (t->failed)
        return NULL;
    if (need > m->text_cap) {
        size_t cap = m->text_cap ? m->text_cap : 16384;
        char *p;

        while (cap < need)
            cap *= 2;
        p = realloc(m->text, cap);
        if (p == NULL) {
            t->failed = 1;
            return NULL;
        }
        m->text = p;
        m->text_cap = cap;
    }
    return m->text + t->len;
}

static void lit(struct text *t, const char *s)
{
    size_t n = strlen(s);
    char *p = room(t, n);

    if (p != NULL) {
        memcpy(p, s, n);
        t->len += n;
    }
}

/* # HELP and # TYPE of a family. */
static void family(struct text *t, const char *name, const char *type, const char *help)
{
    lit(t, "# HELP ");
    lit(t, name);
    lit(t, " ");
    lit(t, help);
    lit(t, "\n# TYPE ");
    lit(t, name);
    lit(t, " ");
    lit(t, type);
    lit(t, "\n");
}

/* The numbers a sample line may end in. */
enum value_kind { V_COUNT, V_SECONDS };

/*
 * name{k1="v1",...[,le="x"]} value\n, with n label pairs kv[2i] = kv[2i+1]
 * (none: no braces, and no le). Label values are escaped; le is one of
 * ours and plain.
 */
static void sample_n(struct text *t, const char *name, const char *const *kv, int n,
                     const char *le, enum value_kind kind, uint64_t value)
{
    size_t need = strlen(name) + 48 + (le ? strlen(le) + 8 : 0);
    char *p, *start;

    for (int i = 0; i < n; i++)
        need += strlen(kv[2 * i]) + 4 + LABEL_MAX * strlen(kv[2 * i + 1]);
    if ((p = room(t, need)) == NULL)
        return;
    start = p;
    p = dm_put_lit(p, name, strlen(name));
    for (int i = 0; i < n; i++) {
        *p++ = i == 0 ? '{' : ',';
        p = dm_put_lit(p, kv[2 * i], strlen(kv[2 * i]));
        p = dm_put_lit(p, DM_LIT("=\""));
        p = dm_escape_label(p, kv[2 * i + 1]);
        *p++ = '"';
    }
    if (n > 0) {
        if (le != NULL) {
            p = dm_put_lit(p, DM_LIT(",le=\""));
            p = dm_put_lit(p, le, strlen(le));
            *p++ = '"';
        }
        *p++ = '}';
    }
    *p++ = ' ';
    p = kind == V_SECONDS ? put_seconds(p, value) : dm_put_u64(p, value);
    *p++ = '\n';
    t->len += (size_t)(p - start);
}

/* A sample with up to two labels: k1 (NULL: none) and k2 (NULL: one). */
static void sample(struct text *t, const char *name, const char *k1, const char *v1,
                   const char *k2, const char *v2, const char *le, enum value_kind kind,
                   uint64_t value)
{
    const char *const kv[4] = {k1, v1, k2, v2};

    sample_n(t, name, kv, k1 == NULL ? 0 : k2 == NULL ? 1 : 2, le, kind, value);
}

/* Every disk series, "(other)" last when more disks than DM_METRICS_MAX_DISKS came. */
static int n_disk_rows(const struct dm_metrics *m)
{
    return m->n_disks + (m->other_disk_used ? 1 : 0);
}

static const struct dm_metrics_disk *disk_row(const struct dm_metrics *m, int i,
                                          const char **label)
{
    if (i == m->n_disks) {
        *label = "(other)";
        return &m->other_disk;
    }
    /* its name, else its number, as the event lines print it (disks.h) */
    *label = m->disk_ids[i].text;
    return &m->disks[i];
}

static void disk_counter(struct text *t, const struct dm_metrics *m, const char *name,
                         size_t field)
{
    const char *label;

    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_disk *d = disk_row(m, i, &label);
        const uint64_t *v = (const uint64_t *)(const void *)((const char *)d + field);

        for (int r = 0; r < DM_REQ_COUNT; r++)
            sample(t, name, "disk", label, "op", op_labels[r], NULL, V_COUNT, v[r]);
    }
}

static void histogram(struct text *t, const struct dm_metrics *m)
{
    static const char name[] = "diskmon_request_duration_seconds";
    const char *label;

    family(t, name, "histogram",
           "Time from issue to completion of disk requests, in seconds.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_disk *d = disk_row(m, i, &label);

        for (int r = 0; r < DM_REQ_COUNT; r++) {
            uint64_t cum = 0;

            for (size_t b = 0; b < DM_METRICS_BUCKETS; b++) {
                cum += d->bucket[r][b];
                sample(t, "diskmon_request_duration_seconds_bucket", "disk", label, "op",
                       op_labels[r], dm_metrics_buckets[b].le, V_COUNT, cum);
            }
            sample(t, "diskmon_request_duration_seconds_bucket", "disk", label, "op",
                   op_labels[r], "+Inf", V_COUNT, d->requests[r] - d->no_duration[r]);
            sample(t, "diskmon_request_duration_seconds_sum", "disk", label, "op",
                   op_labels[r], NULL, V_SECONDS, d->duration_ns[r]);
            sample(t, "diskmon_request_duration_seconds_count", "disk", label, "op",
                   op_labels[r], NULL, V_COUNT, d->requests[r] - d->no_duration[r]);
        }
    }
}

/* The promoted (process, disk) pairs, then each disk's "(other)". */
static void process_counter(struct text *t, const struct dm_metrics *m, const char *name,
                            int bytes)
{
    const struct dm_metrics_names *n = &m->procs;
    const char *kv[6] = {"process", NULL, "disk", NULL, "op", NULL};
    const char *label;

    for (unsigned i = 0; i < n->n_slots; i++) {
        const struct dm_metrics_name *e = n->slots[i];

        kv[1] = e->name;
        kv[3] = e->disk_label;
        for (int r = 0; r < DM_REQ_COUNT; r++) {
            kv[5] = op_labels[r];
            sample_n(t, name, kv, 3, NULL, V_COUNT,
                     bytes ? e->counts.bytes[r] : e->counts.requests[r]);
        }
    }
    kv[1] = "(other)";
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_counts *c =
            &n->other[i < m->n_disks ? i : DM_METRICS_OTHER_DISK];

        (void)disk_row(m, i, &label);
        kv[3] = label;
        for (int r = 0; r < DM_REQ_COUNT; r++) {
            kv[5] = op_labels[r];
            sample_n(t, name, kv, 3, NULL, V_COUNT, bytes ? c->bytes[r] : c->requests[r]);
        }
    }
}

/* The promoted cgroup paths and one "(other)" (cgroups carry no disk). */
static void cgroup_counter(struct text *t, const struct dm_metrics_names *n, const char *name,
                           int bytes)
{
    for (unsigned i = 0; i <= n->n_slots; i++) {
        const struct dm_metrics_counts *c = i < n->n_slots ? &n->slots[i]->counts : &n->other[0];
        const char *label = i < n->n_slots ? n->slots[i]->name : "(other)";

        for (int r = 0; r < DM_REQ_COUNT; r++)
            sample(t, name, "cgroup", label, "op", op_labels[r], NULL, V_COUNT,
                   bytes ? c->bytes[r] : c->requests[r]);
    }
}

/* The sources that name each request's cgroup (Linux live): their file
 * has the cgroup families from the first write on, zeros included; the
 * others' (ETW, a replay) only once a request named one (a replayed
 * Linux capture's rows carry their cgroup). */
static int source_has_cgroups(const char *source)
{
    return source != NULL && (strcmp(source, "tracefs") == 0 || strcmp(source, "perf") == 0);
}

/* Partitions in the order first seen, "(other)" last when more came. */
static void partition_counter(struct text *t, const struct dm_metrics_parts *p,
                              const char *name, int bytes)
{
    for (int i = 0; i < p->n + (p->other_used ? 1 : 0); i++) {
        const struct dm_metrics_counts *c = i < p->n ? &p->counts[i] : &p->other;

        for (int r = 0; r < DM_REQ_COUNT; r++)
            sample(t, name, "partition", i < p->n ? p->name[i] : "(other)", "op",
                   op_labels[r], NULL, V_COUNT, bytes ? c->bytes[r] : c->requests[r]);
    }
}

/* The families made of durations; none for a source without response
 * times (dm_metrics_no_latency), whose requests are counted by the family
 * of requests without a duration instead, as are single rows without one
 * (written from the first such row on). */
static void duration_families(struct text *t, const struct dm_metrics *m)
{
    const char *label;

    if (m->no_latency || m->no_duration > 0) {
        family(t, "diskmon_requests_without_duration_total", "counter",
               "Disk requests whose input gave no duration (a trace without response "
               "times): in requests_total, not in the duration histogram.");
        disk_counter(t, m, "diskmon_requests_without_duration_total",
                     offsetof(struct dm_metrics_disk, no_duration));
    }
    if (m->no_latency)
        return;
    histogram(t, m);
    family(t, "diskmon_busy_seconds_total", "counter",
           "Time with at least one request in flight, in seconds; its rate is the "
           "utilisation.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_disk *d = disk_row(m, i, &label);

        sample(t, "diskmon_busy_seconds_total", "disk", label, NULL, NULL, NULL, V_SECONDS,
               dm_busy_ns(&d->busy));
    }
    family(t, "diskmon_in_flight_seconds_total", "counter",
           "Sum of the durations of disk requests, in seconds; its rate is the average "
           "queue size.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_disk *d = disk_row(m, i, &label);

        sample(t, "diskmon_in_flight_seconds_total", "disk", label, NULL, NULL, NULL,
               V_SECONDS, d->in_flight_ns);
    }
}

static size_t render(struct dm_metrics *m, const struct dm_metrics_run *run,
                     uint64_t wall_ns, struct text *t)
{
    const char *label;
    char *p;

    dm_metrics_promote(m);
    t->m = m;
    t->len = 0;
    t->failed = 0;
    family(t, "diskmon_requests_total", "counter", "Disk requests completed.");
    disk_counter(t, m, "diskmon_requests_total", offsetof(struct dm_metrics_disk, requests));
    family(t, "diskmon_bytes_total", "counter", "Bytes transferred by disk requests.");
    disk_counter(t, m, "diskmon_bytes_total", offsetof(struct dm_metrics_disk, bytes));
    duration_families(t, m);
    family(t, "diskmon_requests_by_flag_total", "counter",
           "Disk requests that carried a request flag; a request with several flags "
           "counts under each.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct dm_metrics_disk *d = disk_row(m, i, &label);

        for (int f = 0; f < DM_RQ_COUNT; f++)
            sample(t, "diskmon_requests_by_flag_total", "disk", label, "flag",
                   dm_req_flag_names[f], NULL, V_COUNT, d->by_flag[f]);
    }
    family(t, "diskmon_process_requests_total", "counter",
           "Disk requests by process image name and disk; pairs past the top K are in "
           "(other) of their disk.");
    process_counter(t, m, "diskmon_process_requests_total", 0);
    family(t, "diskmon_process_bytes_total", "counter",
           "Bytes of disk requests by process image name and disk; pairs past the top K "
           "are in (other) of their disk.");
    process_counter(t, m, "diskmon_process_bytes_total", 1);
    if (source_has_cgroups(run->source) || m->cgroups_seen) {
        family(t, "diskmon_cgroup_requests_total", "counter",
               "Disk requests by the issuer's cgroup v2 path; paths past the top K are in "
               "(other).");
        cgroup_counter(t, &m->cgroups, "diskmon_cgroup_requests_total", 0);
        family(t, "diskmon_cgroup_bytes_total", "counter",
               "Bytes of disk requests by the issuer's cgroup v2 path; paths past the top K "
               "are in (other).");
        cgroup_counter(t, &m->cgroups, "diskmon_cgroup_bytes_total", 1);
    }
    family(t, "diskmon_partition_requests_total", "counter",
           "Disk requests inside one partition or volume; a request across a boundary "
           "or outside every partition is in none.");
    partition_counter(t, &m->parts, "diskmon_partition_requests_total", 0);
    family(t, "diskmon_partition_bytes_total", "counter",
           "Bytes of disk requests inside one partition or volume.");
    partition_counter(t, &m->parts, "diskmon_partition_bytes_total", 1);
    family(t, "diskmon_events_lost_total", "counter",
           "Requests diskmon did not count: ring_full (the output could not keep up) "
           "or source (lost by the kernel or the trace).");
    sample(t, "diskmon_events_lost_total", "reason", "ring_full", NULL, NULL, NULL, V_COUNT,
           run->ring_dropped);
    sample(t, "diskmon_events_lost_total", "reason", "source", NULL, NULL, NULL, V_COUNT,
           run->source_lost);
    family(t, "diskmon_build_info", "gauge", "Always 1: diskmon's version and event source.");
    sample(t, "diskmon_build_info", "version", DM_VERSION, "source", run->source, NULL,
           V_COUNT, 1);
    family(t, "diskmon_last_update_timestamp_seconds", "gauge",
           "When diskmon wrote this file, in seconds since 1970.");
    p = room(t, 64);
    if (p != NULL) {
        char *start = p;

        p = dm_put_lit(p, DM_LIT("diskmon_last_update_timestamp_seconds "));
        p = dm_put_fixed(p, 0, wall_ns / NS_PER_SEC,
                         (uint32_t)(wall_ns % NS_PER_SEC / NS_PER_US), 6);
        *p++ = '\n';
        t->len += (size_t)(p - start);
    }
    if (!t->failed)
        m->text[t->len] = '\0';
    return t->len;
}

size_t dm_metrics_render(struct dm_metrics *m, const struct dm_metrics_run *run,
                         uint64_t wall_ns, char *buf, size_t cap)
{
    struct text t;
    size_t len = render(m, run, wall_ns, &t);

    if (cap > 0) {
        size_t n = t.failed ? 0 : len < cap - 1 ? len : cap - 1;

        memcpy(buf, m->text, n);
        buf[n] = '\0';
    }
    return len;
}

/* ---- the file ---------------------------------------------------------------- */

int dm_metrics_write(struct dm_metrics *m, const struct dm_metrics_run *run)
{
    struct text t;

    render(m, run, dm_wall_ns(), &t);
    return dm_file_out_write(&m->file, m->text, t.len, t.failed);
}

uint64_t dm_metrics_written(const struct dm_metrics *m)
{
    return m->file.written;
}
