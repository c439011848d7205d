/*
 * selftest_win32_map.c - where the self-test's file lies on the physical
 * disk, and whether that disk has a write cache (selftest_win32.h).
 *
 * DiskIo events carry the byte offset from the start of the physical disk
 * (Microsoft Learn, DiskIo_TypeGroup1 class). The file's place is built
 * from what Windows says, each step with its page:
 *  1. The volume the file is on, whatever mounts it (a drive letter or a
 *     folder of another volume): GetVolumePathNameW gives the mount point
 *     of the file's path, GetVolumeNameForVolumeMountPointW that mount
 *     point's volume GUID path "\\?\Volume{GUID}\" (both pages).
 *  2. Its cluster size: GetDiskFreeSpaceW on that volume's root, the GUID
 *     path with its trailing backslash (GetDiskFreeSpaceW; Naming a
 *     Volume).
 *  3. The file's runs of clusters: FSCTL_GET_RETRIEVAL_POINTERS on the
 *     file's handle, in logical cluster numbers (LCN).
 *  4. Where LCN 0 is: FSCTL_GET_RETRIEVAL_POINTER_BASE on the volume gives
 *     FileAreaOffset, the sectors from the volume's start to its first
 *     cluster ("the base of the cluster heap", RETRIEVAL_POINTER_BASE):
 *     0 on NTFS, past the reserved sectors and the FATs on FAT and exFAT
 *     (fastfat sample, fsctrl.c FatGetRetrievalPointerBase). The page says
 *     the value added to the retrieval pointers gives volume-relative
 *     offsets. The volume is opened with GENERIC_READ: the file system
 *     answers only a volume handle with "manage volume access", which
 *     fastfat grants an open that was given any right beyond traverse
 *     (create.c FatOpenVolume); the volume is opened by its GUID path
 *     without the trailing backslash (CreateFileW, "Naming a Volume").
 *  5. Where the volume starts on its disk: IOCTL_VOLUME_GET_VOLUME_DISK_
 *     EXTENTS. A volume of several extents (spanned, striped, Storage
 *     Spaces) does not map onto one disk: unmapped, with the count.
 *  6. The disk's write cache: IOCTL_STORAGE_QUERY_PROPERTY with
 *     StorageDeviceWriteCacheProperty on \\.\PhysicalDriveN, opened with
 *     no access rights (the IOCTL is FILE_ANY_ACCESS; STORAGE_WRITE_CACHE_
 *     PROPERTY page): WriteCacheType and WriteCacheEnabled. The page does
 *     not say every driver answers; a refusal or "unknown" leaves the cache
 *     unknown.
 * Any step failing leaves the place unknown, with the reason: the checks
 * then compare sizes and order only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winioctl.h>

#include "platform/win32_volume.h"
#include "selftest/selftest_win32.h"

#define FILE_BYTES (DM_ST_FILE_BLOCKS * DM_ST_BLOCK)
/* A volume GUID path is 49 characters with its backslash; the
 * GetVolumeNameForVolumeMountPointW page advises room for 50. */
#define VOLUME_NAME_CHARS 64

/* What steps 1, 2, 4 and 5 learn of the volume. */
struct volume {
    wchar_t guid_path[VOLUME_NAME_CHARS]; /* "\\?\Volume{GUID}\" */
    uint64_t cluster;                     /* bytes */
    uint64_t sector;                      /* bytes */
    uint64_t base;                        /* bytes from its start to LCN 0 */
    uint32_t disk;
    uint64_t start;                       /* its byte offset on the disk */
};

static int why(struct dm_st_place *pl, const char *what, DWORD code)
{
    snprintf(pl->unmapped_why, sizeof pl->unmapped_why, "%s failed (error %lu)", what,
             (unsigned long)code);
    return -1;
}

