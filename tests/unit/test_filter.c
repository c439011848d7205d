/*
 * test_filter.c - -d, --op, -p, -c, --cgroup and -m, alone and together.
 */
#include "core/filter.h"
#include "dmtest.h"

static struct dm_event ev_of(uint32_t disk, const char *disk_name, int request,
                             uint32_t pid, const char *process, uint64_t duration_ns)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.disk = disk;
    ev.disk_name = disk_name; /* literals: they outlive the event */
    ev.process = ev.file = "";
    ev.request = (uint8_t)request;
    ev.duration_ns = duration_ns;
    if (pid != 0) {
        ev.pid = pid;
        ev.flags |= DM_EV_HAS_PID;
    }
    if (process != NULL) {
        ev.process = process;
        ev.flags |= DM_EV_HAS_PROCESS;
    }
    return ev;
}

static struct dm_filter filter_of(const char *const *argv_tail, int n)
{
    struct dm_options opt;
    struct dm_filter f;
    char *argv[16];
    char err[256];

    argv[0] = (char *)"diskmon";
    /* Writable copies that outlive the filter (which points into them);
     * each call gets fresh ones, up to 8 filters per test. */
    static char store[8][16][64];
    static unsigned next;
    char (*mine)[64] = store[next++ % 8];

    for (int i = 0; i < n && i < 15; i++) {
        snprintf(mine[i], sizeof mine[i], "%s", argv_tail[i]);
        argv[i + 1] = mine[i];
    }
    /* A filter that does not parse must fail the test, not leave it
     * testing the default (keep everything) filter. */
    if (dm_options_parse(&opt, n + 1, argv, err, sizeof err) != 0) {
        dmt_fail_at(__FILE__, __LINE__, "filter did not parse: %s", err);
        memset(&opt, 0, sizeof opt);
    }
    dm_filter_init(&f, &opt);
    return f;
}

DM_TEST(no_filter_passes_everything)
{
    struct dm_filter f = filter_of(NULL, 0);
    struct dm_event ev = ev_of(3, "", DM_REQ_FLUSH, 0, NULL, 0);

    DM_ASSERT(dm_filter_match(&f, &ev));
}

/* The shortcut for "no filter" is taken only when nothing was asked for:
 * every single filter option turns it off, and then filters. */
DM_TEST(pass_all_only_without_filters)
{
    const char *all_ops[] = {"--op", "read,write,flush,discard"};
    const char *one[][2] = {
        {"-d", "1"}, {"-p", "5"}, {"-c", "fio"}, {"-m", "1"}, {"--op", "read"},
        {"--cgroup", "/"},
    };
    struct dm_event flush = ev_of(3, "", DM_REQ_FLUSH, 0, NULL, 0);

    DM_ASSERT_EQ_INT(filter_of(NULL, 0).pass_all, 1);
    DM_ASSERT_EQ_INT(filter_of(all_ops, 2).pass_all, 1);
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        struct dm_filter f = filter_of(one[i], 2);

        DM_ASSERT_EQ_INT(f.pass_all, 0);
        /* disk 3, no pid, no process, no duration, no cgroup, a flush:
         * each of the filters above refuses it. */
        DM_ASSERT_EQ_INT(dm_filter_match(&f, &flush), 0);
    }
}

DM_TEST(disk_by_number_name_and_majmin)
{
    static char d1[] = "1", d2[] = "loop0,8:16";
    const char *a1[] = {"-d", d1};
    const char *a2[] = {"--disk", d2};
    struct dm_filter f1 = filter_of(a1, 2), f2 = filter_of(a2, 2);
    struct dm_event win1 = ev_of(1, "", DM_REQ_READ, 0, NULL, 0);
    struct dm_event win0 = ev_of(0, "", DM_REQ_READ, 0, NULL, 0);
    /* Linux dev_t in the kernel's encoding: 8:16 = (8 << 20) | 16. */
    struct dm_event sdb = ev_of((8u << 20) | 16, "sdb", DM_REQ_READ, 0, NULL, 0);
    struct dm_event loop = ev_of((7u << 20) | 0, "loop0", DM_REQ_READ, 0, NULL, 0);
    struct dm_event sda = ev_of((8u << 20) | 0, "sda", DM_REQ_READ, 0, NULL, 0);
    /* A named Linux disk whose dev_t happens to be 1 is not "disk 1". */
    struct dm_event odd = ev_of(1, "ram1", DM_REQ_READ, 0, NULL, 0);

    DM_ASSERT(dm_filter_match(&f1, &win1));
    DM_ASSERT(!dm_filter_match(&f1, &win0));
    DM_ASSERT(!dm_filter_match(&f1, &odd));
    DM_ASSERT(dm_filter_match(&f2, &sdb));
    DM_ASSERT(dm_filter_match(&f2, &loop));
    DM_ASSERT(!dm_filter_match(&f2, &sda));
}

