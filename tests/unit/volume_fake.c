/*
 * volume_fake.c - the FAKE Win32 volume calls (volume_fake.h). Each answer
 * follows the page or sample cited beside it; where those are silent the
 * fake plays each plausible answer, chosen by the test.
 */
#include <stdio.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>
#include <winioctl.h>

#include "platform/win32_volume.h"
#include "volume_fake.h"

#define VOL_HANDLE_BASE 0x7E00u  /* fake volume handles: base + volume */
#define DISK_HANDLE_BASE 0x7F00u /* fake disk handles: base + disk number */
#define FIND_HANDLE 0x7D00u
#define EXTRA_DISK 10u
#define EXTRA_MAX 240u          /* extra volumes the fake can play */
#define MIB (1024ull * 1024u)
#define GIB (1024ull * MIB)

struct vol {
    const wchar_t *mount;   /* NULL: no path at all */
    wchar_t guid[64];       /* "\\?\Volume{...}\" */
    DWORD bytes_per_sector, sectors_per_cluster;
    uint64_t base_sectors;  /* FileAreaOffset */
    uint32_t disk;
    uint64_t start, length;
};

static struct {
    struct dm_vfake_config cfg;
    struct vol vols[DM_VFAKE_VOLUMES];
    DWORD vol_access[DM_VFAKE_VOLUMES + EXTRA_MAX];
    int open;
    unsigned next_find;
} vf;

static const struct vol base_vols[DM_VFAKE_VOLUMES] = {
    {L"C:\\", L"\\\\?\\Volume{0c0c0c0c-0000-0000-0000-000000000001}\\", 512, 8, 0, 0,
     1 * MIB, 100000 * MIB},
    {L"E:\\", L"\\\\?\\Volume{0e0e0e0e-0000-0000-0000-000000000002}\\", 512, 8, 15264, 1,
     1 * MIB, 30000 * MIB},
    {L"F:\\", L"\\\\?\\Volume{0f0f0f0f-0000-0000-0000-000000000003}\\", 512, 256, 32768, 3,
     4 * MIB, 60000 * MIB},
    {L"C:\\mnt\\d\\", L"\\\\?\\Volume{0d0d0d0d-0000-0000-0000-000000000004}\\", 512, 128, 0,
     2, 16 * MIB, 500000 * MIB},
};

void dm_vfake_geometry(enum dm_vfake_vol v, struct dm_vfake_geometry *g)
{
    const struct vol *x = &base_vols[v];

    g->disk = x->disk;
    g->start = x->start;
    g->cluster = (uint64_t)x->bytes_per_sector * x->sectors_per_cluster;
    g->base_bytes = x->base_sectors * x->bytes_per_sector;
}

static BOOL fail(DWORD code)
{
    SetLastError(code);
    return FALSE;
}

/* How many volumes the machine has: the four, then the extra ones. */
static unsigned n_volumes(void)
{
    return DM_VFAKE_VOLUMES +
           (vf.cfg.extra_volumes < EXTRA_MAX ? vf.cfg.extra_volumes : EXTRA_MAX);
}

/* Volume i: one of the four, or extra volume i - 4: no mount point, one
 * extent of 512 MiB on disk EXTRA_DISK at (i - 3) GiB, NTFS. */
static void vol_at(unsigned i, struct vol *v)
{
    if (i < DM_VFAKE_VOLUMES) {
        *v = vf.vols[i];
        return;
    }
    memset(v, 0, sizeof *v);
    _snwprintf(v->guid, 64, L"\\\\?\\Volume{eeeeeeee-0000-0000-0000-%012u}\\", i);
    v->guid[63] = L'\0';
    v->bytes_per_sector = 512;
    v->sectors_per_cluster = 8;
    v->disk = EXTRA_DISK;
    v->start = (uint64_t)(i - DM_VFAKE_VOLUMES + 1) * GIB;
    v->length = 512 * MIB;
}

static int vol_of_handle(HANDLE h)
{
    uintptr_t v = (uintptr_t)h;

    return v >= VOL_HANDLE_BASE && v < VOL_HANDLE_BASE + n_volumes()
               ? (int)(v - VOL_HANDLE_BASE)
               : -1;
}

