/*
 * dmtest.h - diskmon's tiny test runner.
 *
 * A suite is an array of {name, fn} ending in {NULL, NULL}; tests/unit/main.c
 * lists the suites and `dm_test SUITE` runs one (CTest registers one test per
 * suite). Assertions print both operands and return from the test. A test
 * that lacks something it needs (root, tracefs, Wine, the sample traces)
 * calls DM_REQUIRE: it skips with the reason, except under CI=true where the
 * missing resource is a failure, so CI proves the test did run.
 */
#ifndef DM_TEST_H
#define DM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum dmt_status { DMT_PASS = 0, DMT_FAIL = 1, DMT_SKIP = 2 };

struct dmt_case {
    const char *name;
    void (*fn)(void);
};

/* Every suite of this build, dm_suite_NAME, NULL-terminated. dmt_suites.h
 * is written by CMakeLists.txt from DM_TEST_SUITES, the one list. */
#define DMT_SUITE(name) extern const struct dmt_case dm_suite_##name[];
#include "dmt_suites.h"
#undef DMT_SUITE

/* Set by the assertion macros; read by the runner after each test. */
extern int dmt_status;
extern char dmt_skip_reason[256];

int dmt_in_ci(void); /* CI=true in the environment */
/* MinGW's plain "printf" archetype means Microsoft's rules (no %zu); its
 * headers name the C99 one __MINGW_PRINTF_FORMAT. */
void dmt_fail_at(const char *file, int line, const char *fmt, ...)
#if defined(__MINGW32__)
    __attribute__((format(__MINGW_PRINTF_FORMAT, 3, 4)))
#elif defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Path of the shared sample traces folder (DM_SHARED_ETL env, else
 * ../shared/etl relative to the source tree), whether it holds the two
 * traces, and whether it holds one file (a path inside it, such as the
 * reference/ decodings, which a folder of traces alone lacks). */
const char *dmt_shared_etl_dir(void);
int dmt_shared_etl_present(void);
int dmt_shared_file_present(const char *name);

/*
 * An event's names are borrowed (diskmon.h): from the decoder until its next
 * call, from the ring until release. A test that keeps events longer keeps
 * their names with dmt_keep_names(), which copies them into storage the
 * runner frees after the test. Aborts when out of memory.
 */
struct dm_event;
void dmt_keep_names(struct dm_event *ev);

/* Take up to max events out of ring into out, names kept
 * (dmt_keep_names); the rest stay in the ring. Returns how many. */
struct dm_ring;
size_t dmt_ring_take(struct dm_ring *ring, struct dm_event *out, size_t max);

#define DM_TEST(name) static void name(void)

#define DM_ASSERT(cond)                                                  \
    do {                                                                 \
        if (!(cond)) {                                                   \
            dmt_fail_at(__FILE__, __LINE__, "assertion failed: %s", #cond); \
            return;                                                      \
        }                                                                \
    } while (0)

#define DM_ASSERT_EQ_INT(a, b)                                           \
    do {                                                                 \
        long long dmt_a_ = (long long)(a), dmt_b_ = (long long)(b);      \
        if (dmt_a_ != dmt_b_) {                                          \
            dmt_fail_at(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, \
                        dmt_a_, dmt_b_);                                 \
            return;                                                      \
        }                                                                \
    } while (0)

#define DM_ASSERT_EQ_U64(a, b)                                           \
    do {                                                                 \
        uint64_t dmt_a_ = (uint64_t)(a), dmt_b_ = (uint64_t)(b);         \
        if (dmt_a_ != dmt_b_) {                                          \
            dmt_fail_at(__FILE__, __LINE__,                              \
                        "%s == %s: %" PRIu64 " != %" PRIu64, #a, #b,     \
                        dmt_a_, dmt_b_);                                 \
            return;                                                      \
        }                                                                \
    } while (0)

#define DM_ASSERT_STR_EQ(a, b)                                           \
    do {                                                                 \
        const char *dmt_a_ = (a), *dmt_b_ = (b);                         \
        if (dmt_a_ == NULL || dmt_b_ == NULL || strcmp(dmt_a_, dmt_b_) != 0) { \
            dmt_fail_at(__FILE__, __LINE__, "%s == %s:\n  got:  \"%s\"\n  want: \"%s\"", \
                        #a, #b, dmt_a_ ? dmt_a_ : "(null)",              \
                        dmt_b_ ? dmt_b_ : "(null)");                     \
            return;                                                      \
        }                                                                \
    } while (0)

#define DM_ASSERT_MEM_EQ(a, b, n)                                        \
    do {                                                                 \
        if (memcmp((a), (b), (n)) != 0) {                                \
            dmt_fail_at(__FILE__, __LINE__, "%s and %s differ in %lu bytes", \
                        #a, #b, (unsigned long)(n));                            \
            return;                                                      \
        }                                                                \
    } while (0)

/* Skip (or, under CI=true, fail) when cond is false. */
#define DM_REQUIRE(cond, reason)                                         \
    do {                                                                 \
        if (!(cond)) {                                                   \
            if (dmt_in_ci()) {                                           \
                dmt_fail_at(__FILE__, __LINE__,                          \
                            "required under CI=true: %s", (reason));     \
            } else {                                                     \
                dmt_status = DMT_SKIP;                                   \
                snprintf(dmt_skip_reason, sizeof dmt_skip_reason, "%s", (reason)); \
            }                                                            \
            return;                                                      \
        }                                                                \
    } while (0)

/* Skip always (something this platform cannot do at all, e.g. fork on
 * Windows). Give the reason. */
#define DM_SKIP(reason)                                                  \
    do {                                                                 \
        dmt_status = DMT_SKIP;                                           \
        snprintf(dmt_skip_reason, sizeof dmt_skip_reason, "%s", (reason)); \
        return;                                                          \
    } while (0)

#endif /* DM_TEST_H */
