/*
 * main.c - the test runner: `dm_test SUITE [CASE]` runs one suite (or one
 * case of it), prints a line per case and a summary, and exits 0 (all passed),
 * 1 (a failure) or 77 (everything skipped, CTest's SKIP_RETURN_CODE).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/ring.h"
#include "diskmon.h"
#include "dmtest.h"

int dmt_status;
char dmt_skip_reason[256];

/* The suites this build has (dmtest.h declares them; CTest registers the
 * same list). */
static const struct {
    const char *name;
    const struct dmt_case *cases;
} suites[] = {
#define DMT_SUITE(name) {#name, dm_suite_##name},
#include "dmt_suites.h"
#undef DMT_SUITE
};

int dmt_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci != NULL && strcmp(ci, "true") == 0;
}

void dmt_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    dmt_status = DMT_FAIL;
    fprintf(stderr, "    %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

const char *dmt_shared_etl_dir(void)
{
    const char *env = getenv("DM_SHARED_ETL");

    return env != NULL && env[0] != '\0' ? env : DM_SOURCE_DIR "/../shared/etl";
}

int dmt_shared_file_present(const char *name)
{
    char path[1024];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", dmt_shared_etl_dir(), name);
    return stat(path, &st) == 0;
}

/* The traces themselves, not the folder's README: DM_SHARED_ETL may name a
 * folder that holds the traces alone. */
int dmt_shared_etl_present(void)
{
    return dmt_shared_file_present("perfview-net452-x64-win8.etl") &&
           dmt_shared_file_present("filtrace-diskio-win11.etl");
}

/* dmt_keep_names' storage: one block per kept event, freed after each test. */
static char **kept;
static size_t n_kept, cap_kept;

void dmt_keep_names(struct dm_event *ev)
{
    size_t dl = strlen(ev->disk_name) + 1, pl = strlen(ev->process) + 1,
           fl = strlen(ev->file) + 1, ptl = strlen(ev->partition) + 1,
           cl = strlen(ev->cgroup) + 1;
    char *b = malloc(dl + pl + fl + ptl + cl);

    if (n_kept == cap_kept) {
        char **m = realloc(kept, (cap_kept = cap_kept ? 2 * cap_kept : 1024) * sizeof *kept);

        if (m == NULL)
            abort();
        kept = m;
    }
    if (b == NULL)
        abort();
    kept[n_kept++] = b;
    memcpy(b, ev->disk_name, dl);
    memcpy(b + dl, ev->process, pl);
    memcpy(b + dl + pl, ev->file, fl);
    memcpy(b + dl + pl + fl, ev->partition, ptl);
    memcpy(b + dl + pl + fl + ptl, ev->cgroup, cl);
    ev->disk_name = b;
    ev->process = b + dl;
    ev->file = b + dl + pl;
    ev->partition = b + dl + pl + fl;
    ev->cgroup = b + dl + pl + fl + ptl;
}

size_t dmt_ring_take(struct dm_ring *ring, struct dm_event *out, size_t max)
{
    size_t n = 0, got;

    while (n < max && (got = dm_ring_peek(ring, out + n, max - n)) > 0) {
        /* The views point into the ring until the release. */
        for (size_t i = 0; i < got; i++)
            dmt_keep_names(&out[n + i]);
        n += got;
        dm_ring_release(ring);
    }
    return n;
}

static void keep_release(void)
{
    while (n_kept > 0)
        free(kept[--n_kept]);
    free(kept);
    kept = NULL;
    cap_kept = 0;
}

static int run_suite(const char *suite, const struct dmt_case *cases,
                     const char *only)
{
    int passed = 0, failed = 0, skipped = 0;

    for (const struct dmt_case *c = cases; c->name != NULL; c++) {
        if (only != NULL && strcmp(only, c->name) != 0)
            continue;
        dmt_status = DMT_PASS;
        dmt_skip_reason[0] = '\0';
        c->fn();
        keep_release();
        switch (dmt_status) {
        case DMT_PASS:
            printf("PASS %s/%s\n", suite, c->name);
            passed++;
            break;
        case DMT_SKIP:
            printf("SKIP %s/%s: %s\n", suite, c->name, dmt_skip_reason);
            skipped++;
            break;
        default:
            printf("FAIL %s/%s\n", suite, c->name);
            failed++;
            break;
        }
        fflush(stdout);
    }
    printf("%s: %d passed, %d failed, %d skipped\n", suite, passed, failed,
           skipped);
    if (failed > 0)
        return 1;
    if (passed == 0 && skipped > 0)
        return 77;
    if (passed == 0) {
        fprintf(stderr, "no test named %s in suite %s\n", only ? only : "", suite);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dm_test SUITE [CASE]\nsuites:");
        for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
            fprintf(stderr, " %s", suites[i].name);
        fputc('\n', stderr);
        return 2;
    }
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        if (strcmp(argv[1], suites[i].name) == 0)
            return run_suite(suites[i].name, suites[i].cases,
                             argc > 2 ? argv[2] : NULL);
    fprintf(stderr, "dm_test: no suite named %s\n", argv[1]);
    return 2;
}