/* Steps 1 and 2. */
static int find_volume(const wchar_t *final_path, struct volume *v, struct dm_st_place *pl)
{
    wchar_t mount[MAX_PATH];
    DWORD spc, bps, free_c, total_c;
    const wchar_t *path = final_path;

    /* "\\?\C:\..." names a DOS path; "\\?\UNC\..." a share, which has no
     * volume of this machine and fails below. */
    if (wcsncmp(path, L"\\\\?\\", 4) == 0 && path[4] != L'\0' && path[5] == L':')
        path += 4;
    if (!dm_win32_volume->get_volume_path_name(path, mount, MAX_PATH))
        return why(pl, "GetVolumePathNameW", GetLastError());
    if (!dm_win32_volume->get_volume_name(mount, v->guid_path, VOLUME_NAME_CHARS))
        return why(pl, "GetVolumeNameForVolumeMountPointW", GetLastError());
    if (!dm_win32_volume->get_disk_free_space(v->guid_path, &spc, &bps, &free_c, &total_c))
        return why(pl, "GetDiskFreeSpaceW", GetLastError());
    v->cluster = (uint64_t)spc * bps;
    v->sector = bps;
    return 0;
}

/* Step 5, on the open volume: its one extent, growing the buffer for the
 * count ERROR_MORE_DATA reports (VOLUME_DISK_EXTENTS page). */
static int volume_extent(HANDLE h, struct volume *v, struct dm_st_place *pl)
{
    VOLUME_DISK_EXTENTS one, *all;
    DWORD got = 0, n;
    size_t bytes;

    if (dm_win32_volume->device_io_control(h, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, NULL, 0,
                                           &one, sizeof one, &got, NULL)) {
        v->disk = one.Extents[0].DiskNumber;
        v->start = (uint64_t)one.Extents[0].StartingOffset.QuadPart;
        return 0;
    }
    if (GetLastError() != ERROR_MORE_DATA)
        return why(pl, "IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS", GetLastError());
    n = one.NumberOfDiskExtents;
    bytes = sizeof one + (size_t)(n > 1 ? n - 1 : 0) * sizeof(DISK_EXTENT);
    all = calloc(1, bytes);
    if (all != NULL && dm_win32_volume->device_io_control(
                           h, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, NULL, 0, all,
                           (DWORD)bytes, &got, NULL))
        n = all->NumberOfDiskExtents;
    free(all);
    snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
             "the volume spans %lu extents (a spanned, striped or Storage Spaces volume), "
             "so its clusters do not map onto one disk", (unsigned long)n);
    return -1;
}

/* Steps 4 and 5. */
static int open_volume(struct volume *v, struct dm_st_place *pl)
{
    wchar_t device[VOLUME_NAME_CHARS];
    RETRIEVAL_POINTER_BASE base;
    size_t n = wcslen(v->guid_path);
    DWORD got = 0;
    HANDLE h;
    int rc;

    if (n < 2 || v->guid_path[n - 1] != L'\\')
        return why(pl, "GetVolumeNameForVolumeMountPointW (no volume GUID path)", 0);
    memcpy(device, v->guid_path, (n - 1) * sizeof device[0]);
    device[n - 1] = L'\0';
    h = dm_win32_volume->create_file(device, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE,
                                     NULL, OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return why(pl, "opening the volume (CreateFileW)", GetLastError());
    rc = volume_extent(h, v, pl);
    if (rc == 0 && !dm_win32_volume->device_io_control(h, FSCTL_GET_RETRIEVAL_POINTER_BASE,
                                                       NULL, 0, &base, sizeof base, &got,
                                                       NULL)) {
        rc = -1;
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "where the volume's clusters start is unknown "
                 "(FSCTL_GET_RETRIEVAL_POINTER_BASE failed, error %lu)",
                 (unsigned long)GetLastError());
    }
    if (rc == 0 && base.FileAreaOffset.QuadPart < 0) {
        rc = -1;
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "FSCTL_GET_RETRIEVAL_POINTER_BASE gave a negative base (%lld sectors)",
                 (long long)base.FileAreaOffset.QuadPart);
    }
    if (rc == 0) /* FileAreaOffset counts the volume's sectors */
        v->base = (uint64_t)base.FileAreaOffset.QuadPart * v->sector;
    dm_win32_volume->close_handle(h);
    return rc;
}

