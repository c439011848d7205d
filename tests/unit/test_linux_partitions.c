/*
 * test_linux_partitions.c - a disk's partitions read from a sysfs folder
 * (linux/partitions.h), here a copy of its shape in a temporary folder:
 * subfolders with a "partition" file are partitions, start and size in
 * 512-byte sectors; anything else (queue/, a partition missing its size)
 * is not.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dmtest.h"
#include "linux/partitions.h"

static int put(const char *dir, const char *sub, const char *file, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
    f = fopen(path, "wx");
    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void remove_tree(const char *dir)
{
    const char *subs[] = {"vdb1", "vdb2", "vdb15", "queue"};
    const char *files[] = {"partition", "start", "size", "scheduler"};
    char path[512];

    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 4; j++) {
            snprintf(path, sizeof path, "%s/%s/%s", dir, subs[i], files[j]);
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
        rmdir(path);
    }
    rmdir(dir);
}

DM_TEST(reads_sysfs_shape)
{
    char dir[] = "/tmp/dm_test_partitions.XXXXXX";
    struct dm_part p[4];
    int n, ok = 1;

    DM_ASSERT(mkdtemp(dir) != NULL);
    ok &= put(dir, "vdb1", "partition", "1\n") == 0;
    ok &= put(dir, "vdb1", "start", "2048\n") == 0;
    ok &= put(dir, "vdb1", "size", "16384\n") == 0;
    ok &= put(dir, "vdb15", "partition", "15\n") == 0;
    ok &= put(dir, "vdb15", "start", "18432\n") == 0;
    ok &= put(dir, "vdb15", "size", "8\n") == 0;
    ok &= put(dir, "vdb2", "partition", "2\n") == 0; /* no size: skipped */
    ok &= put(dir, "vdb2", "start", "40000\n") == 0;
    ok &= put(dir, "queue", "scheduler", "none\n") == 0;
    n = ok ? dm_blk_read_partitions(dir, p, 4) : -1;
    remove_tree(dir);
    DM_ASSERT(ok);
    DM_ASSERT_EQ_INT(n, 2);
    /* readdir's order: either may come first */
    if (strcmp(p[0].name, "vdb15") == 0) {
        struct dm_part t = p[0];
        p[0] = p[1];
        p[1] = t;
    }
    DM_ASSERT_STR_EQ(p[0].name, "vdb1");
    DM_ASSERT_EQ_U64(p[0].first, 2048u * 512);
    DM_ASSERT_EQ_U64(p[0].end, (2048u + 16384) * 512);
    DM_ASSERT_STR_EQ(p[1].name, "vdb15");
    DM_ASSERT_EQ_U64(p[1].first, 18432u * 512);
    DM_ASSERT_EQ_U64(p[1].end, (18432u + 8) * 512);
}

DM_TEST(missing_folder_is_no_partitions)
{
    struct dm_part p[2];

    DM_ASSERT_EQ_INT(dm_blk_read_partitions("/nonexistent/dm_partitions", p, 2), 0);
}

const struct dmt_case dm_suite_sysfs_partitions[] = {
    {"reads_sysfs_shape", reads_sysfs_shape},
    {"missing_folder_is_no_partitions", missing_folder_is_no_partitions},
    {NULL, NULL},
};
