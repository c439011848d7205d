/*
 * reorder.c - the live reorder stage (see reorder.h).
 *
 * Each CPU's records arrive in time order, so the stage keeps one list per
 * CPU stream, in arrival order, and merges the lists: a small binary
 * min-heap over the streams, keyed by the (timestamp, sequence) of each
 * stream's first held record, names the oldest record held. A push appends
 * to its stream's list; a release takes the first record of the top
 * stream and sifts that one heap entry down. Both cost O(1) per record
 * plus O(log CPUs) per release, where one heap over all held records cost
 * O(log held) (16 levels at 65,536 records) on each side. The sequence
 * number, taken at each push, keeps records of equal timestamp in arrival
 * order across streams.
 *
 * First of all, the lane: one more list, which takes every record no older
 * than its own last one, whatever its CPU. While the buffers of different
 * CPUs do not overlap in time (and whenever records come in time order)
 * every record joins the lane, the heap holds that one stream, and a
 * release is a list pop and a key update; only a record older than
 * the lane's last (a buffer that overlaps one delivered before it) goes to
 * its CPU's list and so into the merge. Any list whose records are in
 * (timestamp, sequence) order merges correctly, so which list a record
 * joins changes the work, never the order records come out in.
 *
 * A record older than the last one held for its stream (the shared stream
 * of CPUs beyond n_cpus mixes several CPUs, and nothing is assumed of a
 * misbehaving one) cannot join the list; it goes to a second heap, of
 * records, and the oldest held record is the smaller of the two heaps'
 * tops. Records thus come out in exactly the (timestamp, sequence) order
 * of a single heap.
 *
 * Slots are preallocated and recycled through a stack of free slot
 * numbers; a slot carries its list link.
 */
#include <stdlib.h>
#include <string.h>

#include "decode/reorder.h"
#include "diskmon.h"

#define NO_SLOT UINT32_MAX

/* An entry of either heap: the key, and a slot number (records heap) or a
 * stream number (streams heap). */
struct heap_entry {
    uint64_t timestamp;
    uint64_t seq;
    uint32_t index;
};

/* 128 bytes on 64-bit builds (48 + 8 + 4 + 64, padded), in an array
 * aligned to SLOT_ALIGN: two cache lines. A payload longer than
 * DM_REORDER_INLINE is allocated (rec.payload points at it); a free slot's
 * rec.payload_len is 0. */
struct slot {
    struct dm_krecord rec;    /* rec.payload points at inline_buf or its own */
    uint64_t seq;
    uint32_t next;            /* next slot of the stream's list, or NO_SLOT */
    uint8_t inline_buf[DM_REORDER_INLINE];
};

_Static_assert(sizeof(void *) != 8 || sizeof(struct slot) == 128,
               "a slot is two cache lines on 64-bit builds");

/* A cache line (x86-64, ARMv8 cores: 64 bytes). */
#define SLOT_ALIGN 64u

static int is_big(const struct slot *s)
{
    return s->rec.payload_len > DM_REORDER_INLINE;
}

struct cpu_stream {
    uint64_t newest;          /* newest timestamp this CPU delivered */
    int seen;                 /* it delivered something */
    uint32_t head, tail;      /* its held records in order, or NO_SLOT */
};

struct dm_reorder {
    unsigned n_cpus;          /* CPU streams: n_cpus + 1 (the extra one); the
                               * lane is stream n_cpus + 1 */
    unsigned n_seen;          /* of the first n_cpus, how many delivered */
    uint64_t window_ticks;
    size_t max_held;

    struct heap_entry *streams; /* streams with held records, by first record */
    size_t n_streams;
    struct heap_entry *strays;  /* records out of their stream's order */
    size_t n_strays;
    size_t held;              /* records held in all */
    struct slot *slots;       /* SLOT_ALIGN-aligned, inside slots_mem */
    void *slots_mem;
    uint32_t *free_slots;     /* stack; n_free of them */
    size_t n_free;
    size_t big_bytes;         /* bytes of all slots' big payloads */

