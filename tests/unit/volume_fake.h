/*
 * volume_fake.h - a FAKE of the Win32 volume calls (platform/win32_volume.h)
 * for tests. Not Windows: a machine of four volumes that no test machine
 * has, answering as Microsoft Learn and the driver samples document:
 *   C:         NTFS, 4 KiB clusters, disk 0 at 1 MiB; cluster 0 is the
 *              volume's first sector (FSCTL_GET_RETRIEVAL_POINTER_BASE 0);
 *   E:         FAT32 stick, 4 KiB clusters, disk 1 at 1 MiB; cluster 0
 *              starts after the reserved sectors and both FATs, 15,264
 *              sectors in (fastfat fsctrl.c FatGetRetrievalPointerBase:
 *              FileAreaLbo in sectors);
 *   F:         exFAT card, 128 KiB clusters, disk 3 at 4 MiB, cluster heap
 *              at sector 32,768;
 *   C:\mnt\d\  NTFS mounted in a folder of C: only (no drive letter),
 *              64 KiB clusters, disk 2 at 16 MiB.
 * The self-test's file is "on" one of them (dm_vfake_config.file_volume):
 * its final path is there, and FSCTL_GET_RETRIEVAL_POINTERS on any handle
 * that is not a fake volume or disk gives its runs. What it models, each
 * cited where volume_fake.c implements it: FSCTL_GET_RETRIEVAL_POINTER_BASE
 * only on a volume handle opened with an access right beyond traverse
 * (fastfat: "manage volume access"); IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS's
 * ERROR_MORE_DATA with the count filled in; IOCTL_STORAGE_QUERY_PROPERTY's
 * write-cache property, which the docs do not say every driver answers: it
 * plays each plausible answer (enum dm_vfake_cache).
 */
#ifndef DM_VOLUME_FAKE_H
#define DM_VOLUME_FAKE_H

#include <stdint.h>
#include <windows.h>

enum dm_vfake_vol { DM_VFAKE_C = 0, DM_VFAKE_E_FAT32, DM_VFAKE_F_EXFAT, DM_VFAKE_MNT_D,
                    DM_VFAKE_VOLUMES };

/* How a disk answers StorageDeviceWriteCacheProperty. */
enum dm_vfake_cache {
    DM_VFAKE_CACHE_NOT_SUPPORTED = 0, /* the query fails: ERROR_INVALID_FUNCTION */
    DM_VFAKE_CACHE_UNKNOWN,           /* type and state unknown (0, 0) */
    DM_VFAKE_CACHE_DISABLED,          /* a write-back cache, disabled */
    DM_VFAKE_CACHE_ENABLED,           /* a write-back cache, enabled */
    DM_VFAKE_CACHE_NONE,              /* no cache at all (WriteCacheTypeNone) */
    DM_VFAKE_CACHE_WRITE_THROUGH,     /* a write-through cache, enabled */
    DM_VFAKE_CACHE_ANSWERS
};

struct dm_vfake_run {
    int64_t lcn;      /* -1: a hole */
    uint64_t clusters;
};

struct dm_vfake_config {
    enum dm_vfake_vol file_volume;
    struct dm_vfake_run runs[8]; /* the file's runs from VCN 0 */
    int n_runs;
    enum dm_vfake_cache cache;   /* every disk answers so */
    int base_fails;              /* FSCTL_GET_RETRIEVAL_POINTER_BASE fails (1) */
    unsigned extents;            /* >1: file_volume spans this many extents */
    unsigned extra_volumes;      /* more volumes (at most 240), no mount
                                  * point, one 512 MiB extent each on disk
                                  * 10 at 1 GiB, 2 GiB, ...: the volume list */
};

/* The volume's numbers, for the tests' expected offsets. */
struct dm_vfake_geometry {
    uint32_t disk;
    uint64_t start;            /* byte offset of the volume on its disk */
    uint64_t cluster;          /* bytes */
    uint64_t base_bytes;       /* FileAreaOffset x bytes per sector */
};
void dm_vfake_geometry(enum dm_vfake_vol v, struct dm_vfake_geometry *g);

/* Point dm_win32_volume at the fake with cfg, and back. */
void dm_vfake_install(const struct dm_vfake_config *cfg);
void dm_vfake_uninstall(void);
/* Fake handles still open (volumes, disks, finds): 0 when all were closed. */
int dm_vfake_open_handles(void);

#endif /* DM_VOLUME_FAKE_H */
