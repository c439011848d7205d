/*
 * stats.c - the -s summary and the --hist histograms.
 *
 * Percentiles are exact (nearest rank over every duration) while a disk and
 * request has seen at most EXACT_MAX requests, which covers most traces and
 * short captures. Past that they come from a log-linear histogram (64
 * sub-buckets per power of two, as HdrHistogram does), so memory stays fixed
 * however long a live capture runs and the error is bounded at 1/64. The --hist histogram is the plain
 * log2 one that biolatency draws, in microseconds.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "views/disks.h"
#include "views/stats.h"
#include "views/unknown.h"
#include "views/view.h"

#define SUB_BITS 6                   /* 64 sub-buckets per octave */
#define SUB_COUNT (1u << SUB_BITS)
/* Values below SUB_COUNT are exact; each octave 2^e, e in [6, 63], adds
 * SUB_COUNT buckets. */
#define LAT_BUCKETS (SUB_COUNT + (64 - SUB_BITS) * SUB_COUNT)
#define LOG2_SLOTS 64
#define MAX_DISKS DM_STATS_DISKS
#define STARS 40                     /* bar width, as biolatency */
#define EXACT_MAX 65536              /* durations kept per disk and request (512 KiB) */

struct req_stats {
    uint64_t count;
    /* requests with a duration (not DM_EV_NO_DURATION): the percentiles'
     * population; a row without one is never a 0 s latency */
    uint64_t timed;
    uint64_t bytes;
    uint64_t max_ns;
    uint64_t *lat;                   /* LAT_BUCKETS counters, allocated on first use */
    uint64_t *exact;                 /* every duration while count <= EXACT_MAX */
    size_t exact_cap;
};

struct disk_stats {
    char name[DM_DISK_NAME_MAX + 16];
    int numeric;                     /* a Windows disk number: sort by value */
    uint32_t number;
    struct req_stats req[DM_REQ_COUNT];
    uint64_t log2_us[LOG2_SLOTS];
};

struct dm_stats {
    struct disk_stats *disks[MAX_DISKS];   /* n_disks, in the order first seen */
    int n_disks;
    /* Which disk an event is on (disks.h); of_index[i]: the figures of
     * the index's disk i, NULL until they could be allocated. */
    struct dm_disk_index index;
    struct dm_disk_id ids[MAX_DISKS];
    struct disk_stats *of_index[MAX_DISKS];
    int per_disk;                    /* dm_stats_create */
    int no_latency;                  /* dm_stats_no_latency */
    uint64_t count;
    uint64_t overflow;               /* events of disks past MAX_DISKS */
};

/* Rounded to the nearest microsecond, as the text output rounds its seconds
 * (0.0786839 s is 0.078684 there and 78.684 ms here). */
static uint64_t round_us(uint64_t ns)
{
    return ns / 1000u + (ns % 1000u >= 500u);
}

/* Index of the highest set bit of v > 0 (0 for 0). */
static unsigned log2_floor(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v == 0 ? 0 : 63u - (unsigned)__builtin_clzll(v);
#else
    unsigned e = 0;

    while (v >>= 1)
        e++;
    return e;
#endif
}

static size_t lat_bucket(uint64_t ns)
{
    unsigned e;

    if (ns < SUB_COUNT)
        return (size_t)ns;
    e = log2_floor(ns);
    return SUB_COUNT + (size_t)(e - SUB_BITS) * SUB_COUNT +
           (size_t)((ns >> (e - SUB_BITS)) - SUB_COUNT);
}

/* Largest value that falls in bucket b. */
static uint64_t lat_bucket_high(size_t b)
{
    size_t octave, sub;
    unsigned shift;

    if (b < SUB_COUNT)
        return b;
    octave = (b - SUB_COUNT) / SUB_COUNT;
    sub = (b - SUB_COUNT) % SUB_COUNT;
    shift = (unsigned)octave;
    return ((((uint64_t)SUB_COUNT + sub + 1) << shift) - 1);
}

struct dm_stats *dm_stats_create(int per_disk)
{
    struct dm_stats *st = calloc(1, sizeof *st);

    if (st != NULL) {
        st->per_disk = per_disk;
        st->index.ids = st->ids;
        st->index.max = MAX_DISKS;
    }
    return st;
}

void dm_stats_destroy(struct dm_stats *st)
{
    if (st == NULL)
        return;
    for (int i = 0; i < st->n_disks; i++) {
        for (int r = 0; r < DM_REQ_COUNT; r++) {
            free(st->disks[i]->req[r].lat);
            free(st->disks[i]->req[r].exact);
        }
        free(st->disks[i]);
    }
    free(st);
}

