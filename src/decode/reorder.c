/*
 * reorder.c - the live reorder stage (see reorder.h).
 *
 * A binary min-heap of (timestamp, sequence, slot) orders the held records;
 * the sequence number, taken at each push, keeps records of equal timestamp
 * in arrival order (a heap alone is not stable). The heap entries carry the
 * key themselves so sifting never touches the slots. Slots are preallocated
 * and recycled through a stack of free slot numbers.
 */
#include <stdlib.h>
#include <string.h>

#include "decode/reorder.h"
#include "diskmon.h"

struct heap_entry {
    uint64_t timestamp;
    uint64_t seq;
    uint32_t slot;
};

struct slot {
    struct dm_krecord rec;    /* rec.payload points at inline_buf or big */
    uint8_t *big;             /* allocated payload, or NULL */
    uint8_t inline_buf[DM_REORDER_INLINE];
};

struct cpu_stream {
    uint64_t newest;          /* newest timestamp this CPU delivered */
    int seen;                 /* it delivered something */
};

struct dm_reorder {
    unsigned n_cpus;          /* streams: n_cpus + 1 (the extra one) */
    unsigned n_seen;          /* of the first n_cpus, how many delivered */
    uint64_t window_ticks;
    size_t max_held;

    struct heap_entry *heap;  /* max_held entries, held of them in use */
    size_t held;
    struct slot *slots;
    uint32_t *free_slots;     /* stack; n_free of them */
    size_t n_free;
    size_t big_bytes;         /* bytes of all slots' big payloads */

    struct cpu_stream *cpus;
    uint64_t seq;
    uint64_t last_released;   /* timestamp of the last record handed on */
    int released_any;
    uint64_t late;
};

/* ---- heap ----------------------------------------------------------------- */

static int entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->timestamp < b->timestamp ||
           (a->timestamp == b->timestamp && a->seq < b->seq);
}

static void heap_push(struct dm_reorder *ro, struct heap_entry e)
{
    size_t i = ro->held++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_less(&e, &ro->heap[parent]))
            break;
        ro->heap[i] = ro->heap[parent];
        i = parent;
    }
    ro->heap[i] = e;
}

/* Remove the root (held > 0). */
static void heap_pop(struct dm_reorder *ro)
{
    struct heap_entry last = ro->heap[--ro->held];
    size_t i = 0, n = ro->held;

    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && entry_less(&ro->heap[child + 1], &ro->heap[child]))
            child++;
        if (!entry_less(&ro->heap[child], &last))
            break;
        ro->heap[i] = ro->heap[child];
        i = child;
    }
    if (n > 0)
        ro->heap[i] = last;
}

/* ---- release ------------------------------------------------------------- */

/* Hand rec on, keeping the release clock. */
static int deliver(struct dm_reorder *ro, const struct dm_krecord *rec,
                   dm_reorder_fn fn, void *ctx)
{
    if (!ro->released_any || rec->timestamp > ro->last_released)
        ro->last_released = rec->timestamp;
    ro->released_any = 1;
    return fn(ctx, rec);
}

/* Release the oldest held record (held > 0). The slot is free again before
 * fn's result is looked at, so an error loses nothing held but that one. */
static int release_oldest(struct dm_reorder *ro, dm_reorder_fn fn, void *ctx)
{
    uint32_t slot = ro->heap[0].slot;
    struct slot *s = &ro->slots[slot];
    int rc;

    heap_pop(ro);
    rc = deliver(ro, &s->rec, fn, ctx);
    if (s->big != NULL) {
        ro->big_bytes -= s->rec.payload_len;
        free(s->big);
        s->big = NULL;
    }
    ro->free_slots[ro->n_free++] = slot;
    return rc < 0 ? rc : 0;
}

/* The watermark: the smallest newest-timestamp over the CPUs, valid only
 * once every CPU delivered (returns 0 then, else 1 with *mark set). */
static int watermark(const struct dm_reorder *ro, uint64_t *mark)
{
    uint64_t m = UINT64_MAX;

    if (ro->n_seen < ro->n_cpus)
        return 0;
    for (unsigned i = 0; i <= ro->n_cpus; i++)
        if (ro->cpus[i].seen && ro->cpus[i].newest < m)
            m = ro->cpus[i].newest;
    *mark = m;
    return 1;
}

/* ---- public --------------------------------------------------------------- */

