/*
 * win32_volume.c - the real kernel32 volume calls, as the default
 * dm_win32_volume table (win32_volume.h). Local wrappers, not the imported
 * functions themselves, for the reason etw/etw_api.c gives (MSVC C4232).
 */
#include "platform/win32_volume.h"

static DWORD WINAPI real_get_final_path(HANDLE h, LPWSTR path, DWORD len, DWORD flags)
{
    return GetFinalPathNameByHandleW(h, path, len, flags);
}

static BOOL WINAPI real_get_volume_path_name(LPCWSTR path, LPWSTR mount_point, DWORD len)
{
    return GetVolumePathNameW(path, mount_point, len);
}

static BOOL WINAPI real_get_volume_name(LPCWSTR mount_point, LPWSTR volume_name, DWORD len)
{
    return GetVolumeNameForVolumeMountPointW(mount_point, volume_name, len);
}

static BOOL WINAPI real_get_disk_free_space(LPCWSTR root, LPDWORD sectors_per_cluster,
                                            LPDWORD bytes_per_sector, LPDWORD free_clusters,
                                            LPDWORD total_clusters)
{
    return GetDiskFreeSpaceW(root, sectors_per_cluster, bytes_per_sector, free_clusters,
                             total_clusters);
}

static HANDLE WINAPI real_create_file(LPCWSTR name, DWORD access, DWORD share,
                                      LPSECURITY_ATTRIBUTES sa, DWORD disposition,
                                      DWORD flags, HANDLE template_file)
{
    return CreateFileW(name, access, share, sa, disposition, flags, template_file);
}

static BOOL WINAPI real_device_io_control(HANDLE h, DWORD code, LPVOID in, DWORD in_len,
                                          LPVOID out, DWORD out_len, LPDWORD got,
                                          LPOVERLAPPED ov)
{
    return DeviceIoControl(h, code, in, in_len, out, out_len, got, ov);
}

static BOOL WINAPI real_close_handle(HANDLE h)
{
    return CloseHandle(h);
}

static HANDLE WINAPI real_find_first_volume(LPWSTR volume_name, DWORD len)
{
    return FindFirstVolumeW(volume_name, len);
}

static BOOL WINAPI real_find_next_volume(HANDLE find, LPWSTR volume_name, DWORD len)
{
    return FindNextVolumeW(find, volume_name, len);
}

static BOOL WINAPI real_find_volume_close(HANDLE find)
{
    return FindVolumeClose(find);
}

static BOOL WINAPI real_get_volume_path_names(LPCWSTR volume_name, LPWCH names, DWORD len,
                                              PDWORD needed)
{
    return GetVolumePathNamesForVolumeNameW(volume_name, names, len, needed);
}

const struct dm_win32_volume_api dm_win32_volume_real = {
    real_get_final_path,   real_get_volume_path_name, real_get_volume_name,
    real_get_disk_free_space, real_create_file,       real_device_io_control,
    real_close_handle,     real_find_first_volume,    real_find_next_volume,
    real_find_volume_close, real_get_volume_path_names,
};

const struct dm_win32_volume_api *dm_win32_volume = &dm_win32_volume_real;