    struct cpu_stream *cpus;
    uint64_t seq;
    uint64_t last_released;   /* timestamp of the last record handed on */
    int released_any;
    uint64_t late;
};

/* ---- heaps ---------------------------------------------------------------- */

static int entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->timestamp < b->timestamp ||
           (a->timestamp == b->timestamp && a->seq < b->seq);
}

static void heap_push(struct heap_entry *heap, size_t *n, struct heap_entry e)
{
    size_t i = (*n)++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_less(&e, &heap[parent]))
            break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = e;
}

/* Put e at the root of heap[0..n) (n > 0) and sift it down. */
static void heap_replace_top(struct heap_entry *heap, size_t n, struct heap_entry e)
{
    size_t i = 0;

    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && entry_less(&heap[child + 1], &heap[child]))
            child++;
        if (!entry_less(&heap[child], &e))
            break;
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = e;
}

/* Remove the root (*n > 0). */
static void heap_pop(struct heap_entry *heap, size_t *n)
{
    if (--*n > 0)
        heap_replace_top(heap, *n, heap[*n]);
}

/* ---- holding and releasing ---------------------------------------------- */

/* Hand rec on, keeping the release clock. */
static int deliver(struct dm_reorder *ro, const struct dm_krecord *rec,
                   dm_reorder_fn fn, void *ctx)
{
    if (!ro->released_any || rec->timestamp > ro->last_released)
        ro->last_released = rec->timestamp;
    ro->released_any = 1;
    return fn(ctx, rec);
}

/* Whether the oldest held record is a stray (held > 0). */
static int oldest_is_stray(const struct dm_reorder *ro)
{
    return ro->n_streams == 0 ||
           (ro->n_strays > 0 && entry_less(&ro->strays[0], &ro->streams[0]));
}

/* Timestamp of the oldest held record (held > 0). */
static uint64_t oldest_timestamp(const struct dm_reorder *ro)
{
    return oldest_is_stray(ro) ? ro->strays[0].timestamp
                               : ro->streams[0].timestamp;
}

/* memcpy for the inline payloads (len <= DM_REORDER_INLINE): up to 64
 * bytes (every DiskIo payload) as two fixed-size copies that overlap, which
 * compilers turn into a few moves instead of a call; longer ones by
 * memcpy. Reads and writes only bytes [0, len). */
static inline void copy_inline(uint8_t *dst, const uint8_t *src, size_t len)
{
    if (len > 64) {
        memcpy(dst, src, len);
    } else if (len >= 32) {
        memcpy(dst, src, 32);
        memcpy(dst + len - 32, src + len - 32, 32);
    } else if (len >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + len - 16, src + len - 16, 16);
    } else if (len >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + len - 8, src + len - 8, 8);
    } else {
        for (size_t i = 0; i < len; i++)
            dst[i] = src[i];
    }
}

/* Hold slot number slot (filled in) for stream: in the lane when it is no
 * older than the lane's last record, else in its CPU's list when no older
 * than that one's last, else among the strays. */
static void hold(struct dm_reorder *ro, unsigned stream, uint32_t slot)
{
    struct cpu_stream *lane = &ro->cpus[ro->n_cpus + 1];
    struct cpu_stream *cs;
    struct slot *s = &ro->slots[slot];
    struct heap_entry e;

    e.timestamp = s->rec.timestamp;
    e.seq = s->seq;
    s->next = NO_SLOT;
    ro->held++;
    if (lane->head == NO_SLOT || e.timestamp >= ro->slots[lane->tail].rec.timestamp)
        stream = ro->n_cpus + 1;
    cs = &ro->cpus[stream];
    if (cs->head == NO_SLOT) {
        cs->head = cs->tail = slot;
        e.index = stream;
        heap_push(ro->streams, &ro->n_streams, e);
    } else if (e.timestamp >= ro->slots[cs->tail].rec.timestamp) {
        ro->slots[cs->tail].next = slot;
        cs->tail = slot;
    } else {
        e.index = slot;
        heap_push(ro->strays, &ro->n_strays, e);
    }
}

