/*
 * pairing.c - the (device, sector) table that pairs block request starts
 * with their completions. The rules are in pairing.h.
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "linux/pairing.h"

#define NS_PER_SEC 1000000000ull
/* A request still open after 30 s has met blk-mq's default request timeout
 * (30 s when the driver sets none, blk_mq_init_allocated_queue): its
 * completion is not coming as an ordinary one. */
#define DEFAULT_START_TTL_NS (30 * NS_PER_SEC)
/* The reader reads every CPU's ring at least every 100 ms, so a start that
 * is not there 2 s after its completion was lost. */
#define DEFAULT_DONE_TTL_NS (2 * NS_PER_SEC)
/* A start more than 100 ms older than a completion is passed over when a
 * start of the same key younger than that is open: its own completion was
 * lost (the kernel drops a tracepoint sample now and then without a
 * PERF_RECORD_LOST, seen on 6.18 with perf record too), and pairing it
 * would give the younger request a made-up latency, and the next one too. */
#define STALE_NS (NS_PER_SEC / 10)
/* When the table is full: expire anything older than this first. */
#define FULL_TTL_NS (1 * NS_PER_SEC)
#define MIN_SLOTS 16u
#define MAX_SLOTS (1u << 24)

int dm_pairing_init(struct dm_pairing *p, uint32_t slots)
{
    uint32_t n = MIN_SLOTS;
    unsigned bits = 4; /* log2(MIN_SLOTS) */

    memset(p, 0, sizeof *p);
    while (n < slots && n < MAX_SLOTS) {
        n <<= 1;
        bits++;
    }
    p->slots = calloc(n, sizeof *p->slots);
    if (p->slots == NULL)
        return DM_ENOMEM;
    p->mask = n - 1;
    p->shift = 64 - bits;
    p->limit = n / 4 * 3;
    p->start_ttl_ns = DEFAULT_START_TTL_NS;
    p->done_ttl_ns = DEFAULT_DONE_TTL_NS;
    return 0;
}

void dm_pairing_free(struct dm_pairing *p)
{
    free(p->slots);
    p->slots = NULL;
}

/* Fibonacci hashing of the key: the top bits of a multiply by 2^64/phi
 * spread sectors that are all multiples of 8 over the whole table. */
static uint32_t home(const struct dm_pairing *p, uint32_t dev, uint64_t sector)
{
    uint64_t h = (sector ^ ((uint64_t)dev << 40) ^ ((uint64_t)dev >> 24)) *
                 0x9E3779B97F4A7C15ull;

    return (uint32_t)(h >> p->shift);
}

void dm_pairing_prefetch(const struct dm_pairing *p, uint32_t dev, uint64_t sector)
{
#if defined(__GNUC__)
    __builtin_prefetch(&p->slots[home(p, dev, sector)]);
#else
    (void)p;
    (void)dev;
    (void)sector;
#endif
}

/* Remove slot i, shifting later entries of the run back so no probe
 * sequence is broken (Knuth 6.4, algorithm R). */
