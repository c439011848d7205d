/*
 * test_selftest_win32.c - where --self-test expects its file's bytes on the
 * disk (selftest_win32.c), against the FAKE volume calls of volume_fake.c:
 * FAT32 and exFAT volumes whose cluster 0 starts past the FAT, a volume
 * mounted in a folder, and each answer a disk may give to the write-cache
 * query. The file itself is real (made in %TEMP%); only where Windows says
 * it lies is faked. Expected offsets come from the documented formula
 * (FSCTL_GET_RETRIEVAL_POINTER_BASE page: volume start + FileAreaOffset
 * sectors + LCN x cluster size) over the fake's configured numbers, not
 * from diskmon. Also the live source's volume list (etw_volumes.c) against
 * the same fake: every extent of a volume of many, every volume of many.
 * Built only for Windows; runs under Wine through CTest.
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "diskmon.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"
#include "etw/etw_source_internal.h"
#include "selftest/selftest.h"

#include "dmtest.h"
#include "volume_fake.h"

/* The file's 8 blocks of 4 KiB in two runs where clusters are 4 KiB. */
static void two_runs(struct dm_vfake_config *c)
{
    c->runs[0].lcn = 1000;
    c->runs[0].clusters = 3;
    c->runs[1].lcn = 50000;
    c->runs[1].clusters = 5;
    c->n_runs = 2;
}

/* dm_st_prepare in %TEMP% with the fake installed; the place it found. */
static int prepare(const struct dm_vfake_config *cfg, struct dm_st_place *pl, char *msg,
                   size_t len)
{
    char dir[MAX_PATH];
    DWORD n = GetTempPathA((DWORD)sizeof dir, dir);
    struct dm_st_file *f = NULL;
    int rc;

    if (n > 0 && n < sizeof dir && dir[n - 1] == '\\')
        dir[n - 1] = '\0';
    dm_vfake_install(cfg);
    rc = dm_st_prepare(&f, n > 0 ? dir : NULL, pl, msg, len);
    dm_st_remove(f);
    dm_vfake_uninstall();
    return rc;
}

/* The file's two runs at the offsets the formula gives on volume v. */
static void expect_two_runs(enum dm_vfake_vol v, const struct dm_st_place *pl)
{
    struct dm_vfake_geometry g;

    dm_vfake_geometry(v, &g);
    DM_ASSERT(pl->mapped);
    DM_ASSERT_EQ_INT(pl->n_ext, 2);
    DM_ASSERT_EQ_INT((long long)pl->disk, (long long)g.disk);
    DM_ASSERT_EQ_INT((long long)pl->ext[0].disk_offset,
                     (long long)(g.start + g.base_bytes + 1000 * g.cluster));
    DM_ASSERT_EQ_INT((long long)pl->ext[1].file_offset, (long long)(3 * g.cluster));
    DM_ASSERT_EQ_INT((long long)pl->ext[1].disk_offset,
                     (long long)(g.start + g.base_bytes + 50000 * g.cluster));
}

/* NTFS: cluster 0 is the volume's first sector (base 0). */
DM_TEST(ntfs_offsets)
{
    struct dm_vfake_config cfg = {0};
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_C;
    two_runs(&cfg);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    expect_two_runs(DM_VFAKE_C, &pl);
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
}

/* FAT32: cluster 0 starts 15,264 sectors into the volume. */
DM_TEST(fat32_adds_cluster_heap_base)
{
    struct dm_vfake_config cfg = {0};
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_E_FAT32;
    two_runs(&cfg);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    expect_two_runs(DM_VFAKE_E_FAT32, &pl);
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
}

/* exFAT: 128 KiB clusters, the cluster heap at sector 32,768; the whole
 * file is in one cluster. */
DM_TEST(exfat_adds_cluster_heap_base)
{
    struct dm_vfake_config cfg = {0};
    struct dm_vfake_geometry g;
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_F_EXFAT;
    cfg.runs[0].lcn = 777;
    cfg.runs[0].clusters = 1;
    cfg.n_runs = 1;
    dm_vfake_geometry(DM_VFAKE_F_EXFAT, &g);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    DM_ASSERT(pl.mapped);
    DM_ASSERT_EQ_INT((long long)pl.ext[0].disk_offset,
                     (long long)(g.start + g.base_bytes + 777 * g.cluster));
}

/* Where cluster 0 lies cannot be read: the place is unknown, said so,
 * never guessed. */
DM_TEST(base_unknown_is_unmapped)
{
    struct dm_vfake_config cfg = {0};
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_E_FAT32;
    cfg.base_fails = 1;
    two_runs(&cfg);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    DM_ASSERT(!pl.mapped);
    DM_ASSERT(strstr(pl.unmapped_why, "FSCTL_GET_RETRIEVAL_POINTER_BASE") != NULL);
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
}

/* A volume mounted in C:\mnt\d: its own disk, start and 64 KiB clusters,
 * not C:'s. */
