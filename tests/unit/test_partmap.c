/*
 * test_partmap.c - a request's partition by its byte range (base/partmap.h),
 * and the -d and --top --by partition uses of it.
 *
 * The lookup is checked against a sector map: every sector of a small disk
 * marked with the partition that holds it (or none), a request named after
 * a partition exactly when all its sectors carry that one mark.
 */
#include <stdlib.h>

#include "base/partmap.h"
#include "core/filter.h"
#include "decode/nt_kernel.h"
#include "diskmon.h"
#include "dmtest.h"

#define SECTOR 512u
#define DISK_SECTORS 256

DM_TEST(by_hand)
{
    struct dm_part p[2] = {
        {1024 * SECTOR, 2048 * SECTOR, "sda1"},
        {2048 * SECTOR, 4096 * SECTOR, "sda2"},
    };
    const char *name;

    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 1024 * SECTOR, 4096, &name), DM_PART_INSIDE);
    DM_ASSERT_STR_EQ(name, "sda1");
    /* the last bytes of sda1, up to its end */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 2040 * SECTOR, 4096, &name), DM_PART_INSIDE);
    DM_ASSERT_STR_EQ(name, "sda1");
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 2048 * SECTOR, 512, &name), DM_PART_INSIDE);
    DM_ASSERT_STR_EQ(name, "sda2");
    /* across the boundary: the whole disk */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 2044 * SECTOR, 4096, &name), DM_PART_SPANS);
    DM_ASSERT_STR_EQ(name, "");
    /* the partition table, before sda1; past sda2's end */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 0, 4096, &name), DM_PART_OUTSIDE);
    DM_ASSERT_STR_EQ(name, "");
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 4096 * SECTOR, 4096, &name), DM_PART_OUTSIDE);
    /* half outside the disk's last partition */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 4092 * SECTOR, 4096, &name), DM_PART_SPANS);
    /* a flush has no range; no table at all */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, 1024 * SECTOR, 0, &name), DM_PART_NO_RANGE);
    DM_ASSERT_STR_EQ(name, "");
    DM_ASSERT_EQ_INT(dm_part_find(NULL, 0, 0, 512, &name), DM_PART_OUTSIDE);
    /* an end past 2^64 does not wrap into sda1 */
    DM_ASSERT_EQ_INT(dm_part_find(p, 2, UINT64_MAX - 100, 4096, &name), DM_PART_OUTSIDE);
}

DM_TEST(random_against_sector_map)
{
    unsigned seed = 12345;

    for (int round = 0; round < 200; round++) {
        struct dm_part p[6];
        int owner[DISK_SECTORS], n = 0;
        unsigned at = 0;

        for (int s = 0; s < DISK_SECTORS; s++)
            owner[s] = -1;
        /* partitions in random order of the table, with random gaps */
        while (n < 6) {
            seed = seed * 1103515245u + 12345u;
            at += (seed >> 16) % 8;
            seed = seed * 1103515245u + 12345u;
            unsigned len = 1 + (seed >> 16) % 40;
            if (at + len > DISK_SECTORS)
                break;
            p[n].first = (uint64_t)at * SECTOR;
            p[n].end = (uint64_t)(at + len) * SECTOR;
            snprintf(p[n].name, sizeof p[n].name, "p%d", n);
            for (unsigned s = at; s < at + len; s++)
                owner[s] = n;
            at += len;
            n++;
        }
        if (n > 1) { /* the table's order is not the disk's */
            struct dm_part t = p[0];
            p[0] = p[n - 1];
            p[n - 1] = t;
            for (int s = 0; s < DISK_SECTORS; s++)
                owner[s] = owner[s] == 0 ? n - 1 : owner[s] == n - 1 ? 0 : owner[s];
        }
        for (int q = 0; q < 50; q++) {
            seed = seed * 1103515245u + 12345u;
            unsigned first = (seed >> 16) % DISK_SECTORS;
            seed = seed * 1103515245u + 12345u;
            unsigned len = 1 + (seed >> 16) % 16;
            int want = -2, any = 0;
            const char *name;

            if (first + len > DISK_SECTORS)
                len = DISK_SECTORS - first;
            for (unsigned s = first; s < first + len; s++) {
                any |= owner[s] >= 0;
                want = want == -2 ? owner[s] : want == owner[s] ? want : -1;
            }
            enum dm_part_where w =
                dm_part_find(p, n, (uint64_t)first * SECTOR, (uint64_t)len * SECTOR, &name);
            if (want >= 0) {
                DM_ASSERT_EQ_INT(w, DM_PART_INSIDE);
                DM_ASSERT_STR_EQ(name, p[want].name);
            } else {
                DM_ASSERT_EQ_INT(w, any ? DM_PART_SPANS : DM_PART_OUTSIDE);
                DM_ASSERT_STR_EQ(name, "");
            }
        }
    }
}

static struct dm_event on(uint32_t disk, const char *disk_name, const char *partition)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.disk = disk;
    ev.disk_name = disk_name;
    ev.partition = partition;
    ev.process = ev.file = ev.cgroup = "";
    ev.request = DM_REQ_WRITE;
    return ev;
}

