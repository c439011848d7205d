/*
 * metrics.c - the --metrics counters and their Prometheus text (metrics.h).
 *
 * Per disk: requests, bytes, a latency histogram and its sum per request
 * kind, busy time and the sum of durations. Per process image name:
 * requests and bytes per request kind, for the K names that came first by
 * bytes, and one "(other)" for the rest. Names, not pids, because a pid
 * label would make a new series for every process started.
 *
 * Promotion keeps every published counter going up. A name seen since the
 * last write and not yet promoted is a candidate: its counts wait in the
 * candidate table. At a write the candidates with the most bytes fill the
 * free slots of the K and keep their counts; the other candidates' counts
 * go to "(other)", and the candidates are forgotten. A name that found the
 * table full went to "(other)" at once. So "(other)" only grows, a promoted
 * name's series starts when it is first written and never goes away, and a
 * replay (one write at the end) names the top K of the whole trace as long
 * as its distinct names fit in the table.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/digits.h"
#include "core/escape.h"
#include "core/metrics.h"
#include "platform/platform.h"

#define NS_PER_SEC 1000000000u
#define NS_PER_US 1000u

/* Disks with series of their own; more are summed into disk="(other)". A
 * machine with more than 64 disks is rare, and each costs about 100
 * series. */
#define MAX_DISKS 64

/*
 * The histogram's upper bounds, 25 us to 10 s in steps of at most 2.5x
 * (1, 2.5, 5 per decade). histogram_quantile() interpolates linearly inside
 * the bucket the quantile falls in, so its answer is in the same bucket as
 * the exact quantile: within one step, never more than 2.5x off. The range
 * covers an NVMe read (tens of us), SSDs (hundreds of us), spinning disks
 * (milliseconds) and a stalled device (seconds); README "Watching many
 * machines" gives the same list.
 */
static const struct {
    uint64_t ns;
    const char *le;
} buckets[] = {
    {25000u, "0.000025"},    {50000u, "0.00005"},     {100000u, "0.0001"},
    {250000u, "0.00025"},    {500000u, "0.0005"},     {1000000u, "0.001"},
    {2500000u, "0.0025"},    {5000000u, "0.005"},     {10000000u, "0.01"},
    {25000000u, "0.025"},    {50000000u, "0.05"},     {100000000u, "0.1"},
    {250000000u, "0.25"},    {500000000u, "0.5"},     {1000000000u, "1"},
    {2500000000u, "2.5"},    {5000000000u, "5"},      {10000000000u, "10"},
};
#define N_BUCKETS (sizeof buckets / sizeof buckets[0])

/* The op label: Prometheus label values are conventionally lower case. */
static const char *const op_labels[DM_REQ_COUNT] = {"read", "write", "flush", "discard"};

/*
 * Busy time (a request in flight) is the length of the union of the
 * requests' spans [completion - duration, completion). Requests come in
 * completion order, so a new span joins the last few; the union is kept as
 * a window of the latest disjoint spans, and when the window is full its
 * older half is added up and forgotten. A span reaching back before what
 * was forgotten is cut at that point, so busy time never counts twice and
 * only goes up; memory stays one window per disk.
 */
#define SPAN_WINDOW 256

struct span {
    uint64_t start_ns, end_ns;
};

struct disk_series {
    uint32_t disk;
    char name[DM_DISK_NAME_MAX]; /* "" : the disk number */
    uint64_t requests[DM_REQ_COUNT];
    uint64_t bytes[DM_REQ_COUNT];
    uint64_t duration_ns[DM_REQ_COUNT];
    uint64_t bucket[DM_REQ_COUNT][N_BUCKETS + 1]; /* not cumulative; last: +Inf */
    uint64_t in_flight_ns;
    uint64_t busy_done_ns;   /* the spans already forgotten, summed */
    uint64_t forgotten_ns;   /* nothing before this counts again */
    uint32_t n_spans;
    struct span spans[SPAN_WINDOW];
};

struct proc_counts {
    uint64_t requests[DM_REQ_COUNT];
    uint64_t bytes[DM_REQ_COUNT];
};

/* A name in the table: promoted (slot >= 0) or a candidate (slot < 0). */
struct proc_entry {
    char name[DM_PROCESS_MAX];
    uint32_t hash;
    int used;
    int slot;
    struct proc_counts counts;
};