static void remove_at(struct dm_pairing *p, uint32_t i)
{
    uint32_t j = i;

    for (;;) {
        uint32_t k;

        j = (j + 1) & p->mask;
        if (p->slots[j].state == DM_PAIR_EMPTY)
            break;
        k = home(p, p->slots[j].dev, p->slots[j].sector);
        /* Entry j may fill the hole at i unless its home lies cyclically
         * in (i, j]. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        p->slots[i] = p->slots[j];
        i = j;
    }
    p->slots[i].state = DM_PAIR_EMPTY;
    p->used--;
}

static void count_expired(struct dm_pairing *p, const struct dm_pair_entry *e)
{
    if (e->state == DM_PAIR_START)
        p->counts.expired_starts++;
    else if (e->quiet)
        p->counts.quiet_dones++;
    else if (e->time_ns < p->grace_until_ns)
        p->counts.early_dones++;
    else
        p->counts.expired_dones++;
}

/* Remove entries older than the given limits (0: none of that kind). */
static void expire_before(struct dm_pairing *p, uint64_t start_before,
                          uint64_t done_before)
{
    uint32_t i = 0;

    if (p->used == 0)
        return;
    while (i <= p->mask) {
        const struct dm_pair_entry *e = &p->slots[i];
        uint64_t before = e->state == DM_PAIR_START ? start_before : done_before;

        if (e->state != DM_PAIR_EMPTY && e->time_ns < before) {
            count_expired(p, e);
            /* A later entry may move into slot i: look at it again. */
            remove_at(p, i);
            continue;
        }
        i++;
    }
}

static uint64_t minus(uint64_t now, uint64_t ttl)
{
    return now > ttl ? now - ttl : 0;
}

void dm_pairing_expire(struct dm_pairing *p, uint64_t now_ns)
{
    expire_before(p, minus(now_ns, p->start_ttl_ns), minus(now_ns, p->done_ttl_ns));
}

void dm_pairing_finish(struct dm_pairing *p)
{
    for (uint32_t i = 0; i <= p->mask; i++) {
        struct dm_pair_entry *e = &p->slots[i];

        if (e->state == DM_PAIR_START)
            p->counts.in_flight++;
        else if (e->state == DM_PAIR_DONE)
            count_expired(p, e);
        e->state = DM_PAIR_EMPTY;
    }
    p->used = 0;
}

/* Insert e (state set by the caller). Makes room by expiring old entries
 * when the table is at its limit; returns 0 when there is still none. */
static int insert(struct dm_pairing *p, const struct dm_pair_entry *e)
{
    uint32_t i;

    if (p->used >= p->limit) {
        uint64_t before = minus(e->time_ns, FULL_TTL_NS);

        expire_before(p, before, before);
        if (p->used >= p->limit)
            return 0;
    }
    i = home(p, e->dev, e->sector);
    while (p->slots[i].state != DM_PAIR_EMPTY)
        i = (i + 1) & p->mask;
    p->slots[i] = *e;
    p->used++;
    return 1;
}

/* Which entry of a key's run a lookup wants. */
enum pick {
    PICK_OLDEST_START_BEFORE,   /* START, time <= t, smallest time, preferring
                                   those no older than STALE_NS */
    PICK_NEWEST_START_BEFORE,   /* START, time <= t, largest time */
    PICK_OLDEST_UNISSUED_BEFORE,/* START, time <= t, issue_ns == 0, smallest */
    PICK_OLDEST_DONE_AFTER      /* DONE, time >= t, smallest time */
};

/* Whether candidate e is a better pick than the current best b. */
static int better(const struct dm_pair_entry *b, const struct dm_pair_entry *e,
                  uint64_t t, enum pick how)
{
    if (how == PICK_NEWEST_START_BEFORE)
        return e->time_ns > b->time_ns;
    if (how == PICK_OLDEST_START_BEFORE) {
        int b_fresh = t - b->time_ns <= STALE_NS, e_fresh = t - e->time_ns <= STALE_NS;

        if (b_fresh != e_fresh)
            return e_fresh;
    }
    return e->time_ns < b->time_ns;
}

/* The slot of the wanted entry for (dev, sector), or -1. */
static long find(const struct dm_pairing *p, uint32_t dev, uint64_t sector,
                 uint64_t t, enum pick how)
{
    long best = -1;
    uint32_t i = home(p, dev, sector);

    for (; p->slots[i].state != DM_PAIR_EMPTY; i = (i + 1) & p->mask) {
        const struct dm_pair_entry *e = &p->slots[i];
        int ok;

        if (e->dev != dev || e->sector != sector)
            continue;
        switch (how) {
        case PICK_OLDEST_DONE_AFTER:
            ok = e->state == DM_PAIR_DONE && e->time_ns >= t;
            break;
        case PICK_OLDEST_UNISSUED_BEFORE:
            ok = e->state == DM_PAIR_START && e->time_ns <= t && e->issue_ns == 0;
            break;
        default:
            ok = e->state == DM_PAIR_START && e->time_ns <= t;
            break;
        }
        if (!ok)
            continue;
        if (best < 0 || better(&p->slots[best], e, t, how))
            best = (long)i;
    }
    return best;
}

/* Nonzero when the same start (key, time and thread) is already open: the
 * kernel sometimes delivers one tracepoint sample twice (seen on 6.18 with
 * perf record too: two identical block_io_start records). */
static int is_duplicate(const struct dm_pairing *p, const struct dm_pair_entry *start)
{
    for (uint32_t i = home(p, start->dev, start->sector);
         p->slots[i].state != DM_PAIR_EMPTY; i = (i + 1) & p->mask) {
        const struct dm_pair_entry *e = &p->slots[i];

        if (e->state == DM_PAIR_START && e->dev == start->dev &&
            e->sector == start->sector && e->time_ns == start->time_ns &&
            e->tid == start->tid)
            return 1;
    }
    return 0;
}

int dm_pairing_start(struct dm_pairing *p, const struct dm_pair_entry *start,
                     struct dm_pair_entry *done)
{
    long i = find(p, start->dev, start->sector, start->time_ns, PICK_OLDEST_DONE_AFTER);
    struct dm_pair_entry e;

    if (i < 0 && is_duplicate(p, start)) {
        p->counts.duplicates++;
        return DM_PAIR_IGNORED;
    }

    if (i >= 0) {
        *done = p->slots[i];
        remove_at(p, (uint32_t)i);
        p->counts.matched++;
        return DM_PAIR_MATCHED;
    }
    e = *start;
    e.state = DM_PAIR_START;
    if (!insert(p, &e)) {
        p->counts.full++;
        return DM_PAIR_FULL;
    }
    return DM_PAIR_STORED;
}

int dm_pairing_done(struct dm_pairing *p, const struct dm_pair_entry *done,
                    int park, struct dm_pair_entry *start)
{
    long i = find(p, done->dev, done->sector, done->time_ns, PICK_OLDEST_START_BEFORE);
    struct dm_pair_entry e;

    if (i >= 0) {
        *start = p->slots[i];
        remove_at(p, (uint32_t)i);
        p->counts.matched++;
        return DM_PAIR_MATCHED;
    }
    if (!park)
        return DM_PAIR_IGNORED;
    memset(&e, 0, sizeof e);
    e.dev = done->dev;
    e.sector = done->sector;
    e.time_ns = done->time_ns;
    e.nr_sector = done->nr_sector;
    e.quiet = done->quiet;
    e.state = DM_PAIR_DONE;
    if (!insert(p, &e)) {
        p->counts.full++;
        return DM_PAIR_FULL;
    }
    return DM_PAIR_STORED;
}

int dm_pairing_issue(struct dm_pairing *p, uint32_t dev, uint64_t sector,
                     uint64_t time_ns)
{
    long i = find(p, dev, sector, time_ns, PICK_OLDEST_UNISSUED_BEFORE);

    if (i < 0)
        i = find(p, dev, sector, time_ns, PICK_NEWEST_START_BEFORE);
    if (i < 0)
        return 0;
    p->slots[i].issue_ns = time_ns;
    return 1;
}

int dm_pairing_merge(struct dm_pairing *p, uint32_t dev, uint64_t sector,
                     uint64_t time_ns)
{
    long i = find(p, dev, sector, time_ns, PICK_NEWEST_START_BEFORE);

    if (i < 0)
        return 0;
    remove_at(p, (uint32_t)i);
    p->counts.merged++;
    return 1;
}

int dm_pairing_move(struct dm_pairing *p, uint32_t dev, uint64_t from_sector,
                    uint64_t to_sector, uint64_t time_ns)
{
    long i = find(p, dev, from_sector, time_ns, PICK_NEWEST_START_BEFORE);
    struct dm_pair_entry e;
    uint64_t grow;

    if (i < 0 || to_sector > from_sector)
        return 0;
    e = p->slots[i];
    remove_at(p, (uint32_t)i);
    grow = from_sector - to_sector;
    e.sector = to_sector;
    e.nr_sector = grow > UINT32_MAX - e.nr_sector ? UINT32_MAX
                                                  : e.nr_sector + (uint32_t)grow;
    /* The slot just freed guarantees room. */
    insert(p, &e);
    return 1;
}
