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
/* Where a table starts: 256 entries of 64 bytes are 16 KiB, half of a
 * core's L1 data cache on the machines measured (AMD EPYC, 32 KiB), and
 * hold the requests in flight at iodepth 32 at a load of an eighth. A
 * larger table costs a cache miss on nearly every lookup at a high request
 * rate (random sectors hash to random slots): a 16384-slot (1 MiB) table
 * spent 19% of the reader's time in the first load of a key's slot. */
#define FIRST_SLOTS 256u
/* Below the most slots asked for, the table doubles at half full: linear
 * probing then looks at about 2.5 slots for a key that is not there (Knuth
 * 6.4, algorithm L), which is every start's lookup. At an expiry pass a
 * table a sixteenth full halves (or more) down to a quarter full. */
#define SHRINK_DEN 16u

/* Fibonacci hashing of the key: the top bits of a multiply by 2^64/phi
 * spread sectors that are all multiples of 8 over the whole table. */
static uint32_t home(const struct dm_pairing *p, uint32_t dev, uint64_t sector)
{
    uint64_t h = (sector ^ ((uint64_t)dev << 40) ^ ((uint64_t)dev >> 24)) *
                 0x9E3779B97F4A7C15ull;

    return (uint32_t)(h >> p->shift);
}

_Static_assert(sizeof(struct dm_pair_entry) == 64, "one cache line per entry");

static uint32_t pow2_at_least(uint32_t want, uint32_t lo, uint32_t hi)
{
    uint32_t n = lo;

    while (n < want && n < hi)
        n <<= 1;
    return n;
}

static void set_size(struct dm_pairing *p, struct dm_pair_entry *slots, uint32_t n)
{
    unsigned bits = 0;

    while ((1u << bits) < n)
        bits++;
    p->slots = slots;
    p->mask = n - 1;
    p->shift = 64 - bits;
    p->limit = n < p->max_slots ? n / 2 : n / 4 * 3;
}

static struct dm_pair_entry *alloc_slots(uint32_t n)
{
    /* Cache-line aligned, so a slot is one line. n * 64 is a multiple of
     * the alignment, as aligned_alloc asks. */
    struct dm_pair_entry *s = aligned_alloc(64, (size_t)n * sizeof *s);

    if (s != NULL)
        memset(s, 0, (size_t)n * sizeof *s);
    return s;
}

int dm_pairing_init(struct dm_pairing *p, uint32_t slots)
{
    uint32_t first;
    struct dm_pair_entry *s;

    memset(p, 0, sizeof *p);
    p->max_slots = pow2_at_least(slots, MIN_SLOTS, MAX_SLOTS);
    first = p->max_slots < FIRST_SLOTS ? p->max_slots : FIRST_SLOTS;
    p->min_slots = first;
    s = alloc_slots(first);
    if (s == NULL)
        return DM_ENOMEM;
    set_size(p, s, first);
    p->start_ttl_ns = DEFAULT_START_TTL_NS;
    p->done_ttl_ns = DEFAULT_DONE_TTL_NS;
    return 0;
}

void dm_pairing_free(struct dm_pairing *p)
{
    free(p->slots);
    p->slots = NULL;
}

/* Move every entry into a table of n slots. Entries of one key stay in one
 * run (each is placed by probing from its new home), and find() picks by
 * time, not by place, so the order within a run does not matter. Returns 0,
 * or -1 with the table unchanged when there is no memory. */
static int resize(struct dm_pairing *p, uint32_t n)
{
    struct dm_pair_entry *old = p->slots, *s = alloc_slots(n);
    uint32_t old_n = p->mask + 1;

    if (s == NULL)
        return -1;
    set_size(p, s, n);
    for (uint32_t j = 0; j < old_n; j++) {
        uint32_t i;

        if (old[j].state == DM_PAIR_EMPTY)
            continue;
        i = home(p, old[j].dev, old[j].sector);
        while (s[i].state != DM_PAIR_EMPTY)
            i = (i + 1) & p->mask;
        s[i] = old[j];
    }
    free(old);
    return 0;
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
    uint32_t n = p->mask + 1;

    expire_before(p, minus(now_ns, p->start_ttl_ns), minus(now_ns, p->done_ttl_ns));
    /* After a burst, back to a table that stays in the cache; a failed
     * allocation leaves the larger one, which works as well. */
    if (n > p->min_slots && p->used <= n / SHRINK_DEN)
        resize(p, pow2_at_least(p->used * 4, p->min_slots, n / 2));
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

    /* Below the most slots asked for the table doubles; at it (or without
     * the memory to double) old entries make room. */
    if (p->used >= p->limit &&
        (p->mask + 1 >= p->max_slots || resize(p, (p->mask + 1) * 2) != 0)) {
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