struct dm_metrics {
    const char *path;
    char *tmp_path;
    FILE *errf;
    int failure_reported;
    unsigned top_k;
    int n_disks;
    int other_disk_used;
    struct disk_series disks[MAX_DISKS];
    struct disk_series other_disk;
    /* process names: an open-addressing table (linear probing) */
    struct proc_entry *table;
    uint32_t table_mask;
    uint32_t table_used;
    uint32_t table_limit;    /* at most this many used: probes stay short */
    struct proc_entry **slots;     /* the promoted, in promotion order */
    unsigned n_slots;
    struct proc_entry **scratch;   /* candidates at a write */
    struct proc_entry *keep;       /* the promoted, while the table is rebuilt */
    struct proc_counts other;
    /* the text, reused from write to write */
    char *text;
    size_t text_cap;
};

/* ---- creating -------------------------------------------------------------- */

/* Candidates a table holds between writes, besides the K promoted: enough
 * for the distinct names of a busy machine's interval. */
#define CANDIDATES 1024

struct dm_metrics *dm_metrics_create(const char *path, unsigned top_k, FILE *errf)
{
    struct dm_metrics *m = calloc(1, sizeof *m);
    size_t len = strlen(path);
    uint32_t size = 1;

    if (m == NULL)
        return NULL;
    m->path = path;
    m->errf = errf;
    m->top_k = top_k;
    /* load at most one half: linear probing stays a probe or two */
    while (size < 2 * (top_k + CANDIDATES))
        size *= 2;
    m->table_mask = size - 1;
    m->table_limit = top_k + CANDIDATES;
    m->table = calloc(size, sizeof *m->table);
    m->slots = calloc(top_k + 1, sizeof *m->slots);
    m->scratch = calloc(size, sizeof *m->scratch);
    m->keep = calloc(top_k + 1, sizeof *m->keep);
    m->tmp_path = malloc(len + sizeof ".tmp");
    if (m->table == NULL || m->slots == NULL || m->scratch == NULL || m->keep == NULL ||
        m->tmp_path == NULL) {
        dm_metrics_destroy(m);
        return NULL;
    }
    /* Same directory, so the rename stays on one file system; not *.prom,
     * so the collector never reads it. */
    memcpy(m->tmp_path, path, len);
    memcpy(m->tmp_path + len, ".tmp", sizeof ".tmp");
    return m;
}

void dm_metrics_destroy(struct dm_metrics *m)
{
    if (m == NULL)
        return;
    free(m->table);
    free(m->slots);
    free(m->scratch);
    free(m->keep);
    free(m->tmp_path);
    free(m->text);
    free(m);
}

/* ---- counting --------------------------------------------------------------- */

static struct disk_series *disk_of(struct dm_metrics *m, const struct dm_event *ev)
{
    struct disk_series *d;

    for (int i = 0; i < m->n_disks; i++) {
        d = &m->disks[i];
        if (d->disk == ev->disk && strcmp(d->name, ev->disk_name) == 0)
            return d;
    }
    if (m->n_disks == MAX_DISKS) {
        m->other_disk_used = 1;
        return &m->other_disk;
    }
    d = &m->disks[m->n_disks++];
    d->disk = ev->disk;
    /* the source keeps disk names below DM_DISK_NAME_MAX (diskmon.h) */
    strncpy(d->name, ev->disk_name, sizeof d->name - 1);
    return d;
}

