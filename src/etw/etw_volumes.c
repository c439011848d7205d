/*
 * etw_volumes.c - which volume each disk request falls in, live: the
 * (disk number, byte range) of every volume, read once at start, for the
 * decoder's volume map (the same lookup replay fills from the trace's
 * LogDisk records, base/partmap.h).
 *
 * Each volume (FindFirstVolumeW / FindNextVolumeW, "\\?\Volume{GUID}\") is
 * named by its first drive letter (GetVolumePathNamesForVolumeNameW: "C:\"
 * becomes "C:"), else by its GUID path without the trailing backslash; its
 * extents on the disks come from IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS on
 * the volume opened with no access rights (enough for that IOCTL), each
 * extent a DiskNumber, StartingOffset and ExtentLength in bytes (Microsoft
 * Learn: the FindFirstVolumeW, GetVolumePathNamesForVolumeNameW and
 * IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS pages, VOLUME_DISK_EXTENTS and
 * DISK_EXTENT). A volume whose name or extents cannot be read (a CD drive
 * without a disc; Wine, which has no such volumes) is left out: its
 * requests keep an empty partition. Volumes mounted after the start are
 * not seen.
 */
#include <string.h>
#include <windows.h>
#include <winioctl.h>

#include "etw/etw_source_internal.h"

/* Extents read per volume: a simple volume has one; a spanned or striped
 * one a few. One that needs more than this is left out. */
#define EXTENTS_MAX 16

/* The name of a volume: its first drive letter ("C:"), else its GUID path
 * without the trailing backslash, in UTF-8. Returns 0 or -1. */
static int volume_name(const WCHAR *guid_path, char *name, size_t cap)
{
    WCHAR paths[1024], plain[MAX_PATH];
    DWORD len = 0;
    size_t n;

    if (GetVolumePathNamesForVolumeNameW(guid_path, paths,
                                         (DWORD)(sizeof paths / sizeof paths[0]), &len)) {
        for (const WCHAR *p = paths; *p != L'\0'; p += wcslen(p) + 1) {
            if (wcslen(p) == 3 && p[1] == L':' && p[2] == L'\\') {
                name[0] = (char)p[0];
                name[1] = ':';
                name[2] = '\0';
                return 0;
            }
        }
    }
    n = wcslen(guid_path);
    if (n == 0 || n >= MAX_PATH)
        return -1;
    memcpy(plain, guid_path, n * sizeof plain[0]);
    plain[n - 1] = L'\0'; /* the trailing backslash */
    return WideCharToMultiByte(CP_UTF8, 0, plain, -1, name, (int)cap, NULL, NULL) > 0 ? 0
                                                                                      : -1;
}

/* The extents of one volume into kd's map, named name. */
static void add_extents(struct dm_kdecoder *kd, const WCHAR *guid_path, const char *name)
{
    WCHAR device[MAX_PATH];
    union {
        VOLUME_DISK_EXTENTS v;
        unsigned char room[sizeof(VOLUME_DISK_EXTENTS) + EXTENTS_MAX * sizeof(DISK_EXTENT)];
    } out;
    size_t n = wcslen(guid_path);
    DWORD got = 0;
    HANDLE h;

    if (n == 0 || n >= MAX_PATH)
        return;
    /* The volume itself is the path without its trailing backslash. */
    memcpy(device, guid_path, n * sizeof device[0]);
    device[n - 1] = L'\0';
    h = CreateFileW(device, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0,
                    NULL);
    if (h == INVALID_HANDLE_VALUE)
        return;
    if (DeviceIoControl(h, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, NULL, 0, &out, sizeof out,
                        &got, NULL) &&
        got >= sizeof out.v) {
        DWORD count = out.v.NumberOfDiskExtents;

        for (DWORD i = 0; i < count && i <= EXTENTS_MAX; i++) {
            const DISK_EXTENT *e = &out.v.Extents[i];

            if (e->StartingOffset.QuadPart < 0 || e->ExtentLength.QuadPart <= 0)
                continue;
            dm_kdecoder_add_disk_volume(kd, e->DiskNumber,
                                        (uint64_t)e->StartingOffset.QuadPart,
                                        (uint64_t)e->ExtentLength.QuadPart, name);
        }
    }
    CloseHandle(h);
}

void dm_etw_add_disk_volumes(struct dm_kdecoder *kd)
{
    WCHAR guid_path[MAX_PATH];
    HANDLE find = FindFirstVolumeW(guid_path, (DWORD)(sizeof guid_path / sizeof guid_path[0]));

    if (find == INVALID_HANDLE_VALUE)
        return;
    do {
        char name[DM_PARTITION_MAX];

        if (volume_name(guid_path, name, sizeof name) == 0)
            add_extents(kd, guid_path, name);
    } while (FindNextVolumeW(find, guid_path, (DWORD)(sizeof guid_path / sizeof guid_path[0])));
    FindVolumeClose(find);
}