static struct disk_stats *find_disk(const struct dm_stats *st, const char *name)
{
    for (int i = 0; i < st->n_disks; i++)
        if (strcmp(st->disks[i]->name, name) == 0)
            return st->disks[i];
    return NULL;
}

/* The figures of disk i of the index x (disks.h), allocated when it is
 * new. NULL when out of memory or past MAX_DISKS (i < 0). */
static struct disk_stats *disk_of(struct dm_stats *st, const struct dm_disk_index *x, int i)
{
    struct disk_stats *d;

    if (i < 0 || i >= MAX_DISKS)
        return NULL;
    if (st->of_index[i] != NULL)
        return st->of_index[i];
    if ((d = calloc(1, sizeof *d)) == NULL)
        return NULL;
    /* The Disk column's text, once per disk. */
    snprintf(d->name, sizeof d->name, "%s", x->ids[i].text);
    d->numeric = x->ids[i].numeric;
    d->number = x->ids[i].number;
    st->disks[st->n_disks++] = d;
    st->of_index[i] = d;
    return d;
}

/* Keep the duration for exact percentiles, until there are too many; then
 * the histogram alone answers. Called before timed is incremented. */
static void keep_exact(struct req_stats *r, uint64_t ns)
{
    if (r->timed >= EXACT_MAX) {
        if (r->exact != NULL) {
            free(r->exact);
            r->exact = NULL;
        }
        return;
    }
    if (r->timed == r->exact_cap) {
        size_t cap = r->exact_cap == 0 ? 64 : r->exact_cap * 2;
        uint64_t *grown = r->timed == 0 || r->exact != NULL
                              ? realloc(r->exact, cap * sizeof *grown)
                              : NULL;

        if (grown == NULL) { /* out of memory: fall back to the histogram */
            free(r->exact);
            r->exact = NULL;
            r->exact_cap = SIZE_MAX;
            return;
        }
        r->exact = grown;
        r->exact_cap = cap;
    }
    if (r->exact != NULL)
        r->exact[r->timed] = ns;
}

/* Count ev on disk i of the index x: the per-disk figures. */
static void add_on(struct dm_stats *st, const struct dm_disk_index *x, int i,
                   const struct dm_event *ev)
{
    struct disk_stats *d = disk_of(st, x, i);
    struct req_stats *r;
    uint64_t us;

    if (d == NULL) {
        st->overflow++;
        return;
    }
    r = &d->req[ev->request];
    if (r->lat == NULL && (r->lat = calloc(LAT_BUCKETS, sizeof *r->lat)) == NULL) {
        st->overflow++;
        return;
    }
    r->count++;
    r->bytes += ev->transfer_size;
    if (ev->flags & DM_EV_NO_DURATION)
        return;
    keep_exact(r, ev->duration_ns);
    r->timed++;
    if (ev->duration_ns > r->max_ns)
        r->max_ns = ev->duration_ns;
    r->lat[lat_bucket(ev->duration_ns)]++;
    us = round_us(ev->duration_ns); /* the microseconds the text line shows */
    d->log2_us[us == 0 ? 0 : log2_floor(us)]++;
}

void dm_stats_add(struct dm_stats *st, const struct dm_event *ev)
{
    if (ev->request >= DM_REQ_COUNT)
        return;
    st->count++;
    if (st->per_disk)
        add_on(st, &st->index, dm_disk_index_of(&st->index, ev), ev);
}

void dm_stats_add_on(struct dm_stats *st, const struct dm_disk_index *x, int i,
                     const struct dm_event *ev)
{
    if (ev->request >= DM_REQ_COUNT)
        return;
    st->count++;
    if (st->per_disk)
        add_on(st, x, i, ev);
}

uint64_t dm_stats_count(const struct dm_stats *st)
{
    return st->count;
}

/* The k-th smallest of a[0..n) (k from 0), a reordered: Hoare's selection
 * ("FIND", CACM algorithm 65, 1961) in Wirth's form (Algorithms + Data
 * Structures = Programs, 1976), the pivot a[k]; linear on average where a
 * sort was n log n, and the summary asks for three percentiles of each
 * array, twice. Indices are signed: j may step below lo. */