/* Add [s, e) to the disk's busy union (see SPAN_WINDOW). */
static void add_busy(struct disk_series *d, uint64_t s, uint64_t e)
{
    uint32_t lo = 0, hi = d->n_spans, first, last;

    if (s < d->forgotten_ns)
        s = d->forgotten_ns;
    if (e <= s)
        return;
    /* the first span ending at or after s */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (d->spans[mid].end_ns < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    first = last = lo;
    while (last < d->n_spans && d->spans[last].start_ns <= e)
        last++;
    if (last > first) {
        if (d->spans[first].start_ns < s)
            s = d->spans[first].start_ns;
        if (d->spans[last - 1].end_ns > e)
            e = d->spans[last - 1].end_ns;
        d->spans[first].start_ns = s;
        d->spans[first].end_ns = e;
        memmove(&d->spans[first + 1], &d->spans[last],
                (d->n_spans - last) * sizeof d->spans[0]);
        d->n_spans -= last - first - 1;
        return;
    }
    if (d->n_spans == SPAN_WINDOW) {
        uint32_t half = SPAN_WINDOW / 2;

        for (uint32_t i = 0; i < half; i++)
            d->busy_done_ns += d->spans[i].end_ns - d->spans[i].start_ns;
        d->forgotten_ns = d->spans[half - 1].end_ns;
        memmove(&d->spans[0], &d->spans[half], (SPAN_WINDOW - half) * sizeof d->spans[0]);
        d->n_spans -= half;
        if (first < half) { /* the new span lies in what was just forgotten */
            add_busy(d, s, e);
            return;
        }
        first -= half;
    }
    memmove(&d->spans[first + 1], &d->spans[first], (d->n_spans - first) * sizeof d->spans[0]);
    d->spans[first].start_ns = s;
    d->spans[first].end_ns = e;
    d->n_spans++;
}

static uint64_t busy_ns(const struct disk_series *d)
{
    uint64_t sum = d->busy_done_ns;

    for (uint32_t i = 0; i < d->n_spans; i++)
        sum += d->spans[i].end_ns - d->spans[i].start_ns;
    return sum;
}

/* FNV-1a (Fowler, Noll, Vo): names are short, so a simple hash will do. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Where a process name's counts go: its entry, or "(other)" when the table
 * has no room for another candidate. */
static struct proc_counts *proc_of(struct dm_metrics *m, const char *name)
{
    uint32_t h = name_hash(name), i = h & m->table_mask;

    for (;;) {
        struct proc_entry *e = &m->table[i];

        if (!e->used)
            break;
        if (e->hash == h && strcmp(e->name, name) == 0)
            return &e->counts;
        i = (i + 1) & m->table_mask;
    }
    if (m->table_used >= m->table_limit)
        return &m->other;
    m->table_used++;
    m->table[i].used = 1;
    m->table[i].hash = h;
    m->table[i].slot = -1;
    strncpy(m->table[i].name, name, sizeof m->table[i].name - 1);
    return &m->table[i].counts;
}

/* A request without a process name (a kernel flush, lazy writes). */
#define NO_PROCESS "(unknown)"

void dm_metrics_add(struct dm_metrics *m, const struct dm_event *ev)
{
    struct disk_series *d = disk_of(m, ev);
    unsigned rq = ev->request;
    unsigned b = 0;
    struct proc_counts *pc;

    if (rq >= DM_REQ_COUNT)
        return;
    d->requests[rq]++;
    d->bytes[rq] += ev->transfer_size;
    d->duration_ns[rq] += ev->duration_ns;
    while (b < N_BUCKETS && ev->duration_ns > buckets[b].ns)
        b++;
    d->bucket[rq][b]++;
    d->in_flight_ns += ev->duration_ns;
    add_busy(d, ev->time_ns > ev->duration_ns ? ev->time_ns - ev->duration_ns : 0,
             ev->time_ns);
    pc = proc_of(m, (ev->flags & DM_EV_HAS_PROCESS) && ev->process[0] != '\0'
                        ? ev->process
                        : NO_PROCESS);
    pc->requests[rq]++;
    pc->bytes[rq] += ev->transfer_size;
}

/* ---- promotion at a write ----------------------------------------------------- */

static uint64_t total_bytes(const struct proc_counts *c)
{
    uint64_t sum = 0;

    for (int r = 0; r < DM_REQ_COUNT; r++)
        sum += c->bytes[r];
    return sum;
}

static uint64_t total_requests(const struct proc_counts *c)
{
    uint64_t sum = 0;

    for (int r = 0; r < DM_REQ_COUNT; r++)
        sum += c->requests[r];
    return sum;
}

/* Most bytes first, then most requests, then by name: the same file for
 * the same input. */
static int by_bytes(const void *a, const void *b)
{
    const struct proc_entry *x = *(const struct proc_entry *const *)a;
    const struct proc_entry *y = *(const struct proc_entry *const *)b;
    uint64_t bx = total_bytes(&x->counts), by = total_bytes(&y->counts);
    uint64_t rx = total_requests(&x->counts), ry = total_requests(&y->counts);

    if (bx != by)
        return bx > by ? -1 : 1;
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void add_counts(struct proc_counts *to, const struct proc_counts *from)
{
    for (int r = 0; r < DM_REQ_COUNT; r++) {
        to->requests[r] += from->requests[r];
        to->bytes[r] += from->bytes[r];
    }
}

/* Fill free slots from the candidates, give the rest to "(other)", and
 * rebuild the table with the promoted names alone. */
static void promote(struct dm_metrics *m)
{
    uint32_t n = 0, size = m->table_mask + 1;

    for (uint32_t i = 0; i < size; i++)
        if (m->table[i].used && m->table[i].slot < 0)
            m->scratch[n++] = &m->table[i];
    if (n == 0)
        return;
    qsort(m->scratch, n, sizeof m->scratch[0], by_bytes);
    for (uint32_t i = 0; i < n; i++) {
        struct proc_entry *e = m->scratch[i];

        if (m->n_slots < m->top_k) {
            e->slot = (int)m->n_slots;
            m->slots[m->n_slots++] = e;
        } else {
            add_counts(&m->other, &e->counts);
        }
    }
    /* Rebuild: the promoted entries copied out, the table cleared, they
     * go back in. */
    for (unsigned k = 0; k < m->n_slots; k++)
        m->keep[k] = *m->slots[k];
    memset(m->table, 0, size * sizeof *m->table);
    for (unsigned k = 0; k < m->n_slots; k++) {
        uint32_t i = m->keep[k].hash & m->table_mask;

        while (m->table[i].used)
            i = (i + 1) & m->table_mask;
        m->table[i] = m->keep[k];
        m->slots[k] = &m->table[i];
    }
    m->table_used = m->n_slots;
}

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
 * name{k1="v1"[,k2="v2"][,le="x"]} value\n. Label values v1 and v2 are
 * escaped; le is one of ours and plain.
 */
static void sample(struct text *t, const char *name, const char *k1, const char *v1,
                   const char *k2, const char *v2, const char *le, enum value_kind kind,
                   uint64_t value)
{
    size_t need = strlen(name) + 64 + LABEL_MAX * (strlen(v1) + (v2 ? strlen(v2) : 0)) +
                  (le ? strlen(le) : 0) + 48;
    char *p = room(t, need), *start = p;

    if (p == NULL)
        return;
    p = dm_put_lit(p, name, strlen(name));
    if (k1 != NULL) {
        *p++ = '{';
        p = dm_put_lit(p, k1, strlen(k1));
        p = dm_put_lit(p, DM_LIT("=\""));
        p = dm_escape_label(p, v1);
        *p++ = '"';
        if (k2 != NULL) {
            *p++ = ',';
            p = dm_put_lit(p, k2, strlen(k2));
            p = dm_put_lit(p, DM_LIT("=\""));
            p = dm_escape_label(p, v2);
            *p++ = '"';
        }
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

/* The disk label: its name, else its number (as the event lines print it). */
static const char *disk_label(const struct disk_series *d, char *buf)
{
    char *end;

    if (d->name[0] != '\0')
        return d->name;
    end = dm_put_u64(buf, d->disk);
    *end = '\0';
    return buf;
}

/* Every disk series, "(other)" last when more disks than MAX_DISKS came. */
static int n_disk_rows(const struct dm_metrics *m)
{
    return m->n_disks + (m->other_disk_used ? 1 : 0);
}

static const struct disk_series *disk_row(const struct dm_metrics *m, int i,
                                          const char **label, char *buf)
{
    if (i == m->n_disks) {
        *label = "(other)";
        return &m->other_disk;
    }
    *label = disk_label(&m->disks[i], buf);
    return &m->disks[i];
}

static void disk_counter(struct text *t, const struct dm_metrics *m, const char *name,
                         size_t field)
{
    char buf[32];
    const char *label;

    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct disk_series *d = disk_row(m, i, &label, buf);
        const uint64_t *v = (const uint64_t *)(const void *)((const char *)d + field);

        for (int r = 0; r < DM_REQ_COUNT; r++)
            sample(t, name, "disk", label, "op", op_labels[r], NULL, V_COUNT, v[r]);
    }
}

static void histogram(struct text *t, const struct dm_metrics *m)
{
    static const char name[] = "diskmon_request_duration_seconds";
    char buf[32];
    const char *label;

    family(t, name, "histogram",
           "Time from issue to completion of disk requests, in seconds.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct disk_series *d = disk_row(m, i, &label, buf);

        for (int r = 0; r < DM_REQ_COUNT; r++) {
            uint64_t cum = 0;

            for (size_t b = 0; b < N_BUCKETS; b++) {
                cum += d->bucket[r][b];
                sample(t, "diskmon_request_duration_seconds_bucket", "disk", label, "op",
                       op_labels[r], buckets[b].le, V_COUNT, cum);
            }
            sample(t, "diskmon_request_duration_seconds_bucket", "disk", label, "op",
                   op_labels[r], "+Inf", V_COUNT, d->requests[r]);
            sample(t, "diskmon_request_duration_seconds_sum", "disk", label, "op",
                   op_labels[r], NULL, V_SECONDS, d->duration_ns[r]);
            sample(t, "diskmon_request_duration_seconds_count", "disk", label, "op",
                   op_labels[r], NULL, V_COUNT, d->requests[r]);
        }
    }
}

static void process_counter(struct text *t, const struct dm_metrics *m, const char *name,
                            int bytes)
{
    for (unsigned i = 0; i <= m->n_slots; i++) {
        const struct proc_counts *c = i < m->n_slots ? &m->slots[i]->counts : &m->other;
        const char *label = i < m->n_slots ? m->slots[i]->name : "(other)";

        for (int r = 0; r < DM_REQ_COUNT; r++)
            sample(t, name, "process", label, "op", op_labels[r], NULL, V_COUNT,
                   bytes ? c->bytes[r] : c->requests[r]);
    }
}

static size_t render(struct dm_metrics *m, const struct dm_metrics_run *run,
                     uint64_t wall_ns, struct text *t)
{
    char buf[32];
    const char *label;
    char *p;

    promote(m);
    t->m = m;
    t->len = 0;
    t->failed = 0;
    family(t, "diskmon_requests_total", "counter", "Disk requests completed.");
    disk_counter(t, m, "diskmon_requests_total", offsetof(struct disk_series, requests));
    family(t, "diskmon_bytes_total", "counter", "Bytes transferred by disk requests.");
    disk_counter(t, m, "diskmon_bytes_total", offsetof(struct disk_series, bytes));
    histogram(t, m);
    family(t, "diskmon_busy_seconds_total", "counter",
           "Time with at least one request in flight, in seconds; its rate is the "
           "utilisation.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct disk_series *d = disk_row(m, i, &label, buf);

        sample(t, "diskmon_busy_seconds_total", "disk", label, NULL, NULL, NULL, V_SECONDS,
               busy_ns(d));
    }
    family(t, "diskmon_in_flight_seconds_total", "counter",
           "Sum of the durations of disk requests, in seconds; its rate is the average "
           "queue size.");
    for (int i = 0; i < n_disk_rows(m); i++) {
        const struct disk_series *d = disk_row(m, i, &label, buf);

        sample(t, "diskmon_in_flight_seconds_total", "disk", label, NULL, NULL, NULL,
               V_SECONDS, d->in_flight_ns);
    }
    family(t, "diskmon_process_requests_total", "counter",
           "Disk requests by process image name; names past the top K are in (other).");
    process_counter(t, m, "diskmon_process_requests_total", 0);
    family(t, "diskmon_process_bytes_total", "counter",
           "Bytes of disk requests by process image name; names past the top K are in "
           "(other).");
    process_counter(t, m, "diskmon_process_bytes_total", 1);
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
    int rc;

    render(m, run, dm_wall_ns(), &t);
    if (t.failed)
        rc = DM_ENOMEM;
    else
        rc = dm_file_replace(m->path, m->tmp_path, m->text, t.len);
    if (rc != 0 && !m->failure_reported) {
        m->failure_reported = 1;
        fprintf(m->errf,
                "diskmon: cannot write the metrics file %s: %s (trying again each "
                "interval; reported once)\n",
                m->path, dm_strerror(rc));
        fflush(m->errf);
    }
    return rc;
}