static int is_disk_handle(HANDLE h)
{
    return (uintptr_t)h >= DISK_HANDLE_BASE && (uintptr_t)h < DISK_HANDLE_BASE + 64u;
}

static DWORD copy_out(const wchar_t *s, LPWSTR out, DWORD len)
{
    size_t n = wcslen(s);

    if (n + 1 > len)
        return (DWORD)(n + 1);
    memcpy(out, s, (n + 1) * sizeof *s);
    return (DWORD)n;
}

/* GetFinalPathNameByHandleW: the self-test file, on its volume's first
 * DOS path, with the "\\?\" prefix the page documents. */
static DWORD WINAPI fake_get_final_path(HANDLE h, LPWSTR path, DWORD len, DWORD flags)
{
    wchar_t p[MAX_PATH];

    (void)h;
    (void)flags;
    _snwprintf(p, MAX_PATH, L"\\\\?\\%lsdiskmon-selftest.1.tmp",
               vf.vols[vf.cfg.file_volume].mount);
    p[MAX_PATH - 1] = L'\0';
    return copy_out(p, path, len);
}

/* GetVolumePathNameW: the mount point (drive letter or mounted folder)
 * with the trailing backslash, of the volume the path lies on: the
 * longest mount point that starts the path. */
static BOOL WINAPI fake_get_volume_path_name(LPCWSTR path, LPWSTR mount_point, DWORD len)
{
    size_t best = 0;
    int which = -1;

    if (wcsncmp(path, L"\\\\?\\", 4) == 0)
        path += 4;
    for (int i = 0; i < DM_VFAKE_VOLUMES; i++) {
        size_t n = wcslen(vf.vols[i].mount);

        if (n > best && _wcsnicmp(path, vf.vols[i].mount, n) == 0) {
            best = n;
            which = i;
        }
    }
    if (which < 0)
        return fail(ERROR_FILE_NOT_FOUND);
    if (copy_out(vf.vols[which].mount, mount_point, len) >= len)
        return fail(ERROR_FILENAME_EXCED_RANGE);
    return TRUE;
}

/* GetVolumeNameForVolumeMountPointW: a mount point with its trailing
 * backslash (the page requires it) gives "\\?\Volume{GUID}\". */
static BOOL WINAPI fake_get_volume_name(LPCWSTR mount_point, LPWSTR volume_name, DWORD len)
{
    for (int i = 0; i < DM_VFAKE_VOLUMES; i++) {
        if (_wcsicmp(mount_point, vf.vols[i].mount) == 0) {
            if (copy_out(vf.vols[i].guid, volume_name, len) >= len)
                return fail(ERROR_FILENAME_EXCED_RANGE);
            return TRUE;
        }
    }
    return fail(ERROR_NOT_A_REPARSE_POINT);
}

/* GetDiskFreeSpaceW: the root directory of a volume, by mount point or by
 * volume GUID path (both end in a backslash). */
static BOOL WINAPI fake_get_disk_free_space(LPCWSTR root, LPDWORD spc, LPDWORD bps,
                                            LPDWORD free_c, LPDWORD total_c)
{
    for (int i = 0; i < DM_VFAKE_VOLUMES; i++) {
        const struct vol *v = &vf.vols[i];

        if (_wcsicmp(root, v->mount) == 0 || _wcsicmp(root, v->guid) == 0) {
            *spc = v->sectors_per_cluster;
            *bps = v->bytes_per_sector;
            *total_c = (DWORD)(v->length / ((uint64_t)*spc * *bps));
            *free_c = *total_c / 2;
            return TRUE;
        }
    }
    return fail(ERROR_PATH_NOT_FOUND);
}

/* CreateFileW of a volume ("\\?\Volume{GUID}" without the trailing
 * backslash, or "\\.\X:") or of a disk ("\\.\PhysicalDriveN"). The access
 * asked is kept: FSCTL_GET_RETRIEVAL_POINTER_BASE needs more than none. */