DM_TEST(folder_mounted_volume)
{
    struct dm_vfake_config cfg = {0};
    struct dm_vfake_geometry g;
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_MNT_D;
    cfg.runs[0].lcn = 4242;
    cfg.runs[0].clusters = 1;
    cfg.n_runs = 1;
    dm_vfake_geometry(DM_VFAKE_MNT_D, &g);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    DM_ASSERT(pl.mapped);
    DM_ASSERT_EQ_INT((long long)pl.disk, (long long)g.disk);
    DM_ASSERT_EQ_INT((long long)pl.ext[0].disk_offset,
                     (long long)(g.start + g.base_bytes + 4242 * g.cluster));
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
}

/* A volume spread over several extents cannot be mapped onto one disk:
 * said so with the count. */
DM_TEST(spanned_volume_is_unmapped)
{
    struct dm_vfake_config cfg = {0};
    struct dm_st_place pl;
    char msg[256];

    cfg.file_volume = DM_VFAKE_C;
    cfg.extents = 3;
    two_runs(&cfg);
    DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
    DM_ASSERT(!pl.mapped);
    DM_ASSERT(strstr(pl.unmapped_why, "3 extents") != NULL);
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
}

/* Every answer to the write-cache query: prepare still works, and the
 * cache is known only where the disk said so (1 write back enabled; 0
 * disabled, none or write through; -1 unknown or not answered). */
DM_TEST(write_cache_every_answer)
{
    static const int want[DM_VFAKE_CACHE_ANSWERS] = {-1, -1, 0, 1, 0, 0};

    for (int a = 0; a < DM_VFAKE_CACHE_ANSWERS; a++) {
        struct dm_vfake_config cfg = {0};
        struct dm_st_place pl;
        char msg[256];

        cfg.file_volume = DM_VFAKE_C;
        cfg.cache = (enum dm_vfake_cache)a;
        two_runs(&cfg);
        DM_ASSERT_EQ_INT(prepare(&cfg, &pl, msg, sizeof msg), 0);
        DM_ASSERT(pl.mapped);
        DM_ASSERT_EQ_INT(pl.write_cache, want[a]);
        DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
    }
}


/* The live volume map (etw_volumes.c): C: in 20 extents (more than the 17
 * a fixed buffer held; the VOLUME_DISK_EXTENTS page: ERROR_MORE_DATA, then
 * ask again with room for NumberOfDiskExtents), and 100 more volumes than
 * the four (more than 64 in all): each extent and each volume named. */
DM_TEST(volume_map_many_extents_and_volumes)
{
    struct dm_vfake_config cfg = {0};
    struct dm_vfake_geometry g;
    struct dm_kdecoder *kd = dm_kdecoder_create(10000000, 0, 10000000);
    const uint64_t gib = 1024ull * 1024u * 1024u, each = 100000ull * 1024u * 1024u / 20u;

    DM_ASSERT(kd != NULL);
    cfg.file_volume = DM_VFAKE_C;
    cfg.extents = 20;
    cfg.extra_volumes = 100;
    dm_vfake_geometry(DM_VFAKE_C, &g);
    dm_vfake_install(&cfg);
    DM_ASSERT_EQ_INT(dm_etw_add_disk_volumes(kd), 0);
    dm_vfake_uninstall();
    DM_ASSERT_EQ_INT(dm_vfake_open_handles(), 0);
    for (unsigned k = 0; k < 20; k++)
        DM_ASSERT_STR_EQ(dm_partmap_name(&kd->disk_volumes, g.disk, g.start + k * each, 4096),
                         "C:");
    DM_ASSERT_STR_EQ(dm_partmap_name(&kd->disk_volumes, 1, 1024u * 1024u, 4096), "E:");
    for (unsigned k = 0; k < 100; k++) {
        char want[64];

        snprintf(want, sizeof want, "\\\\?\\Volume{eeeeeeee-0000-0000-0000-%012u}",
                 k + DM_VFAKE_VOLUMES);
        DM_ASSERT_STR_EQ(dm_partmap_name(&kd->disk_volumes, 10, (k + 1) * gib, 4096), want);
    }
    dm_kdecoder_destroy(kd);
}

const struct dmt_case dm_suite_selftest_win32[] = {
    {"ntfs_offsets", ntfs_offsets},
    {"fat32_adds_cluster_heap_base", fat32_adds_cluster_heap_base},
    {"exfat_adds_cluster_heap_base", exfat_adds_cluster_heap_base},
    {"base_unknown_is_unmapped", base_unknown_is_unmapped},
    {"folder_mounted_volume", folder_mounted_volume},
    {"spanned_volume_is_unmapped", spanned_volume_is_unmapped},
    {"write_cache_every_answer", write_cache_every_answer},
    {"volume_map_many_extents_and_volumes", volume_map_many_extents_and_volumes},
    {NULL, NULL},
};