DM_TEST(op_mask)
{
    const char *a[] = {"--op", "write,FLUSH"};
    struct dm_filter f = filter_of(a, 2);
    struct dm_event r = ev_of(0, "", DM_REQ_READ, 0, NULL, 0);
    struct dm_event w = ev_of(0, "", DM_REQ_WRITE, 0, NULL, 0);
    struct dm_event fl = ev_of(0, "", DM_REQ_FLUSH, 0, NULL, 0);

    DM_ASSERT(!dm_filter_match(&f, &r));
    DM_ASSERT(dm_filter_match(&f, &w));
    DM_ASSERT(dm_filter_match(&f, &fl));
}

/* --flags: any one of the flags named (a union); none of them: no match. */
DM_TEST(flags_any_of)
{
    const char *a[] = {"--flags", "fua,SYNC_paging"};
    struct dm_filter f = filter_of(a, 2);
    struct dm_event plain = ev_of(0, "", DM_REQ_WRITE, 0, NULL, 0);
    struct dm_event fua = plain, sp = plain, other = plain;

    fua.req_flags = DM_RQ_FUA | DM_RQ_PREFLUSH;
    sp.req_flags = DM_RQ_SYNC_PAGING;
    other.req_flags = DM_RQ_SYNC | DM_RQ_META;
    DM_ASSERT(!f.pass_all);
    DM_ASSERT(!dm_filter_match(&f, &plain));
    DM_ASSERT(dm_filter_match(&f, &fua));
    DM_ASSERT(dm_filter_match(&f, &sp));
    DM_ASSERT(!dm_filter_match(&f, &other));
}

DM_TEST(pid_needs_known_pid)
{
    const char *a[] = {"-p", "4"};
    struct dm_filter f = filter_of(a, 2);
    struct dm_event mine = ev_of(0, "", DM_REQ_READ, 4, NULL, 0);
    struct dm_event other = ev_of(0, "", DM_REQ_READ, 5, NULL, 0);
    struct dm_event unknown = ev_of(0, "", DM_REQ_READ, 0, NULL, 0);

    DM_ASSERT(dm_filter_match(&f, &mine));
    DM_ASSERT(!dm_filter_match(&f, &other));
    DM_ASSERT(!dm_filter_match(&f, &unknown));
}

DM_TEST(comm_case_insensitive_exe_optional)
{
    const char *a[] = {"-c", "SVCHOST"};
    const char *b[] = {"--comm=fio"};
    struct dm_filter f = filter_of(a, 2), g = filter_of(b, 1);
    struct dm_event svc = ev_of(0, "", DM_REQ_READ, 0, "svchost.exe", 0);
    struct dm_event svc2 = ev_of(0, "", DM_REQ_READ, 0, "svchost", 0);
    struct dm_event other = ev_of(0, "", DM_REQ_READ, 0, "svchost2.exe", 0);
    struct dm_event fio = ev_of(0, "", DM_REQ_READ, 0, "fio", 0);
    struct dm_event nameless = ev_of(0, "", DM_REQ_READ, 0, NULL, 0);

    DM_ASSERT(dm_filter_match(&f, &svc));
    DM_ASSERT(dm_filter_match(&f, &svc2));
    DM_ASSERT(!dm_filter_match(&f, &other));
    DM_ASSERT(dm_filter_match(&g, &fio));
    DM_ASSERT(!dm_filter_match(&g, &svc));
    DM_ASSERT(!dm_filter_match(&g, &nameless));
}

DM_TEST(min_latency_ms)
{
    const char *a[] = {"-m", "2.5"};
    struct dm_filter f = filter_of(a, 2);
    struct dm_event slow = ev_of(0, "", DM_REQ_READ, 0, NULL, 2500000);
    struct dm_event fast = ev_of(0, "", DM_REQ_READ, 0, NULL, 2499999);

    DM_ASSERT(dm_filter_match(&f, &slow));
    DM_ASSERT(!dm_filter_match(&f, &fast));
}

/* Within one filter, every value given (comma list or repeated
 * option) is an alternative; across filters, all must match. */