/* Release the oldest held record (held > 0). The slot is free again before
 * fn's result is looked at, so an error loses nothing held but that one. */
static int release_oldest(struct dm_reorder *ro, dm_reorder_fn fn, void *ctx)
{
    uint32_t slot;
    struct slot *s;
    int rc;

    if (oldest_is_stray(ro)) {
        slot = ro->strays[0].index;
        heap_pop(ro->strays, &ro->n_strays);
    } else {
        unsigned stream = ro->streams[0].index;
        struct cpu_stream *cs = &ro->cpus[stream];

        slot = cs->head;
        cs->head = ro->slots[slot].next;
        if (cs->head == NO_SLOT) {
            cs->tail = NO_SLOT;
            heap_pop(ro->streams, &ro->n_streams);
        } else {
            struct heap_entry e;

            e.timestamp = ro->slots[cs->head].rec.timestamp;
            e.seq = ro->slots[cs->head].seq;
            e.index = stream;
            if (ro->n_streams == 1) /* the lane alone, as a rule: no sift */
                ro->streams[0] = e;
            else
                heap_replace_top(ro->streams, ro->n_streams, e);
        }
    }
    ro->held--;
    s = &ro->slots[slot];
    rc = deliver(ro, &s->rec, fn, ctx);
    if (is_big(s)) {
        ro->big_bytes -= s->rec.payload_len;
        free((void *)(uintptr_t)s->rec.payload);
    }
    s->rec.payload_len = 0;
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
    ro->strays = malloc(max_held * sizeof *ro->strays);
    ro->streams = malloc(((size_t)n_cpus + 2) * sizeof *ro->streams);
    ro->slots_mem = calloc(max_held * sizeof *ro->slots + SLOT_ALIGN, 1);
    if (ro->slots_mem != NULL)
        ro->slots = (struct slot *)(void *)((uint8_t *)ro->slots_mem +
                                            (SLOT_ALIGN - (uintptr_t)ro->slots_mem % SLOT_ALIGN));
    ro->free_slots = malloc(max_held * sizeof *ro->free_slots);
    ro->cpus = calloc((size_t)n_cpus + 2, sizeof *ro->cpus);
    if (ro->strays == NULL || ro->streams == NULL || ro->slots == NULL ||
        ro->free_slots == NULL || ro->cpus == NULL) {
        dm_reorder_destroy(ro);
        return NULL;
    }
    for (unsigned i = 0; i <= n_cpus + 1; i++)
        ro->cpus[i].head = ro->cpus[i].tail = NO_SLOT;
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
    /* A free slot's payload_len is 0 (release_oldest): only held ones own
     * an allocation. */
    for (size_t i = 0; i < ro->max_held && ro->slots != NULL; i++)
        if (is_big(&ro->slots[i]))
            free((void *)(uintptr_t)ro->slots[i].rec.payload);
    free(ro->strays);
    free(ro->streams);
    free(ro->slots_mem);
    free(ro->free_slots);
    free(ro->cpus);
    free(ro);
}

int dm_reorder_push(struct dm_reorder *ro, unsigned cpu,
                    const struct dm_krecord *rec, dm_reorder_fn fn, void *ctx)
{
    unsigned stream = cpu < ro->n_cpus ? cpu : ro->n_cpus;
    struct cpu_stream *cs;
    struct slot *s;
    uint32_t slot;
    uint8_t *big = NULL;
    size_t len = rec->payload != NULL ? rec->payload_len : 0;
    int rc;

    /* CPUs beyond n_cpus share the extra stream (see reorder.h). */
    cs = &ro->cpus[stream];
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
        if (rec->timestamp < oldest_timestamp(ro))
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
    slot = ro->free_slots[--ro->n_free];
    s = &ro->slots[slot];
    s->seq = ro->seq++;
    s->rec = *rec;
    s->rec.payload_len = len;
    if (big != NULL) {
        s->rec.payload = big;
    } else {
        copy_inline(s->inline_buf, rec->payload, len);
        s->rec.payload = s->inline_buf;
    }
    hold(ro, stream, slot);
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
        uint64_t ts = oldest_timestamp(ro);
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
