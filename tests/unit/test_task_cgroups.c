/*
 * test_task_cgroups.c - where a request's cgroup comes from without the
 * /proc race: the interned paths (cgroups.h), the id -> path map walked
 * over a cgroup tree (cgroup_ids.h; here a temporary folder, whose inode
 * numbers stand in for the ids, as on a 64-bit kernel's cgroup2, checked
 * against stat(2)), the fork and move tracepoints decoded from hand-made
 * records laid out as their 6.18 format files say (task_cgroups.h), and the
 * request table following a process through them in time order.
 *
 * The tree's ids are taken with dm_cgroup_dir_id itself: on ext4 or tmpfs a
 * directory's 8-byte file handle is not its inode number, as it is on
 * kernfs, so the walk's bookkeeping is what is tested here; that the ids
 * are the kernel's is tested where it can be: the cgroup2 root, whose id
 * is 1 (kernfs numbers its root node 1), when one is mounted, and live by
 * tests/scripts/linux_cgroup_race.sh, whose perf runs name each request's
 * cgroup from the samples' ids alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmtest.h"
#include "linux/cgroup_ids.h"
#include "linux/requests.h"
#include "linux/task_cgroups.h"

static void intern_once_per_path(void)
{
    struct dm_cgroups c;
    uint16_t a, b;

    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    a = dm_cgroup_intern(&c, "/a/b", 4);
    b = dm_cgroup_intern(&c, "/a", 2);
    DM_ASSERT(a != 0 && b != 0 && a != b);
    /* The same bytes, however they end, are the same index. */
    DM_ASSERT_EQ_INT(dm_cgroup_intern(&c, "/a/bXX", 4), a);
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, a), "/a/b");
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, 0), "");
    DM_ASSERT_EQ_INT(dm_cgroup_intern(&c, "", 0), 0);
    /* Full: the rest are unknown, and counted. */
    for (unsigned i = 0; i < DM_CGROUP_NAMES; i++) {
        char p[32];

        snprintf(p, sizeof p, "/n%u", i);
        dm_cgroup_intern(&c, p, strlen(p));
    }
    DM_ASSERT(c.names_full > 0);
    DM_ASSERT_EQ_INT(dm_cgroup_intern(&c, "/a", 2), b);
    dm_cgroups_free(&c);
}

static uint64_t ino_of(const char *path)
{
    return dm_cgroup_dir_id(AT_FDCWD, path);
}

static void ids_walk_map_and_rescan(void)
{
    char dir[] = "/tmp/dm-test-cgids-XXXXXX", p[128], q[128], r[128];
    struct dm_cgroups c;
    struct dm_cgroup_ids m;
    uint16_t n;

    DM_ASSERT(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/system.slice", dir);
    snprintf(q, sizeof q, "%s/system.slice/dd.scope", dir);
    snprintf(r, sizeof r, "%s/later", dir);
    DM_ASSERT_EQ_INT(mkdir(p, 0700), 0);
    DM_ASSERT_EQ_INT(mkdir(q, 0700), 0);
    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    DM_ASSERT_EQ_INT(dm_cgroup_ids_open_at(&m, &c, dir), 0);
    DM_ASSERT_EQ_U64(m.walks, 1);
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, dm_cgroup_ids_name(&m, ino_of(dir))), "/");
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, dm_cgroup_ids_name(&m, ino_of(p))), "/system.slice");
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, dm_cgroup_ids_name(&m, ino_of(q))),
                     "/system.slice/dd.scope");
    DM_ASSERT_EQ_U64(m.walks, 1);
    /* A cgroup made after the walk: found by one more walk. */
    DM_ASSERT_EQ_INT(mkdir(r, 0700), 0);
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, dm_cgroup_ids_name(&m, ino_of(r))), "/later");
    DM_ASSERT_EQ_U64(m.walks, 2);
    DM_ASSERT_EQ_U64(m.unknown, 0);
    /* An id of no cgroup (removed before the walk): unknown, counted, and
     * it costs one walk, not one per request. */
    n = dm_cgroup_ids_name(&m, 0x7fff0000deadull);
    DM_ASSERT_EQ_INT(n, 0);
    DM_ASSERT_EQ_INT(dm_cgroup_ids_name(&m, 0x7fff0000deadull), 0);
    DM_ASSERT_EQ_U64(m.walks, 3);
    DM_ASSERT_EQ_U64(m.unknown, 2);
    dm_cgroup_ids_free(&m);
    dm_cgroups_free(&c);
    rmdir(r);
    rmdir(q);
    rmdir(p);
    rmdir(dir);
}

/* The root of a cgroup2 mount has id 1, by handle and by inode. */
static void ids_of_real_cgroup2_root(void)
{
    char line[512], dev[64], point[256], type[32];
    FILE *f = fopen("/proc/self/mounts", "r");
    int found = 0;

    DM_REQUIRE(f != NULL, "no /proc/self/mounts");
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = sscanf(line, "%63s %255s %31s", dev, point, type) == 3 &&
                strcmp(type, "cgroup2") == 0;
    fclose(f);
    DM_REQUIRE(found, "no cgroup2 mount (a v1-only machine)");
    DM_ASSERT_EQ_U64(dm_cgroup_dir_id(AT_FDCWD, point), 1);
}