DM_TEST(lists_and_repeats_are_unions)
{
    const char *a[] = {"-p", "4,144", "--pid", "8", "-c", "msmpeng,SYSTEM", "-c", "fio"};
    const char *b[] = {"-d", "0,sda", "-d", "8:16", "--op", "read", "--op", "FLUSH"};
    struct dm_filter f = filter_of(a, 8), g = filter_of(b, 8);
    struct dm_event sys4 = ev_of(0, "", DM_REQ_READ, 4, "System", 0);
    struct dm_event mp144 = ev_of(0, "", DM_REQ_READ, 144, "MsMpEng.exe", 0);
    struct dm_event fio8 = ev_of(0, "", DM_REQ_READ, 8, "fio", 0);
    struct dm_event fio9 = ev_of(0, "", DM_REQ_READ, 9, "fio", 0);     /* pid not listed */
    struct dm_event dd4 = ev_of(0, "", DM_REQ_READ, 4, "dd", 0);       /* name not listed */
    struct dm_event d0 = ev_of(0, "", DM_REQ_READ, 0, NULL, 0);
    struct dm_event sda = ev_of(UINT32_MAX, "sda", DM_REQ_FLUSH, 0, NULL, 0);
    struct dm_event sdb = ev_of((8u << 20) | 16u, "sdb", DM_REQ_READ, 0, NULL, 0);
    struct dm_event sdc = ev_of((8u << 20) | 32u, "sdc", DM_REQ_READ, 0, NULL, 0);
    struct dm_event w0 = ev_of(0, "", DM_REQ_WRITE, 0, NULL, 0);

    DM_ASSERT(dm_filter_match(&f, &sys4));
    DM_ASSERT(dm_filter_match(&f, &mp144));
    DM_ASSERT(dm_filter_match(&f, &fio8));
    DM_ASSERT(!dm_filter_match(&f, &fio9));
    DM_ASSERT(!dm_filter_match(&f, &dd4));
    DM_ASSERT(dm_filter_match(&g, &d0));
    DM_ASSERT(dm_filter_match(&g, &sda));
    DM_ASSERT(dm_filter_match(&g, &sdb));
    DM_ASSERT(!dm_filter_match(&g, &sdc));
    DM_ASSERT(!dm_filter_match(&g, &w0));
}

/* The census: which -d entries matched any disk, and every disk seen, even
 * of events other filters dropped. */
DM_TEST(census_names_unmatched_entries)
{
    const char *a[] = {"-d", "sda,6", "-d", "99", "--op", "write"};
    struct dm_filter f = filter_of(a, 6);
    struct dm_disk_census c;
    struct dm_event r6 = ev_of(6, "", DM_REQ_READ, 0, NULL, 0);
    struct dm_event w9 = ev_of(9, "", DM_REQ_WRITE, 0, NULL, 0);

    dm_filter_keep_census(&f, &c);
    DM_ASSERT(!dm_filter_match(&f, &r6)); /* a read: --op drops it */
    DM_ASSERT(!dm_filter_match(&f, &w9)); /* disk 9: -d drops it */
    DM_ASSERT(!dm_filter_match(&f, &r6));
    DM_ASSERT_EQ_INT(c.n, 2);
    DM_ASSERT_STR_EQ(c.names[0], "6");
    DM_ASSERT_STR_EQ(c.names[1], "9");
    DM_ASSERT(!c.entry_matched[0]); /* sda */
    DM_ASSERT(c.entry_matched[1]);  /* 6 */
    DM_ASSERT(!c.entry_matched[2]); /* 99 */
}

static struct dm_event ev_in(const char *cgroup)
{
    struct dm_event ev = ev_of(0, "", DM_REQ_WRITE, 1, "dd", 0);

    ev.cgroup = cgroup;
    return ev;
}

DM_TEST(cgroup_prefix_by_whole_components)
{
    const char *a[] = {"--cgroup", "/system.slice/"};
    const char *root[] = {"--cgroup", "/"};
    const char *two[] = {"--cgroup", "/a/b,/c", "--cgroup", "/d"};
    struct dm_filter f = filter_of(a, 2), fr = filter_of(root, 2), f2 = filter_of(two, 4);
    struct dm_event self = ev_in("/system.slice"), below = ev_in("/system.slice/x.service");
    struct dm_event near = ev_in("/system.slicer"), other = ev_in("/user.slice");
    struct dm_event none = ev_in("");

    /* the trailing / is dropped: /system.slice/ is /system.slice */
    DM_ASSERT(dm_filter_match(&f, &self));
    DM_ASSERT(dm_filter_match(&f, &below));
    DM_ASSERT(!dm_filter_match(&f, &near));
    DM_ASSERT(!dm_filter_match(&f, &other));
    DM_ASSERT(!dm_filter_match(&f, &none));
    DM_ASSERT(dm_filter_match(&fr, &near));
    DM_ASSERT(!dm_filter_match(&fr, &none));
    /* a list and a repeat: one union */
    {
        struct dm_event ab = ev_in("/a/b/c"), a_only = ev_in("/a"), c = ev_in("/c");
        struct dm_event d = ev_in("/d"), e = ev_in("/e");

        DM_ASSERT(dm_filter_match(&f2, &ab));
        DM_ASSERT(!dm_filter_match(&f2, &a_only));
        DM_ASSERT(dm_filter_match(&f2, &c));
        DM_ASSERT(dm_filter_match(&f2, &d));
        DM_ASSERT(!dm_filter_match(&f2, &e));
    }
}

