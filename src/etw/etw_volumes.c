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
 * not seen. Every extent of every volume is kept (the map grows); past
 * the map's bound (DM_PARTMAP_MAX) the extents left out are counted, and
 * the source says so in a note.
 */
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <winioctl.h>

#include "etw/etw_source_internal.h"
#include "platform/win32_volume.h"

/* Room for this many extents at the first ask: a simple volume has one,
 * a spanned or striped one a few; more are asked for again. */
#define EXTENTS_FIRST 16

/* The name of a volume: its first drive letter ("C:"), else its GUID path
 * without the trailing backslash, in UTF-8. Returns 0 or -1. */
static int volume_name(const WCHAR *guid_path, char *name, size_t cap)
{
    WCHAR paths[1024], plain[MAX_PATH];
    DWORD len = 0;
    size_t n;

    if (dm_win32_volume->get_volume_path_names(guid_path, paths,
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

/* The extents of one volume into kd's map, named name. A volume of more
 * extents than the buffer holds answers ERROR_MORE_DATA with their count
 * in NumberOfDiskExtents; then it is asked again with room for all
 * (VOLUME_DISK_EXTENTS page). Returns the extents the map had no room for. */
static unsigned add_extents(struct dm_kdecoder *kd, const WCHAR *guid_path, const char *name)
{
    WCHAR device[MAX_PATH];
    size_t n = wcslen(guid_path), bytes;
    VOLUME_DISK_EXTENTS *out;
    unsigned left_out = 0;
    DWORD got = 0, count = EXTENTS_FIRST;
    HANDLE h;
    BOOL ok = FALSE;

    if (n == 0 || n >= MAX_PATH)
        return 0;
    /* The volume itself is the path without its trailing backslash. */
    memcpy(device, guid_path, n * sizeof device[0]);
    device[n - 1] = L'\0';
    h = dm_win32_volume->create_file(device, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                                     OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    for (int tries = 0; tries < 2 && !ok; tries++) {
        bytes = sizeof *out + (size_t)(count - 1) * sizeof(DISK_EXTENT);
        out = calloc(1, bytes);
        if (out == NULL)
            break;
        ok = dm_win32_volume->device_io_control(h, IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS, NULL,
                                                0, out, (DWORD)bytes, &got, NULL) &&
             got >= sizeof *out;
        if (ok) {
            for (DWORD i = 0; i < out->NumberOfDiskExtents && i < count; i++) {
                const DISK_EXTENT *e = &out->Extents[i];

                if (e->StartingOffset.QuadPart < 0 || e->ExtentLength.QuadPart <= 0)
                    continue;
                if (dm_kdecoder_add_disk_volume(kd, e->DiskNumber,
                                                (uint64_t)e->StartingOffset.QuadPart,
                                                (uint64_t)e->ExtentLength.QuadPart, name) < 0)
                    left_out++;
            }
        } else if (GetLastError() == ERROR_MORE_DATA && out->NumberOfDiskExtents > count) {
            count = out->NumberOfDiskExtents;
        } else {
            tries = 2; /* another error: the volume is left out (file comment) */
        }
        free(out);
    }
    dm_win32_volume->close_handle(h);
    return left_out;
}

unsigned dm_etw_add_disk_volumes(struct dm_kdecoder *kd)
{
    WCHAR guid_path[MAX_PATH];
    HANDLE find = dm_win32_volume->find_first_volume(
        guid_path, (DWORD)(sizeof guid_path / sizeof guid_path[0]));
    unsigned left_out = 0;

    if (find == INVALID_HANDLE_VALUE)
        return 0;
    do {
        char name[DM_PARTITION_MAX];

        if (volume_name(guid_path, name, sizeof name) == 0)
            left_out += add_extents(kd, guid_path, name);
    } while (dm_win32_volume->find_next_volume(find, guid_path,
                                               (DWORD)(sizeof guid_path / sizeof guid_path[0])));
    dm_win32_volume->find_volume_close(find);
    return left_out;
}