static uint64_t kth_smallest(uint64_t *a, size_t n, size_t k)
{
    long lo = 0, hi = (long)n - 1, kk = (long)k;

    while (lo < hi) {
        uint64_t x = a[kk];
        long i = lo, j = hi;

        do {
            while (a[i] < x)
                i++;
            while (x < a[j])
                j--;
            if (i <= j) {
                uint64_t t = a[i];

                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk)
            lo = i;
        if (kk < i)
            hi = j;
    }
    return a[kk];
}

static uint64_t req_percentile(const struct req_stats *r, double pct)
{
    uint64_t rank, seen = 0;

    if (r->timed == 0)
        return 0;
    /* Nearest-rank: the smallest value with at least pct% at or below it. */
    rank = (uint64_t)((pct / 100.0) * (double)r->timed + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > r->timed)
        rank = r->timed;
    if (r->exact != NULL) {
        uint64_t *sorted = malloc((size_t)r->timed * sizeof *sorted);

        if (sorted != NULL) {
            uint64_t v;

            memcpy(sorted, r->exact, (size_t)r->timed * sizeof *sorted);
            v = kth_smallest(sorted, (size_t)r->timed, (size_t)(rank - 1));
            free(sorted);
            return v;
        }
    }
    for (size_t b = 0; b < LAT_BUCKETS; b++) {
        seen += r->lat[b];
        if (seen >= rank) {
            uint64_t high = lat_bucket_high(b);
            return high < r->max_ns ? high : r->max_ns;
        }
    }
    return r->max_ns;
}

uint64_t dm_stats_percentile(const struct dm_stats *st, const char *disk,
                             int request, double pct)
{
    const struct disk_stats *d = find_disk(st, disk);

    if (d == NULL || request < 0 || request >= DM_REQ_COUNT)
        return 0;
    return req_percentile(&d->req[request], pct);
}

static int disk_cmp(const void *a, const void *b)
{
    const struct disk_stats *x = *(const struct disk_stats *const *)a;
    const struct disk_stats *y = *(const struct disk_stats *const *)b;

    if (x->numeric && y->numeric)
        return x->number < y->number ? -1 : x->number > y->number;
    if (x->numeric != y->numeric)
        return x->numeric ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The disks in a stable order: numbers ascending, then names. */
static int sorted_disks(const struct dm_stats *st, struct disk_stats **out)
{
    memcpy(out, st->disks, (size_t)st->n_disks * sizeof *out);
    qsort(out, (size_t)st->n_disks, sizeof *out, disk_cmp);
    return st->n_disks;
}

/* The summary's columns. Each is as wide as its widest cell (title or
 * value), so the table stays narrow for the usual figures (about 75
 * columns for the sample traces; fixed widths made it 120) and never
 * loses its alignment for a large one. */
enum { COL_DISK, COL_REQ, COL_COUNT, COL_BYTES, COL_IOPS, COL_MBS, COL_P50, COL_P95,
       COL_P99, COL_MAX, N_COLS };
static const char *const col_titles[N_COLS] = {
    "Disk", "Request", "Count", "Bytes", "IOPS", "MB/s", "p50 ms", "p95 ms", "p99 ms",
    "max ms"};

static void ms_cell(char *buf, size_t cap, uint64_t ns)
{
    uint64_t us = round_us(ns);

    snprintf(buf, cap, "%" PRIu64 ".%03" PRIu64, us / 1000u, us % 1000u);
}

/* One cell of the row of disk d, request q. */
static void summary_cell(char *buf, size_t cap, const struct disk_stats *d, int q,
                         int col, double secs, int no_latency)
{
    const struct req_stats *r = &d->req[q];

    /* No duration to show (the source has none, or none of this row's
     * requests had one): "-", never 0. */
    if ((no_latency || r->timed == 0) && col >= COL_P50) {
        snprintf(buf, cap, "-");
        return;
    }
    switch (col) {
    case COL_DISK: snprintf(buf, cap, "%s", d->name); break;
    case COL_REQ: snprintf(buf, cap, "%s", dm_request_names[q]); break;
    case COL_COUNT: snprintf(buf, cap, "%" PRIu64, r->count); break;
    case COL_BYTES: snprintf(buf, cap, "%" PRIu64, r->bytes); break;
    case COL_IOPS:
        snprintf(buf, cap, "%.1f", secs > 0 ? (double)r->count / secs : 0.0);
        break;
    case COL_MBS:
        snprintf(buf, cap, "%.3f", secs > 0 ? (double)r->bytes / 1e6 / secs : 0.0);
        break;
    case COL_P50: ms_cell(buf, cap, req_percentile(r, 50)); break;
    case COL_P95: ms_cell(buf, cap, req_percentile(r, 95)); break;
    case COL_P99: ms_cell(buf, cap, req_percentile(r, 99)); break;
    default: ms_cell(buf, cap, r->max_ns); break;
    }
}

/* A line of cells: the first two left-aligned (names), the numbers right. */
static void put_cells(struct dm_text *out, const char *const *cells, const int *width)
{
    for (int c = 0; c < N_COLS; c++) {
        if (c > 0)
            dm_text_putc(out, ' ');
        if (c < COL_COUNT)
            dm_text_printf(out, "%-*s", width[c], cells[c]);
        else
            dm_text_printf(out, "%*s", width[c], cells[c]);
    }
    dm_text_putc(out, '\n');
}

void dm_stats_summary(const struct dm_stats *st, struct dm_text *out, uint64_t elapsed_ns,
                      const struct dm_loss *loss)
{
    struct disk_stats *disks[MAX_DISKS];
    int n = sorted_disks(st, disks), width[N_COLS];
    double secs = (double)elapsed_ns / 1e9;
    uint64_t lost = loss->ring_dropped + loss->source_lost;
    char text[N_COLS][48], unknown[256];
    const char *cells[N_COLS];

    for (int c = 0; c < N_COLS; c++) {
        width[c] = (int)strlen(col_titles[c]);
        cells[c] = text[c];
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            put_cells(out, col_titles, width);
        for (int i = 0; i < n; i++) {
            for (int q = 0; q < DM_REQ_COUNT; q++) {
                if (disks[i]->req[q].count == 0)
                    continue;
                for (int c = 0; c < N_COLS; c++) {
                    int len;

                    summary_cell(text[c], sizeof text[c], disks[i], q, c, secs,
                                 st->no_latency);
                    len = (int)strlen(text[c]);
                    if (len > width[c])
                        width[c] = len;
                }
                if (pass == 1)
                    put_cells(out, cells, width);
            }
        }
    }
    unknown[0] = '\0';
    dm_unknown_append(unknown, sizeof unknown, loss->unknown, "; ");
    dm_text_printf(out,
                   "%" PRIu64 " events in %.3f s; lost %" PRIu64 " (ring full %" PRIu64
                   ", source %" PRIu64 "); malformed records skipped %" PRIu64 "%s\n",
                   st->count, secs, lost, loss->ring_dropped, loss->source_lost,
                   loss->malformed, unknown);
    if (st->overflow > 0)
        dm_text_printf(out, "%" PRIu64 " events of more than %d disks not in the table\n",
                       st->overflow, MAX_DISKS);
    if (st->no_latency)
        dm_text_printf(out, "%s\n", DM_NO_LATENCY_NOTE);
}

void dm_stats_no_latency(struct dm_stats *st)
{
    st->no_latency = 1;
}

static void hist_bar(struct dm_text *out, uint64_t v, uint64_t max)
{
    int stars = max > 0 ? (int)((v * STARS + max - 1) / max) : 0;

    if (stars > STARS)
        stars = STARS;
    dm_text_putc(out, '|');
    for (int i = 0; i < STARS; i++)
        dm_text_putc(out, i < stars ? '*' : ' ');
    dm_text_putc(out, '|');
}

void dm_stats_hist(const struct dm_stats *st, struct dm_text *out)
{
    struct disk_stats *disks[MAX_DISKS];
    int n = sorted_disks(st, disks);

    if (st->no_latency) {
        dm_text_puts(out, "no latency in this trace: no histogram\n");
        return;
    }
    for (int i = 0; i < n; i++) {
        const uint64_t *h = disks[i]->log2_us;
        uint64_t max = 0;
        int top = -1;

        for (int s = 0; s < LOG2_SLOTS; s++) {
            if (h[s] > max)
                max = h[s];
            if (h[s] > 0)
                top = s;
        }
        if (i > 0)
            dm_text_putc(out, '\n');
        dm_text_printf(out, "disk = %s\n", disks[i]->name);
        if (top < 0) { /* its rows had no duration (DM_EV_NO_DURATION) */
            dm_text_puts(out, "no latency: none of its requests has a duration\n");
            continue;
        }
        dm_text_printf(out, "%24s : %-8s %s\n", "usecs", "count", "distribution");
        for (int s = 0; s <= top; s++) {
            /* Slot 0 holds 0 and 1 us; slot s >= 1 holds [2^s, 2^(s+1)). */
            uint64_t low = s == 0 ? 0 : (uint64_t)1 << s;
            uint64_t high = ((uint64_t)1 << (s + 1)) - 1;

            dm_text_printf(out, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " ", low,
                           high, h[s]);
            hist_bar(out, h[s], max);
            dm_text_putc(out, '\n');
        }
    }
}
