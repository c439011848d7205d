/*
 * test_cgroups.c - the /proc/PID/cgroup parser and the per-process cache
 * of the issuer's cgroup (src/linux/cgroups.h). The texts are the file's
 * layout as the kernel prints it (kernel/cgroup/cgroup.c,
 * proc_cgroup_show: "ID:CONTROLLERS:PATH" lines, the v2 hierarchy as ID 0
 * with no controllers); the cache reads a fake /proc made in a temporary
 * folder, so no root is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmtest.h"
#include "linux/cgroups.h"

/* A hybrid machine (systemd's "hybrid" layout): v1 controllers, and the
 * v2 hierarchy mounted beside them, its line last. */
static const char hybrid[] =
    "12:cpuset:/\n"
    "11:memory:/system.slice/docker-0123abcd.scope\n"
    "10:cpu,cpuacct:/system.slice/docker-0123abcd.scope\n"
    "1:name=systemd:/system.slice/docker-0123abcd.scope\n"
    "0::/system.slice/docker-0123abcd.scope\n";

static void parse_unified(void)
{
    static const char text[] = "0::/user.slice/user-1000.slice/session-2.scope\n";
    char out[DM_CGROUP_MAX];

    DM_ASSERT_EQ_INT(dm_cgroup_parse(text, strlen(text), out, sizeof out), 1);
    DM_ASSERT_STR_EQ(out, "/user.slice/user-1000.slice/session-2.scope");
}

static void parse_hybrid_takes_v2_line(void)
{
    char out[DM_CGROUP_MAX];

    DM_ASSERT_EQ_INT(dm_cgroup_parse(hybrid, strlen(hybrid), out, sizeof out), 1);
    DM_ASSERT_STR_EQ(out, "/system.slice/docker-0123abcd.scope");
}

static void parse_v1_only_is_empty(void)
{
    /* No "0::" line; "10:" and "1:name=..." start like it but are v1. */
    static const char text[] = "10:memory:/a\n1:name=systemd:/a\n";
    char out[DM_CGROUP_MAX] = "x";

    DM_ASSERT_EQ_INT(dm_cgroup_parse(text, strlen(text), out, sizeof out), 0);
    DM_ASSERT_STR_EQ(out, "");
}

static void parse_edges(void)
{
    char out[DM_CGROUP_MAX], small[8];
    /* The root, no newline at the end, and a path past cap keeps its
     * start (what a --cgroup prefix compares). */
    DM_ASSERT_EQ_INT(dm_cgroup_parse("0::/", 4, out, sizeof out), 1);
    DM_ASSERT_STR_EQ(out, "/");
    DM_ASSERT_EQ_INT(dm_cgroup_parse("0::/abcdefghij\n", 15, small, sizeof small), 1);
    DM_ASSERT_STR_EQ(small, "/abcdef");
    /* len bounds the text: a line past it is not read. */
    DM_ASSERT_EQ_INT(dm_cgroup_parse("1:cpu:/\n0::/x\n", 8, out, sizeof out), 0);
    DM_ASSERT_EQ_INT(dm_cgroup_parse("", 0, out, sizeof out), 0);
}

/* DIR/PID/cgroup holding text. */
static int put_proc(const char *dir, unsigned pid, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%u", dir, pid);
    if (mkdir(path, 0700) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/%u/cgroup", dir, pid);
    if ((f = fopen(path, "w")) == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void drop_proc(const char *dir, unsigned pid)
{
    char path[256];

    snprintf(path, sizeof path, "%s/%u/cgroup", dir, pid);
    unlink(path);
    snprintf(path, sizeof path, "%s/%u", dir, pid);
    rmdir(path);
}

static void cache_reads_once_per_process(void)
{
    char dir[] = "/tmp/dm-test-cgroups-XXXXXX";
    char comm[DM_CGROUP_COMM] = "dd", other[DM_CGROUP_COMM] = "fio";
    struct dm_cgroups c;

    DM_ASSERT(mkdtemp(dir) != NULL);
    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    c.proc = dir;
    DM_ASSERT_EQ_INT(put_proc(dir, 4242, hybrid), 0);
    DM_ASSERT_EQ_INT(put_proc(dir, 77, "0::/a/b\n"), 0);
    DM_ASSERT_STR_EQ(dm_cgroup_of(&c, 4242, comm), "/system.slice/docker-0123abcd.scope");
    DM_ASSERT_STR_EQ(dm_cgroup_of(&c, 77, comm), "/a/b");
    DM_ASSERT_EQ_U64(c.reads, 2);
    /* Gone from /proc: the cached path stays, no new read. */
    drop_proc(dir, 4242);
    for (int i = 0; i < 10; i++)
        DM_ASSERT_STR_EQ(dm_cgroup_of(&c, 4242, comm), "/system.slice/docker-0123abcd.scope");
    DM_ASSERT_EQ_U64(c.reads, 2);
    /* Another name on the pid: read again (a reused pid), now gone: "". */
    DM_ASSERT_STR_EQ(dm_cgroup_of(&c, 4242, other), "");
    DM_ASSERT_EQ_U64(c.reads, 3);
    /* No task: the root, without a read. */
    DM_ASSERT_STR_EQ(dm_cgroup_of(&c, 0, comm), "/");
    DM_ASSERT_EQ_U64(c.reads, 3);
    drop_proc(dir, 77);
    rmdir(dir);
    dm_cgroups_free(&c);
}

static void cache_of_real_self(void)
{
    /* Our own process against /proc/self/cgroup read here. */
    char want[DM_CGROUP_MAX], buf[4096], comm[DM_CGROUP_COMM] = {0};
    struct dm_cgroups c;
    FILE *f = fopen("/proc/self/cgroup", "r");
    size_t n;

    if (f == NULL)
        DM_SKIP("no /proc/self/cgroup");
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!dm_cgroup_parse(buf, n, want, sizeof want))
        snprintf(want, sizeof want, "%s", "");
    DM_ASSERT(strstr(buf, want) != NULL);
    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    snprintf(comm, sizeof comm, "dm_test");
    DM_ASSERT_STR_EQ(dm_cgroup_of(&c, (uint32_t)getpid(), comm), want);
    dm_cgroups_free(&c);
}

const struct dmt_case dm_suite_cgroups[] = {
    {"parse_unified", parse_unified},
    {"parse_hybrid_takes_v2_line", parse_hybrid_takes_v2_line},
    {"parse_v1_only_is_empty", parse_v1_only_is_empty},
    {"parse_edges", parse_edges},
    {"cache_reads_once_per_process", cache_reads_once_per_process},
    {"cache_of_real_self", cache_of_real_self},
    {NULL, NULL},
};
