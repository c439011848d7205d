/*
 * test_busy.c - the busy-time union shared by --top and --metrics
 * (views/busy.h): by hand, the fold and its cut, bounded growth, and
 * random requests in completion order against a bitmap of busy
 * nanoseconds (the plain union, computed independently).
 */
#include <stdlib.h>
#include <string.h>

#include "views/busy.h"
#include "dmtest.h"

static uint64_t busy_of(struct dm_busy *b)
{
    return dm_busy_ns(b);
}

/* Overlapping and touching spans merge; disjoint ones add up. */
DM_TEST(union_by_hand)
{
    struct dm_busy_span store[4];
    struct dm_busy b = {0, 0, store, 0, 4, 4};

    DM_ASSERT_EQ_INT(dm_busy_add(&b, 0, 10), 0);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 20, 30), 0);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 25, 40), 0);   /* overlaps: [20, 40) */
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 50, 60), 0);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 70, 80), 0);
    DM_ASSERT_EQ_U64(busy_of(&b), 10 + 20 + 10 + 10);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 60, 70), 0);   /* touches both: [50, 80) */
    DM_ASSERT_EQ_U64(busy_of(&b), 10 + 20 + 30);
    DM_ASSERT_EQ_INT((int)b.n_spans, 3);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 5, 5), 0);     /* empty: nothing */
    DM_ASSERT_EQ_U64(busy_of(&b), 60);
}

/* A full window folds its older half when a disjoint span comes; a later
 * span reaching back before the fold point is cut there, so a moment is
 * never counted twice. */
DM_TEST(fold_then_cut)
{
    struct dm_busy_span store[4];
    struct dm_busy b = {0, 0, store, 0, 4, 4};

    dm_busy_add(&b, 0, 10);
    dm_busy_add(&b, 20, 30);
    dm_busy_add(&b, 40, 50);
    dm_busy_add(&b, 60, 70);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 80, 90), 0);   /* full: [0,10) [20,30) folded */
    DM_ASSERT_EQ_U64(b.folded_ns, 20);
    DM_ASSERT_EQ_U64(b.folded_end_ns, 30);
    DM_ASSERT_EQ_INT((int)b.n_spans, 3);
    DM_ASSERT_EQ_U64(busy_of(&b), 50);
    /* [25, 45): [25, 30) is folded busy time already; [30, 45) joins [40, 50).
     * The plain union [0,10) [20,50) [60,70) [80,90) is 60. */
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 25, 45), 0);
    DM_ASSERT_EQ_U64(busy_of(&b), 60);
    /* Wholly before the fold point: not counted (the documented undercount). */
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 12, 15), 0);
    DM_ASSERT_EQ_U64(busy_of(&b), 60);
    dm_busy_reset(&b);
    DM_ASSERT_EQ_U64(busy_of(&b), 0);
    DM_ASSERT(b.spans == store && b.max == 4);
}

/* A span that merges is never a reason to fold: in a full window,
 * [25, 45) joins [20, 30) and [40, 50), and the total is the plain union's
 * 50 (folding first, then merging the uncut span, would count [25, 30)
 * twice: 55). */
DM_TEST(full_window_merges_without_fold)
{
    struct dm_busy_span store[4];
    struct dm_busy b = {0, 0, store, 0, 4, 4};

    dm_busy_add(&b, 0, 10);
    dm_busy_add(&b, 20, 30);
    dm_busy_add(&b, 40, 50);
    dm_busy_add(&b, 60, 70);
    DM_ASSERT_EQ_INT(dm_busy_add(&b, 25, 45), 0);
    DM_ASSERT_EQ_U64(b.folded_ns, 0);
    DM_ASSERT_EQ_U64(busy_of(&b), 50);
}

/* Grown storage stays within max; disjoint spans in order lose nothing to
 * the folds. */
DM_TEST(growth_bounded)
{
    struct dm_busy b;

    memset(&b, 0, sizeof b);
    b.max = 1024;
    for (uint64_t i = 0; i < 5000; i++)
        DM_ASSERT_EQ_INT(dm_busy_add(&b, 10 * i, 10 * i + 4), 0);
    DM_ASSERT(b.cap <= 1024);
    DM_ASSERT(b.n_spans <= 1024);
    DM_ASSERT_EQ_U64(busy_of(&b), 5000 * 4);
    free(b.spans);
}

#define HORIZON 20000u

/* Random requests, added in completion order: with a window that never
 * fills, the union equals the bitmap's count; with a tiny one (folds all
 * the time) it never exceeds it and never goes down. */
DM_TEST(random_against_bitmap)
{
    static unsigned char busy[HORIZON];
    static uint64_t start[4000], end[4000];
    struct dm_busy big, tiny;
    struct dm_busy_span tiny_store[8];
    uint64_t want = 0, last_tiny = 0;
    unsigned seed = 7;
    int n = 4000;

    memset(busy, 0, sizeof busy);
    memset(&big, 0, sizeof big);
    big.max = 8192;
    memset(&tiny, 0, sizeof tiny);
    tiny.spans = tiny_store;
    tiny.cap = tiny.max = 8;
    /* completion times ascending, durations 0..59 */
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        end[i] = 60 + (uint64_t)i * 4 + (seed >> 16) % 4;
        if (i > 0 && end[i] < end[i - 1])
            end[i] = end[i - 1];
        seed = seed * 1103515245u + 12345u;
        start[i] = end[i] - (seed >> 16) % 60;
    }
    for (int i = 0; i < n; i++) {
        for (uint64_t t = start[i]; t < end[i]; t++)
            busy[t] = 1;
        DM_ASSERT_EQ_INT(dm_busy_add(&big, start[i], end[i]), 0);
        DM_ASSERT_EQ_INT(dm_busy_add(&tiny, start[i], end[i]), 0);
        DM_ASSERT(busy_of(&tiny) >= last_tiny);
        last_tiny = busy_of(&tiny);
    }
    for (unsigned t = 0; t < HORIZON; t++)
        want += busy[t];
    DM_ASSERT_EQ_U64(busy_of(&big), want);
    DM_ASSERT(busy_of(&tiny) <= want);
    free(big.spans);
}

const struct dmt_case dm_suite_busy[] = {
    {"union_by_hand", union_by_hand},
    {"fold_then_cut", fold_then_cut},
    {"full_window_merges_without_fold", full_window_merges_without_fold},
    {"growth_bounded", growth_bounded},
    {"random_against_bitmap", random_against_bitmap},
    {NULL, NULL},
};