/* A request whose field a filter asks about is unknown: not shown, and
 * counted under that field, once per request; a request another filter
 * turns away is not counted; no filter on the field, nothing counted. */
DM_TEST(unknown_fields_counted)
{
    const char *cg[] = {"--cgroup", "/a", "-d", "sda"};
    const char *pc[] = {"-p", "4", "--cgroup", "/a"};
    const char *cm[] = {"-c", "dd"};
    struct dm_filter f = filter_of(cg, 4), g = filter_of(pc, 4), h = filter_of(cm, 2);
    struct dm_filter none = filter_of(NULL, 0);
    struct dm_filter_unknown u;
    struct dm_event gone = ev_in(""), in_a = ev_in("/a/b"), elsewhere = ev_in("/b");
    struct dm_event other_disk = ev_of(0, "sdb", DM_REQ_WRITE, 1, "dd", 0);
    struct dm_event no_pid = ev_of(0, "", DM_REQ_WRITE, 0, "dd", 0);
    struct dm_event no_comm = ev_of(0, "", DM_REQ_WRITE, 4, NULL, 0);
    struct dm_event empty_comm = ev_of(0, "", DM_REQ_WRITE, 4, "", 0);

    gone.disk_name = in_a.disk_name = elsewhere.disk_name = "sda";
    DM_ASSERT(!dm_filter_match(&f, &gone));
    DM_ASSERT(dm_filter_match(&f, &in_a));
    DM_ASSERT(!dm_filter_match(&f, &elsewhere));
    other_disk.cgroup = "";
    DM_ASSERT(!dm_filter_match(&f, &other_disk)); /* -d says no first */
    dm_filter_unknown_read(&f, &u);
    DM_ASSERT_EQ_U64(u.field[DM_FIELD_CGROUP], 1);
    DM_ASSERT_EQ_U64(u.field[DM_FIELD_PID], 0);
    DM_ASSERT_EQ_U64(u.requests, 1);

    /* Both fields unknown: one request, counted under each. A known pid
     * that does not match decides alone. */
    DM_ASSERT(!dm_filter_match(&g, &no_pid));
    no_comm.cgroup = "";
    no_comm.pid = 5;
    DM_ASSERT(!dm_filter_match(&g, &no_comm));
    dm_filter_unknown_read(&g, &u);
    DM_ASSERT_EQ_U64(u.field[DM_FIELD_PID], 1);
    DM_ASSERT_EQ_U64(u.field[DM_FIELD_CGROUP], 1);
    DM_ASSERT_EQ_U64(u.requests, 1);

    /* -c: no name, or an empty one, is unknown. */
    no_comm.pid = 4;
    DM_ASSERT(!dm_filter_match(&h, &no_comm));
    DM_ASSERT(!dm_filter_match(&h, &empty_comm));
    DM_ASSERT(dm_filter_match(&h, &no_pid));
    dm_filter_unknown_read(&h, &u);
    DM_ASSERT_EQ_U64(u.field[DM_FIELD_PROCESS], 2);
    DM_ASSERT_EQ_U64(u.requests, 2);

    /* No filter: shown, nothing to count. */
    DM_ASSERT(dm_filter_match(&none, &gone));
    dm_filter_unknown_read(&none, &u);
    DM_ASSERT_EQ_U64(u.requests, 0);
}

const struct dmt_case dm_suite_filter[] = {
    {"unknown_fields_counted", unknown_fields_counted},
    {"cgroup_prefix_by_whole_components", cgroup_prefix_by_whole_components},
    {"no_filter_passes_everything", no_filter_passes_everything},
    {"pass_all_only_without_filters", pass_all_only_without_filters},
    {"disk_by_number_name_and_majmin", disk_by_number_name_and_majmin},
    {"op_mask", op_mask},
    {"flags_any_of", flags_any_of},
    {"pid_needs_known_pid", pid_needs_known_pid},
    {"comm_case_insensitive_exe_optional", comm_case_insensitive_exe_optional},
    {"min_latency_ms", min_latency_ms},
    {"lists_and_repeats_are_unions", lists_and_repeats_are_unions},
    {"census_names_unmatched_entries", census_names_unmatched_entries},
    {NULL, NULL},
};