static HANDLE WINAPI fake_create_file(LPCWSTR name, DWORD access, DWORD share,
                                      LPSECURITY_ATTRIBUTES sa, DWORD disposition,
                                      DWORD flags, HANDLE template_file)
{
    unsigned disk;

    (void)share;
    (void)sa;
    (void)disposition;
    (void)flags;
    (void)template_file;
    if (swscanf(name, L"\\\\.\\PhysicalDrive%u", &disk) == 1 && disk < 64) {
        vf.open++;
        return (HANDLE)(uintptr_t)(DISK_HANDLE_BASE + disk);
    }
    for (unsigned i = 0; i < n_volumes(); i++) {
        struct vol at;
        const struct vol *v = &at;
        size_t n;
        int by_guid;
        int by_letter;

        vol_at(i, &at);
        n = wcslen(v->guid);
        by_guid = wcslen(name) == n - 1 && _wcsnicmp(name, v->guid, n - 1) == 0;
        by_letter = v->mount != NULL && wcslen(v->mount) == 3 && wcslen(name) == 6 &&
                        wcsncmp(name, L"\\\\.\\", 4) == 0 &&
                        towupper(name[4]) == towupper(v->mount[0]) && name[5] == L':';

        if (by_guid || by_letter) {
            vf.vol_access[i] = access;
            vf.open++;
            return (HANDLE)(uintptr_t)(VOL_HANDLE_BASE + (unsigned)i);
        }
        if (_wcsicmp(name, v->guid) == 0) {
            /* With the backslash it names the root folder, which
             * OPEN_EXISTING without FILE_FLAG_BACKUP_SEMANTICS refuses. */
            SetLastError(ERROR_ACCESS_DENIED);
            return INVALID_HANDLE_VALUE;
        }
    }
    SetLastError(ERROR_FILE_NOT_FOUND);
    return INVALID_HANDLE_VALUE;
}

/* IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS (the ntddvol.h page): a buffer
 * smaller than VOLUME_DISK_EXTENTS is refused; one too small for every
 * extent gets the count and ERROR_MORE_DATA (VOLUME_DISK_EXTENTS page). */
static BOOL disk_extents(int i, LPVOID out, DWORD out_len, LPDWORD got)
{
    VOLUME_DISK_EXTENTS *e = out;
    unsigned n = i == (int)vf.cfg.file_volume && vf.cfg.extents > 1 ? vf.cfg.extents : 1;
    size_t need = sizeof *e + (n - 1) * sizeof(DISK_EXTENT);
    struct vol v;
    uint64_t each;

    vol_at((unsigned)i, &v);
    each = v.length / n;
    if (out_len < sizeof *e)
        return fail(ERROR_INVALID_PARAMETER);
    e->NumberOfDiskExtents = n;
    for (unsigned k = 0; k < n && sizeof *e + k * sizeof(DISK_EXTENT) <= out_len; k++) {
        e->Extents[k].DiskNumber = v.disk;
        e->Extents[k].StartingOffset.QuadPart = (LONGLONG)(v.start + k * each);
        e->Extents[k].ExtentLength.QuadPart = (LONGLONG)each;
    }
    if (out_len < need) {
        *got = sizeof *e;
        return fail(ERROR_MORE_DATA);
    }
    *got = (DWORD)need;
    return TRUE;
}

/* FSCTL_GET_RETRIEVAL_POINTER_BASE: on a volume handle only, with manage
 * volume access, which fastfat grants an open that was given any access
 * right beyond traverse (create.c FatOpenVolume, acchksup.c
 * FatExplicitDeviceAccessGranted); else STATUS_INVALID_PARAMETER. */