struct dm_reorder *dm_reorder_create(unsigned n_cpus, uint64_t window_ticks,
                                     size_t max_held)
{
    struct dm_reorder *ro;

    if (max_held == 0 || max_held > UINT32_MAX || n_cpus > DM_REORDER_MAX_CPUS)
        return NULL;
    if (n_cpus == 0)
        n_cpus = 1;
    ro = calloc(1, sizeof *ro);
    if (ro == NULL)
        return NULL;
    ro->n_cpus = n_cpus;
    ro->window_ticks = window_ticks;
    ro->max_held = max_held;
    ro->heap = malloc(max_held * sizeof *ro->heap);
    ro->slots = calloc(max_held, sizeof *ro->slots);
    ro->free_slots = malloc(max_held * sizeof *ro->free_slots);
    ro->cpus = calloc((size_t)n_cpus + 1, sizeof *ro->cpus);
    if (ro->heap == NULL || ro->slots == NULL || ro->free_slots == NULL ||
        ro->cpus == NULL) {
        dm_reorder_destroy(ro);
        return NULL;
    }
    /* Hand out low slot numbers first: fewer pages touched at low rates. */
    for (size_t i = 0; i < max_held; i++)
        ro->free_slots[i] = (uint32_t)(max_held - 1 - i);
    ro->n_free = max_held;
    return ro;
}

void dm_reorder_destroy(struct dm_reorder *ro)
{
    if (ro == NULL)
        return;
    for (size_t i = 0; i < ro->held && ro->slots != NULL; i++)
        free(ro->slots[ro->heap[i].slot].big);
    free(ro->heap);
    free(ro->slots);
    free(ro->free_slots);
    free(ro->cpus);
    free(ro);
}

int dm_reorder_push(struct dm_reorder *ro, unsigned cpu,
                    const struct dm_krecord *rec, dm_reorder_fn fn, void *ctx)
{
    struct cpu_stream *cs;
    struct heap_entry e;
    struct slot *s;
    uint8_t *big = NULL;
    size_t len = rec->payload != NULL ? rec->payload_len : 0;
    int rc;

    /* CPUs beyond n_cpus share the extra stream (see reorder.h). */
    cs = &ro->cpus[cpu < ro->n_cpus ? cpu : ro->n_cpus];
    if (!cs->seen) {
        cs->seen = 1;
        cs->newest = rec->timestamp;
        if (cpu < ro->n_cpus)
            ro->n_seen++;
    } else if (rec->timestamp > cs->newest) {
        cs->newest = rec->timestamp;
    }

    if (ro->released_any && rec->timestamp < ro->last_released) {
        ro->late++;
        return deliver(ro, rec, fn, ctx);
    }

    /* Make room: a free slot, and room under the cap for a long payload.
     * When the new record is older than everything held, it is the one to
     * go. */
    while (ro->held > 0 &&
           (ro->n_free == 0 ||
            (len > DM_REORDER_INLINE &&
             ro->big_bytes + len > DM_REORDER_BIG_BYTES))) {
        if (rec->timestamp < ro->heap[0].timestamp)
            return deliver(ro, rec, fn, ctx);
        rc = release_oldest(ro, fn, ctx);
        if (rc < 0)
            return rc;
    }

    if (len > DM_REORDER_INLINE) {
        big = malloc(len);
        if (big == NULL)
            return DM_ENOMEM;
        memcpy(big, rec->payload, len);
        ro->big_bytes += len;
    }
    e.slot = ro->free_slots[--ro->n_free];
    e.timestamp = rec->timestamp;
    e.seq = ro->seq++;
    s = &ro->slots[e.slot];
    s->rec = *rec;
    s->rec.payload_len = len;
    s->big = big;
    if (big != NULL) {
        s->rec.payload = big;
    } else {
        if (len > 0)
            memcpy(s->inline_buf, rec->payload, len);
        s->rec.payload = s->inline_buf;
    }
    heap_push(ro, e);
    return 0;
}

int dm_reorder_release(struct dm_reorder *ro, uint64_t now_ticks,
                       dm_reorder_fn fn, void *ctx)
{
    uint64_t mark = 0, aged = 0;
    int has_mark = watermark(ro, &mark), has_aged = now_ticks >= ro->window_ticks;
    int rc;

    /* ts + window <= now, written so that nothing overflows. */
    if (has_aged)
        aged = now_ticks - ro->window_ticks;
    while (ro->held > 0) {
        uint64_t ts = ro->heap[0].timestamp;
        if (!(has_mark && ts <= mark) && !(has_aged && ts <= aged))
            break;
        rc = release_oldest(ro, fn, ctx);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int dm_reorder_flush(struct dm_reorder *ro, dm_reorder_fn fn, void *ctx)
{
    while (ro->held > 0) {
        int rc = release_oldest(ro, fn, ctx);
        if (rc < 0)
            return rc;
    }
    return 0;
}

uint64_t dm_reorder_late(const struct dm_reorder *ro)
{
    return ro->late;
}

size_t dm_reorder_held(const struct dm_reorder *ro)
{
    return ro->held;
}

uint64_t dm_reorder_window_ticks(uint64_t ticks_per_sec, unsigned flush_timer_s)
{
    uint64_t ms = (uint64_t)(flush_timer_s != 0 ? flush_timer_s : 1u) * 1000u +
                  DM_REORDER_MARGIN_MS;

    /* ticks_per_sec * ms / 1000 without overflow for any real clock
     * (QPC 10 MHz, FILETIME 10 MHz, cycle counters of a few GHz). */
    return ticks_per_sec / 1000u * ms + ticks_per_sec % 1000u * ms / 1000u;
}