static struct dm_filter disk_filter(const char *list)
{
    static char store[4][64];
    static unsigned next;
    char *mine = store[next++ % 4];
    char *argv[3] = {(char *)"diskmon", (char *)"-d", mine};
    struct dm_options opt;
    struct dm_filter f;
    char err[256];

    snprintf(mine, 64, "%s", list);
    if (dm_options_parse(&opt, 3, argv, err, sizeof err) != 0) {
        dmt_fail_at(__FILE__, __LINE__, "-d %s did not parse: %s", list, err);
        memset(&opt, 0, sizeof opt);
    }
    dm_filter_init(&f, &opt);
    return f;
}

/* -d PARTITION keeps that partition's requests and no other of its disk's;
 * -d DISK keeps them all; a drive letter in either case. */
DM_TEST(disk_filter_names_a_partition)
{
    struct dm_filter p2 = disk_filter("/dev/loop0p2");
    struct dm_filter disk = disk_filter("loop0");
    struct dm_filter c = disk_filter("c:");
    struct dm_event in2 = on(7u << 20, "loop0", "loop0p2");
    struct dm_event in1 = on(7u << 20, "loop0", "loop0p1");
    struct dm_event whole = on(7u << 20, "loop0", "");
    struct dm_event vol = on(0, "", "C:"), vol_d = on(0, "", "D:");

    DM_ASSERT(dm_filter_match(&p2, &in2));
    DM_ASSERT(!dm_filter_match(&p2, &in1));
    DM_ASSERT(!dm_filter_match(&p2, &whole));
    DM_ASSERT(dm_filter_match(&disk, &in1));
    DM_ASSERT(dm_filter_match(&disk, &whole));
    DM_ASSERT(dm_filter_match(&c, &vol));
    DM_ASSERT(!dm_filter_match(&c, &vol_d));
    DM_ASSERT(!dm_filter_match(&c, &in2));
}

/* Replay's "-d X matched nothing": a partition entry matches once any
 * request lies in it, even when the disk's first request did not. */
DM_TEST(census_counts_partition_entries)
{
    struct dm_filter f = disk_filter("C:,E:");
    struct dm_disk_census census;
    struct dm_event whole = on(0, "", ""), vol = on(0, "", "C:");

    dm_filter_keep_census(&f, &census);
    DM_ASSERT(!dm_filter_match(&f, &whole));
    DM_ASSERT(dm_filter_match(&f, &vol));
    DM_ASSERT(census.entry_matched[0]);
    DM_ASSERT(!census.entry_matched[1]);
}

/* The machine-wide map: volumes by disk, a repeat not stored twice, a
 * volume of another disk never matching. */
DM_TEST(map_by_disk)
{
    struct dm_partmap m;

    memset(&m, 0, sizeof m);
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 0, 1048576, 1048576, "C:"), 0);
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 0, 1048576, 1048576, "C:"), 0);
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 1, 0, 4096, "D:"), 0);
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 1, 4096, 0, "E:"), -1);
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 1, UINT64_MAX - 10, 4096, "E:"), -1);
    DM_ASSERT_EQ_INT(m.n, 2);
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 0, 1048576, 4096), "C:");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 0, 2097152 - 512, 512), "C:");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 0, 2097152 - 512, 1024), "");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 0, 0, 4096), "");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 1, 0, 4096), "D:");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 2, 1048576, 4096), "");
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 0, 1048576, 0), "");
    /* It grows past the 64 a fixed table held, up to its bound. */
    for (int i = m.n; i < DM_PARTMAP_MAX; i++)
        DM_ASSERT_EQ_INT(dm_partmap_add(&m, 5, (uint64_t)i * 4096, 4096, "X:"), 0);
    DM_ASSERT_STR_EQ(dm_partmap_name(&m, 5, (uint64_t)(DM_PARTMAP_MAX - 1) * 4096, 4096), "X:");
    DM_ASSERT_EQ_INT(dm_partmap_add(&m, 6, 0, 4096, "Y:"), -1);
    dm_partmap_free(&m);
    DM_ASSERT_EQ_INT(m.n, 0);
}

/* A LogDisk record shorter than its drive letter's end (36 bytes) is
 * malformed; one of the full 112 bytes is taken. */
DM_TEST(logdisk_sizes)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(10000000, 0, 10000000);
    uint8_t payload[112];
    struct dm_krecord rec = {DM_K_SYSCONFIG_GROUP, DM_SYSCONFIG_LOGDISK, 2, 8, 0,
                             DM_KNO_ID, DM_KNO_ID, payload, 35};

    DM_ASSERT(kd != NULL);
    memset(payload, 0, sizeof payload);
    payload[28] = 'C';
    payload[30] = ':';
    DM_ASSERT_EQ_INT(dm_kdecode_rundown(kd, &rec), DM_ECORRUPT);
    rec.payload_len = sizeof payload;
    DM_ASSERT_EQ_INT(dm_kdecode_rundown(kd, &rec), 0);
    dm_kdecoder_destroy(kd);
}

const struct dmt_case dm_suite_partmap[] = {
    {"map_by_disk", map_by_disk},
    {"logdisk_sizes", logdisk_sizes},
    {"by_hand", by_hand},
    {"random_against_sector_map", random_against_sector_map},
    {"disk_filter_names_a_partition", disk_filter_names_a_partition},
    {"census_counts_partition_entries", census_counts_partition_entries},
    {NULL, NULL},
};
