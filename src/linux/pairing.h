/*
 * pairing.h - matching each block request's start with its completion.
 *
 * The kernel reports a request twice (start and completion) and the two
 * records may come from different CPUs, so the reader can see them in
 * either order. Tracepoints carry no request id, so, as biosnoop does
 * without a request pointer, requests are keyed by (device, sector):
 *
 *   - a start is kept until its completion comes;
 *   - a completion with no start yet is parked for a short while, since its
 *     start may still be in another CPU's ring;
 *   - several requests with the same key (two flushes, a read and a write of
 *     one sector) pair oldest first: a completion takes the oldest start that
 *     is not later than itself (passing over starts more than 100 ms old when
 *     one younger than that is open: their completion was lost), a start the oldest
 *     parked completion that is not earlier than itself;
 *   - a start identical to an open one (same key, time and thread) is a
 *     sample the kernel delivered twice and is dropped;
 *   - entries older than a time-to-live are expired and counted, so a start
 *     whose completion never comes is not kept forever.
 *
 * The table is an open-addressing hash table (linear probing, backward-shift
 * deletion, no tombstones): all entries of one key lie in one run of slots
 * from the key's home slot. It starts small, so that it stays in the cache
 * (a lookup is a random slot), doubles at half full up to the size asked for
 * at init, where at 3/4 full old entries make room or new ones are dropped,
 * and shrinks again when nearly empty.
 * Single-threaded: only the reader thread uses it.
 */
#ifndef DM_PAIRING_H
#define DM_PAIRING_H

#include <stdint.h>

enum dm_pair_state { DM_PAIR_EMPTY = 0, DM_PAIR_START, DM_PAIR_DONE };

/* One request's start (state START) or a parked completion (state DONE). */
struct dm_pair_entry {
    uint64_t sector;       /* key, with dev; 512-byte units */
    uint64_t time_ns;      /* START: start time; DONE: completion time */
    uint64_t issue_ns;     /* START: last dispatch time, 0 = not seen */
    uint32_t dev;          /* key: kernel dev_t */
    uint32_t pid, tid;     /* START: the submitter */
    uint32_t nr_sector;    /* START: size at start; DONE: completed size */
    uint8_t state;         /* enum dm_pair_state */
    uint8_t request;       /* START: enum dm_request */
    uint8_t has_comm;
    uint8_t quiet;         /* DONE: expiring it is no loss (see dm_pairing_done) */
    char comm[16];         /* START: submitter's comm, NUL-padded, maybe unterminated */
    uint16_t rq_flags;     /* START: DM_RQ_* of the start's rwbs (in the padding) */
    uint16_t cgroup;       /* START: the issuer's cgroup, interned (cgroups.h) */
};

struct dm_pair_counts {
    uint64_t matched;        /* completions paired with their start */
    uint64_t expired_starts; /* starts whose completion never came */
    uint64_t expired_dones;  /* completions whose start never came */
    uint64_t early_dones;    /* completions without a start that may have
                                started before the capture: not a loss */
    uint64_t quiet_dones;    /* quiet completions that expired: not a loss */
    uint64_t merged;         /* starts of requests merged into another */
    uint64_t full;           /* starts or completions dropped: table full */
    uint64_t in_flight;      /* starts still open when the capture ended */
    uint64_t duplicates;     /* starts delivered twice by the kernel, dropped */
};

struct dm_pairing {
    struct dm_pair_entry *slots;
    uint32_t mask;           /* slots - 1 */
    unsigned shift;          /* 64 - log2(slots), for the hash */
    uint32_t used;
    uint32_t limit;          /* entries before growing (1/2 of the slots), or at
                                max_slots the most allowed (3/4) */
    uint32_t min_slots;      /* the size it starts at and shrinks back to */
    uint32_t max_slots;      /* the size asked for at init */
    uint64_t start_ttl_ns;   /* a start older than this is expired */
    uint64_t done_ttl_ns;    /* a parked completion older than this is expired */
    uint64_t grace_until_ns; /* completions before this count as early_dones */
    struct dm_pair_counts counts;
};

/* Results of dm_pairing_start / dm_pairing_done. */
enum dm_pair_result {
    DM_PAIR_STORED = 0,   /* kept (a start) or parked (a completion) */
    DM_PAIR_MATCHED = 1,  /* the other half was found and removed */
    DM_PAIR_IGNORED = 2,  /* no match and not parked, or a duplicate start */
    DM_PAIR_FULL = 3      /* no match and no room: dropped and counted */
};

/* slots: the most slots, a power of two (rounded up); the table starts
 * smaller and grows, allocating as it does (a failed allocation is a full
 * table). The TTLs default to 30 s for starts
 * and 2 s for parked completions; tests may change them. Returns 0 or
 * DM_ENOMEM. */
int dm_pairing_init(struct dm_pairing *p, uint32_t slots);
void dm_pairing_free(struct dm_pairing *p);

/* A request started. On DM_PAIR_MATCHED *done holds the parked completion
 * it completes (time_ns, nr_sector). DM_PAIR_IGNORED: a duplicate. */
int dm_pairing_start(struct dm_pairing *p, const struct dm_pair_entry *start,
                     struct dm_pair_entry *done);

/* A request completed (dev, sector, time_ns, nr_sector, quiet of *done).
 * On DM_PAIR_MATCHED *start holds its start. Without a start it is parked if
 * park is nonzero, else DM_PAIR_IGNORED. A parked completion marked quiet is
 * one that may legitimately have no start (the second, empty completion of
 * a request with a flush sequence): it still pairs, but expiring it is not
 * counted as a loss. */
int dm_pairing_done(struct dm_pairing *p, const struct dm_pair_entry *done,
                    int park, struct dm_pair_entry *start);

/* A request was dispatched: record time_ns as the issue time of the oldest
 * open start of this key not yet issued (else the newest: a requeue).
 * Returns 1 if a start was found. */
int dm_pairing_issue(struct dm_pairing *p, uint32_t dev, uint64_t sector,
                     uint64_t time_ns);

/* A request was merged into another and will never complete on its own:
 * forget the newest start of this key not later than time_ns (counted as
 * merged). Returns 1 if one was found. */
int dm_pairing_merge(struct dm_pairing *p, uint32_t dev, uint64_t sector,
                     uint64_t time_ns);

/* A request grew downwards (a bio front merge): the newest start at
 * from_sector now begins at to_sector (< from_sector) and is that much
 * longer. Returns 1 if one was found. */
int dm_pairing_move(struct dm_pairing *p, uint32_t dev, uint64_t from_sector,
                    uint64_t to_sector, uint64_t time_ns);

/* Expire starts older than now - start_ttl_ns and parked completions older
 * than now - done_ttl_ns, counting them. */
void dm_pairing_expire(struct dm_pairing *p, uint64_t now_ns);

/* The capture ended and every record was read: open starts are counted as
 * in_flight, parked completions as expired (or early), the table emptied. */
void dm_pairing_finish(struct dm_pairing *p);

#endif /* DM_PAIRING_H */