static BOOL pointer_base(int i, LPVOID out, DWORD out_len, LPDWORD got)
{
    DWORD a = i >= 0 ? vf.vol_access[i] : 0;

    if (i < 0 || !(a & (GENERIC_READ | GENERIC_WRITE | GENERIC_ALL |
                        (SPECIFIC_RIGHTS_ALL & ~(DWORD)FILE_TRAVERSE))))
        return fail(ERROR_INVALID_PARAMETER);
    if (vf.cfg.base_fails)
        return fail(ERROR_INVALID_FUNCTION);
    if (out_len < sizeof(RETRIEVAL_POINTER_BASE))
        return fail(ERROR_INSUFFICIENT_BUFFER);
    {
        struct vol v;

        vol_at((unsigned)i, &v);
        ((RETRIEVAL_POINTER_BASE *)out)->FileAreaOffset.QuadPart = (LONGLONG)v.base_sectors;
    }
    *got = sizeof(RETRIEVAL_POINTER_BASE);
    return TRUE;
}

/* IOCTL_STORAGE_QUERY_PROPERTY, StorageDeviceWriteCacheProperty, as the
 * test chose (enum dm_vfake_cache). */
static BOOL write_cache(LPVOID in, DWORD in_len, LPVOID out, DWORD out_len, LPDWORD got)
{
    const STORAGE_PROPERTY_QUERY *q = in;
    STORAGE_WRITE_CACHE_PROPERTY *w = out;

    if (in_len < sizeof *q || q->PropertyId != StorageDeviceWriteCacheProperty ||
        q->QueryType != PropertyStandardQuery)
        return fail(ERROR_INVALID_FUNCTION);
    if (vf.cfg.cache == DM_VFAKE_CACHE_NOT_SUPPORTED)
        return fail(ERROR_INVALID_FUNCTION);
    if (out_len < sizeof *w)
        return fail(ERROR_INSUFFICIENT_BUFFER);
    memset(w, 0, sizeof *w);
    w->Version = w->Size = sizeof *w;
    switch (vf.cfg.cache) {
    case DM_VFAKE_CACHE_DISABLED:
        w->WriteCacheType = WriteCacheTypeWriteBack;
        w->WriteCacheEnabled = WriteCacheDisabled;
        break;
    case DM_VFAKE_CACHE_ENABLED:
        w->WriteCacheType = WriteCacheTypeWriteBack;
        w->WriteCacheEnabled = WriteCacheEnabled;
        w->FlushCacheSupported = TRUE;
        break;
    case DM_VFAKE_CACHE_NONE:
        w->WriteCacheType = WriteCacheTypeNone;
        w->WriteCacheEnabled = WriteCacheDisabled;
        break;
    case DM_VFAKE_CACHE_WRITE_THROUGH:
        w->WriteCacheType = WriteCacheTypeWriteThrough;
        w->WriteCacheEnabled = WriteCacheEnabled;
        break;
    default:
        break; /* unknown: 0, 0 */
    }
    *got = sizeof *w;
    return TRUE;
}

/* FSCTL_GET_RETRIEVAL_POINTERS on the file: its runs from StartingVcn, or
 * ERROR_MORE_DATA with those that fit (the page). */
static BOOL retrieval_pointers(LPVOID in, DWORD in_len, LPVOID out, DWORD out_len,
                               LPDWORD got)
{
    RETRIEVAL_POINTERS_BUFFER *r = out;
    uint64_t vcn = 0, start;
    DWORD n = 0, room;

    if (in_len < sizeof(STARTING_VCN_INPUT_BUFFER) || out_len < sizeof *r)
        return fail(ERROR_INVALID_PARAMETER);
    start = (uint64_t)((const STARTING_VCN_INPUT_BUFFER *)in)->StartingVcn.QuadPart;
    room = (DWORD)((out_len - offsetof(RETRIEVAL_POINTERS_BUFFER, Extents)) /
                   sizeof r->Extents[0]);
    r->StartingVcn.QuadPart = (LONGLONG)start;
    for (int k = 0; k < vf.cfg.n_runs; k++) {
        vcn += vf.cfg.runs[k].clusters;
        if (vcn <= start)
            continue;
        if (n == room) {
            r->ExtentCount = n;
            *got = out_len;
            return fail(ERROR_MORE_DATA);
        }
        r->Extents[n].NextVcn.QuadPart = (LONGLONG)vcn;
        r->Extents[n].Lcn.QuadPart = vf.cfg.runs[k].lcn;
        n++;
    }
    r->ExtentCount = n;
    *got = (DWORD)(offsetof(RETRIEVAL_POINTERS_BUFFER, Extents) + n * sizeof r->Extents[0]);
    return TRUE;
}