/* Step 3: the file's runs into pl->ext. */
static int file_runs(HANDLE file, const struct volume *v, struct dm_st_place *pl)
{
    STARTING_VCN_INPUT_BUFFER in;
    union {
        RETRIEVAL_POINTERS_BUFFER rp;
        unsigned char room[sizeof(RETRIEVAL_POINTERS_BUFFER) +
                           DM_ST_MAX_EXTENTS * sizeof(LARGE_INTEGER) * 2];
    } out;
    DWORD got = 0;
    uint64_t vcn;

    memset(&in, 0, sizeof in);
    if (!dm_win32_volume->device_io_control(file, FSCTL_GET_RETRIEVAL_POINTERS, &in, sizeof in,
                                            &out, sizeof out, &got, NULL))
        return why(pl, "FSCTL_GET_RETRIEVAL_POINTERS", GetLastError());
    vcn = (uint64_t)out.rp.StartingVcn.QuadPart;
    for (DWORD i = 0; i < out.rp.ExtentCount && pl->n_ext < DM_ST_MAX_EXTENTS; i++) {
        uint64_t next = (uint64_t)out.rp.Extents[i].NextVcn.QuadPart;
        int64_t lcn = out.rp.Extents[i].Lcn.QuadPart;
        struct dm_st_extent *e = &pl->ext[pl->n_ext++];

        if (lcn < 0) { /* -1: a hole or compressed run, not on the disk */
            snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                     "the file has a run with no clusters (sparse or compressed)");
            return -1;
        }
        e->file_offset = vcn * v->cluster;
        e->disk_offset = v->start + v->base + (uint64_t)lcn * v->cluster;
        e->bytes = (next - vcn) * v->cluster;
        vcn = next;
    }
    if (vcn * v->cluster < FILE_BYTES) {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the retrieval pointers cover %llu of its %u bytes",
                 (unsigned long long)(vcn * v->cluster), FILE_BYTES);
        return -1;
    }
    return 0;
}

/* Step 6: 1 write back and enabled, 0 disabled or none, -1 unknown. */
static int write_cache(uint32_t disk, const char **said)
{
    wchar_t name[32];
    STORAGE_PROPERTY_QUERY q;
    STORAGE_WRITE_CACHE_PROPERTY w;
    DWORD got = 0;
    HANDLE h;
    BOOL ok;

    *said = "not answered";
    _snwprintf(name, 32, L"\\\\.\\PhysicalDrive%lu", (unsigned long)disk);
    name[31] = L'\0';
    h = dm_win32_volume->create_file(name, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                                     OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    memset(&q, 0, sizeof q);
    memset(&w, 0, sizeof w);
    q.PropertyId = StorageDeviceWriteCacheProperty;
    q.QueryType = PropertyStandardQuery;
    ok = dm_win32_volume->device_io_control(h, IOCTL_STORAGE_QUERY_PROPERTY, &q, sizeof q, &w,
                                            sizeof w, &got, NULL);
    dm_win32_volume->close_handle(h);
    if (!ok || got < offsetof(STORAGE_WRITE_CACHE_PROPERTY, WriteCacheChangeable))
        return -1;
    if (w.WriteCacheType == WriteCacheTypeNone) {
        *said = "none";
        return 0;
    }
    if (w.WriteCacheType == WriteCacheTypeWriteThrough) {
        *said = "write through"; /* what it caches is on the media already */
        return 0;
    }
    if (w.WriteCacheEnabled == WriteCacheDisabled) {
        *said = "disabled";
        return 0;
    }
    if (w.WriteCacheEnabled == WriteCacheEnabled) {
        *said = "enabled";
        return 1;
    }
    *said = "unknown";
    return -1;
}

void dm_st_map_file(HANDLE h, const wchar_t *final_path, struct dm_st_place *pl)
{
    struct volume v;
    const char *cache;

    memset(&v, 0, sizeof v);
    snprintf(pl->unmapped_why, sizeof pl->unmapped_why, "unknown");
    if (final_path[0] == L'\0') {
        snprintf(pl->unmapped_why, sizeof pl->unmapped_why,
                 "the file's final path is unknown (GetFinalPathNameByHandleW)");
        return;
    }
    if (find_volume(final_path, &v, pl) < 0 || open_volume(&v, pl) < 0)
        return;
    pl->disk = v.disk;
    snprintf(pl->disk_name, sizeof pl->disk_name, "disk %lu", (unsigned long)v.disk);
    pl->write_cache = write_cache(v.disk, &cache);
    if (file_runs(h, &v, pl) < 0) {
        pl->n_ext = 0;
        return;
    }
    pl->mapped = 1;
    snprintf(pl->where, sizeof pl->where,
             "retrieval pointers, %llu-byte clusters from byte %llu of the volume, volume at "
             "byte %llu of the disk, write cache %s", (unsigned long long)v.cluster,
             (unsigned long long)v.base, (unsigned long long)v.start, cache);
}