static void ids_refused_without_v2_ids(void)
{
    struct dm_cgroups c;
    struct dm_cgroup_ids m;
    char why[200];
    static const char mounts[] =
        "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";

    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    /* No cgroup2 line. */
    DM_ASSERT_EQ_INT(dm_cgroup_ids_open(&m, &c, "proc /proc proc rw 0 0\n", "0::/\n", why,
                                        sizeof why),
                     DM_EUNSUPPORTED);
    DM_ASSERT(strstr(why, "cgroup2") != NULL);
    /* perf_event on a v1 hierarchy: the samples' ids are not v2 ones. */
    DM_ASSERT_EQ_INT(dm_cgroup_ids_open(&m, &c, mounts, "3:cpu,perf_event:/\n0::/\n", why,
                                        sizeof why),
                     DM_EUNSUPPORTED);
    DM_ASSERT(strstr(why, "perf_event") != NULL);
    /* A v1 "perf_event_x" controller is not perf_event. */
    DM_ASSERT_EQ_INT(dm_cgroup_ids_open(&m, &c, mounts, "3:perf_event_x:/\n0::/\n", why,
                                        sizeof why),
                     0);
    DM_ASSERT_STR_EQ(m.mount, "/sys/fs/cgroup/unified");
    dm_cgroup_ids_free(&m);
    dm_cgroups_free(&c);
}

/* The two format files of Linux 6.18 (/sys/kernel/tracing/events/...). */
static const char fork_format[] =
    "name: sched_process_fork\nID: 366\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;\n"
    "\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;\n";
static const char attach_format[] =
    "name: cgroup_attach_task\nID: 538\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:int dst_root;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:int dst_level;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:u64 dst_id;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:int pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] dst_path;\toffset:28;\tsize:4;\tsigned:0;\n"
    "\tfield:__data_loc char[] comm;\toffset:32;\tsize:4;\tsigned:0;\n";

static int layout(struct dm_task_layout *l)
{
    static struct dm_tp_format f, a;
    char err[256];

    if (dm_tp_format_parse(fork_format, strlen(fork_format), &f, err, sizeof err) != 0 ||
        dm_tp_format_parse(attach_format, strlen(attach_format), &a, err, sizeof err) != 0)
        return -1;
    return dm_task_layout_set(l, &f, &a, err, sizeof err);
}

/* Host order, as the kernel writes its records. */
static void put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof v);
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

static size_t fork_rec(uint8_t *b, uint32_t parent, uint32_t child)
{
    memset(b, 0, 40);
    put16(b, 366);
    put32(b + 12, parent);
    put32(b + 20, child);
    return 24;
}

/* A move record: dst_path's __data_loc is (length with the NUL << 16 |
 * offset), the string after the fixed fields. */
static size_t attach_rec(uint8_t *b, int32_t root, uint32_t pid, const char *path)
{
    size_t n = strlen(path) + 1;

    memset(b, 0, 64 + n);
    put16(b, 538);
    put32(b + 8, (uint32_t)root);
    put32(b + 24, pid);
    put32(b + 28, (uint32_t)(n << 16 | 40));
    memcpy(b + 40, path, n);
    return 40 + n;
}

static void decode_fork_and_move(void)
{
    struct dm_task_layout l;
    struct dm_cgroups c;
    struct dm_blk_sample s;
    uint8_t b[128];
    size_t n;
    int skip;

    DM_ASSERT_EQ_INT(layout(&l), 0);
    DM_ASSERT_EQ_INT(dm_cgroups_init(&c), 0);
    n = fork_rec(b, 100, 101);
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n, &c, &s, &skip), 1);
    DM_ASSERT_EQ_INT(s.kind, DM_BLK_TASK_FORK);
    DM_ASSERT_EQ_INT(s.pid, 100);
    DM_ASSERT_EQ_INT(s.child_pid, 101);
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n - 1, &c, &s, &skip), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(skip, 0);
    n = attach_rec(b, 0, 101, "/dmtest-a");
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n, &c, &s, &skip), 1);
    DM_ASSERT_EQ_INT(s.kind, DM_BLK_TASK_MOVE);
    DM_ASSERT_EQ_INT(s.pid, 101);
    DM_ASSERT_STR_EQ(dm_cgroup_name(&c, s.cgroup), "/dmtest-a");
    /* A string past the record's end is refused, never read. */
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n - 2, &c, &s, &skip), DM_ECORRUPT);
    /* A v1 hierarchy's move: skipped, not malformed. */
    n = attach_rec(b, 3, 101, "/");
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n, &c, &s, &skip), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(skip, 1);
    /* Another event: not ours. */
    put16(b, 1234);
    DM_ASSERT_EQ_INT(dm_task_decode(&l, b, n, &c, &s, &skip), 0);
    dm_cgroups_free(&c);
}

#define T0 1000000000ull
#define MS 1000000ull