static BOOL WINAPI fake_device_io_control(HANDLE h, DWORD code, LPVOID in, DWORD in_len,
                                          LPVOID out, DWORD out_len, LPDWORD got,
                                          LPOVERLAPPED ov)
{
    int i = vol_of_handle(h);

    (void)ov;
    *got = 0;
    if (code == FSCTL_GET_RETRIEVAL_POINTER_BASE)
        return pointer_base(i, out, out_len, got);
    if (i >= 0 && code == IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS)
        return disk_extents(i, out, out_len, got);
    if (is_disk_handle(h) && code == IOCTL_STORAGE_QUERY_PROPERTY)
        return write_cache(in, in_len, out, out_len, got);
    if (i < 0 && !is_disk_handle(h) && code == FSCTL_GET_RETRIEVAL_POINTERS)
        return retrieval_pointers(in, in_len, out, out_len, got);
    return fail(ERROR_INVALID_FUNCTION);
}

static BOOL WINAPI fake_close_handle(HANDLE h)
{
    if (vol_of_handle(h) >= 0 || is_disk_handle(h)) {
        vf.open--;
        return TRUE;
    }
    return CloseHandle(h);
}

/* FindFirstVolumeW / FindNextVolumeW: the four volumes, then the extra
 * ones; ERROR_NO_MORE_FILES at the end (FindNextVolumeW page). */
static BOOL next_volume(LPWSTR name, DWORD len)
{
    unsigned k = vf.next_find++;
    struct vol v;

    if (k >= n_volumes())
        return fail(ERROR_NO_MORE_FILES);
    vol_at(k, &v);
    return copy_out(v.guid, name, len) < len ? TRUE : fail(ERROR_FILENAME_EXCED_RANGE);
}

static HANDLE WINAPI fake_find_first_volume(LPWSTR name, DWORD len)
{
    vf.next_find = 0;
    if (!next_volume(name, len))
        return INVALID_HANDLE_VALUE;
    vf.open++;
    return (HANDLE)(uintptr_t)FIND_HANDLE;
}

static BOOL WINAPI fake_find_next_volume(HANDLE find, LPWSTR name, DWORD len)
{
    (void)find;
    return next_volume(name, len);
}

static BOOL WINAPI fake_find_volume_close(HANDLE find)
{
    (void)find;
    vf.open--;
    return TRUE;
}

/* GetVolumePathNamesForVolumeNameW: the volume's one mount point, or
 * none (an empty list) for the extra volumes. */
static BOOL WINAPI fake_get_volume_path_names(LPCWSTR volume_name, LPWCH names, DWORD len,
                                              PDWORD needed)
{
    const wchar_t *mount = L"";

    for (int i = 0; i < DM_VFAKE_VOLUMES; i++)
        if (_wcsicmp(volume_name, vf.vols[i].guid) == 0)
            mount = vf.vols[i].mount;
    *needed = (DWORD)wcslen(mount) + 2;
    if (len < *needed)
        return fail(ERROR_MORE_DATA);
    wcscpy(names, mount);
    names[wcslen(mount) + 1] = L'\0';
    return TRUE;
}

static const struct dm_win32_volume_api fake_api = {
    fake_get_final_path,      fake_get_volume_path_name, fake_get_volume_name,
    fake_get_disk_free_space, fake_create_file,          fake_device_io_control,
    fake_close_handle,        fake_find_first_volume,    fake_find_next_volume,
    fake_find_volume_close,   fake_get_volume_path_names,
};

void dm_vfake_install(const struct dm_vfake_config *cfg)
{
    memset(&vf, 0, sizeof vf);
    vf.cfg = *cfg;
    memcpy(vf.vols, base_vols, sizeof vf.vols);
    dm_win32_volume = &fake_api;
}

void dm_vfake_uninstall(void)
{
    dm_win32_volume = &dm_win32_volume_real;
}

int dm_vfake_open_handles(void)
{
    return vf.open;
}
