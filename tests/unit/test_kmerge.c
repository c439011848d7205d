/*
 * test_kmerge.c - the k-way merge tree (base/kmerge.h).
 *
 * Random sorted streams are merged through the tree and checked against a
 * plain scan for the smallest head at every step (ties broken by stream
 * number, so the order is total); with keys (dm_kmerge_use_keys) too,
 * whose before() then only breaks ties, so a heap that ignored the keys
 * would merge in stream order.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/kmerge.h"
#include "diskmon.h"
#include "dmtest.h"

#define MAX_STREAMS 9
#define MAX_ITEMS 40

struct streams {
    unsigned k;
    uint64_t key[MAX_STREAMS]; /* the head items, for the keyed rounds */
    unsigned len[MAX_STREAMS], pos[MAX_STREAMS];
    unsigned item[MAX_STREAMS][MAX_ITEMS];
};

static int head_before(const void *ctx, unsigned a, unsigned b)
{
    const struct streams *s = ctx;
    unsigned x = s->item[a][s->pos[a]], y = s->item[b][s->pos[b]];

    return x != y ? x < y : a < b;
}

/* Keyed rounds: equal keys only, so the stream number decides. */
static int tie_before(const void *ctx, unsigned a, unsigned b)
{
    (void)ctx;
    return a < b;
}

/* The stream with the smallest head, by scanning them all. */
static unsigned scan_min(const struct streams *s)
{
    unsigned best = UINT32_MAX;

    for (unsigned i = 0; i < s->k; i++) {
        if (s->pos[i] >= s->len[i])
            continue;
        if (best == UINT32_MAX || head_before(s, i, best))
            best = i;
    }
    return best;
}

static uint32_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return (uint32_t)(*x >> 32);
}

DM_TEST(merge_order)
{
    static struct streams s;
    struct dm_kmerge plain, keyed;
    uint64_t seed = 0x2545F4914F6CDD1Du;
    uint64_t items = 0;

    DM_ASSERT_EQ_INT(dm_kmerge_init(&plain, MAX_STREAMS, head_before, &s), 0);
    DM_ASSERT_EQ_INT(dm_kmerge_init(&keyed, MAX_STREAMS, tie_before, &s), 0);
    dm_kmerge_use_keys(&keyed, s.key);
    for (unsigned round = 0; round < 4000; round++) {
        struct dm_kmerge *mp = round & 1 ? &keyed : &plain;

        s.k = 1 + next_rand(&seed) % MAX_STREAMS;
        for (unsigned i = 0; i < s.k; i++) {
            unsigned v = next_rand(&seed) % 8;

            s.len[i] = next_rand(&seed) % MAX_ITEMS;
            s.pos[i] = 0;
            for (unsigned j = 0; j < s.len[i]; j++) {
                v += next_rand(&seed) % 4; /* runs of equal items too */
                s.item[i][j] = v;
            }
        }
        dm_kmerge_clear(mp);
        for (unsigned i = 0; i < s.k; i++) {
            if (s.len[i] > 0) {
                s.key[i] = s.item[i][0];
                dm_kmerge_push(mp, i);
            }
        }
        while (dm_kmerge_count(mp) > 0) {
            unsigned top = dm_kmerge_top(mp);

            DM_ASSERT_EQ_INT(top, scan_min(&s));
            items++;
            if (++s.pos[top] == s.len[top]) {
                dm_kmerge_pop(mp);
                continue;
            }
            s.key[top] = s.item[top][s.pos[top]];
            dm_kmerge_top_changed(mp);
        }
    }
    DM_ASSERT(items > 100000);
    dm_kmerge_free(&plain);
    dm_kmerge_free(&keyed);
}

/* The tree marks an empty leaf with the largest key: a stream whose key
 * is that large must still come out, after the smaller ones, and in
 * stream order among equals (tie_before). */
DM_TEST(largest_key_is_not_empty)
{
    static struct streams s;
    struct dm_kmerge m;
    unsigned order[5], n = 0;

    DM_ASSERT_EQ_INT(dm_kmerge_init(&m, 5, tie_before, &s), 0);
    dm_kmerge_use_keys(&m, s.key);
    s.key[0] = UINT64_MAX;
    s.key[1] = 7;
    s.key[2] = UINT64_MAX;
    s.key[4] = 3;
    dm_kmerge_push(&m, 2);
    dm_kmerge_push(&m, 0);
    dm_kmerge_push(&m, 4);
    dm_kmerge_push(&m, 1);
    DM_ASSERT_EQ_INT(dm_kmerge_count(&m), 4);
    while (dm_kmerge_count(&m) > 0 && n < 5) {
        order[n++] = dm_kmerge_top(&m);
        dm_kmerge_pop(&m);
    }
    DM_ASSERT_EQ_INT(n, 4);
    DM_ASSERT_EQ_INT(order[0], 4);
    DM_ASSERT_EQ_INT(order[1], 1);
    DM_ASSERT_EQ_INT(order[2], 0);
    DM_ASSERT_EQ_INT(order[3], 2);
    /* Pushed again after it left, with a key that moved back. */
    s.key[1] = 1;
    dm_kmerge_push(&m, 1);
    dm_kmerge_push(&m, 4);
    DM_ASSERT_EQ_INT(dm_kmerge_top(&m), 1);
    s.key[1] = 5;
    dm_kmerge_top_changed(&m);
    DM_ASSERT_EQ_INT(dm_kmerge_top(&m), 4);
    dm_kmerge_free(&m);
}

const struct dmt_case dm_suite_kmerge[] = {
    {"merge_order", merge_order},
    {"largest_key_is_not_empty", largest_key_is_not_empty},
    {NULL, NULL},
};