static struct dm_blk_sample blk(enum dm_blk_kind kind, uint64_t t, uint64_t sector,
                                uint32_t pid)
{
    struct dm_blk_sample s;

    memset(&s, 0, sizeof s);
    s.kind = (uint8_t)kind;
    s.time_ns = t;
    s.sector = sector;
    s.nr_sector = 8;
    s.dev = (7u << 20) | 3u;
    s.pid = s.tid = pid;
    snprintf(s.rwbs, sizeof s.rwbs, "W");
    dm_blk_classify(s.rwbs, s.nr_sector, &s.op, &s.preflush, &s.request);
    s.has_comm = 1;
    snprintf(s.comm, sizeof s.comm, "dd");
    return s;
}

/* A process forked from a shell in /a, moved to /b between its two
 * requests, gone from /proc before any is read: each request names where
 * the process was at its start, whatever order the completions come in. */
static void follows_fork_and_move_in_time_order(void)
{
    char dir[] = "/tmp/dm-test-tasks-XXXXXX", path[128];
    struct dm_requests r;
    struct dm_blk_sample s;
    struct dm_event ev;
    uint16_t b;
    FILE *f;

    DM_ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/500", dir);
    DM_ASSERT_EQ_INT(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/500/cgroup", dir);
    DM_ASSERT((f = fopen(path, "w")) != NULL);
    fputs("0::/a\n", f);
    fclose(f);
    DM_ASSERT_EQ_INT(dm_requests_init(&r, 0, 0, T0), 0);
    r.cgroups.proc = dir;
    r.cg_source = DM_CGROUPS_TRACK;
    b = dm_cgroup_intern(&r.cgroups, "/b", 2);

    s = blk(DM_BLK_TASK_FORK, T0 + 1 * MS, 0, 500); /* the shell, in /a */
    s.child_pid = 501;
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    s = blk(DM_BLK_IO_START, T0 + 2 * MS, 64, 501);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    s = blk(DM_BLK_TASK_MOVE, T0 + 3 * MS, 0, 501);
    s.cgroup = b;
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    s = blk(DM_BLK_IO_START, T0 + 4 * MS, 128, 501);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    /* The second completes first. */
    s = blk(DM_BLK_RQ_COMPLETE, T0 + 5 * MS, 128, 0);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 1);
    DM_ASSERT_STR_EQ(ev.cgroup, "/b");
    s = blk(DM_BLK_RQ_COMPLETE, T0 + 6 * MS, 64, 0);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 1);
    DM_ASSERT_STR_EQ(ev.cgroup, "/a");
    DM_ASSERT_EQ_U64(r.cgroups.reads, 1); /* the shell's, once */

    /* The fallback, for the same process now gone: unknown. */
    r.cg_source = DM_CGROUPS_PROC;
    s = blk(DM_BLK_IO_START, T0 + 7 * MS, 256, 501);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    s = blk(DM_BLK_RQ_COMPLETE, T0 + 8 * MS, 256, 0);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 1);
    DM_ASSERT_STR_EQ(ev.cgroup, "");

    /* perf: the sample's own cgroup, whatever /proc says. */
    r.cg_source = DM_CGROUPS_SAMPLE;
    s = blk(DM_BLK_IO_START, T0 + 9 * MS, 512, 500);
    s.cgroup = b;
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 0);
    s = blk(DM_BLK_RQ_COMPLETE, T0 + 10 * MS, 512, 0);
    DM_ASSERT_EQ_INT(dm_requests_feed(&r, &s, &ev), 1);
    DM_ASSERT_STR_EQ(ev.cgroup, "/b");
    dm_requests_free(&r);
    unlink(path);
    snprintf(path, sizeof path, "%s/500", dir);
    rmdir(path);
    rmdir(dir);
}

/* A reused pid comes with a fork, which replaces the old entry. */
static void fork_claims_a_reused_pid(void)
{
    struct dm_task_cgroups t;
    uint16_t n;

    DM_ASSERT_EQ_INT(dm_task_cgroups_init(&t), 0);
    DM_ASSERT(!dm_task_lookup(&t, 42, &n));
    dm_task_move(&t, 42, 7);
    DM_ASSERT(dm_task_lookup(&t, 42, &n));
    DM_ASSERT_EQ_INT(n, 7);
    dm_task_fork(&t, 42, 3);
    DM_ASSERT(dm_task_lookup(&t, 42, &n));
    DM_ASSERT_EQ_INT(n, 3);
    /* Another pid in the same slot evicts, and is not mistaken for it. */
    DM_ASSERT(!dm_task_lookup(&t, 42 + DM_TASK_SLOTS, &n));
    dm_task_cgroups_free(&t);
}

const struct dmt_case dm_suite_task_cgroups[] = {
    {"intern_once_per_path", intern_once_per_path},
    {"ids_walk_map_and_rescan", ids_walk_map_and_rescan},
    {"ids_of_real_cgroup2_root", ids_of_real_cgroup2_root},
    {"ids_refused_without_v2_ids", ids_refused_without_v2_ids},
    {"decode_fork_and_move", decode_fork_and_move},
    {"follows_fork_and_move_in_time_order", follows_fork_and_move_in_time_order},
    {"fork_claims_a_reused_pid", fork_claims_a_reused_pid},
    {NULL, NULL},
};
