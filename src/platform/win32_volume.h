/*
 * win32_volume.h - the volume, disk and file-layout calls of the live
 * Windows code (where a file lies on the disk: selftest_win32_map.c; the
 * volumes of each disk: etw_volumes.c), behind one table, as the ETW calls
 * are (etw/etw_api.h).
 *
 * dm_win32_volume points at the real kernel32 functions. Windows-only unit
 * tests point it at a FAKE (tests/unit/volume_fake.c) that plays volumes
 * no test machine has: a FAT32 or exFAT stick whose clusters start past
 * its FAT, a volume mounted in a folder, disks that answer the write-cache
 * query in each documented way, volumes with many extents.
 */
#ifndef DM_WIN32_VOLUME_H
#define DM_WIN32_VOLUME_H

#include <windows.h>

struct dm_win32_volume_api {
    DWORD(WINAPI *get_final_path)(HANDLE h, LPWSTR path, DWORD len, DWORD flags);
    BOOL(WINAPI *get_volume_path_name)(LPCWSTR path, LPWSTR mount_point, DWORD len);
    BOOL(WINAPI *get_volume_name)(LPCWSTR mount_point, LPWSTR volume_name, DWORD len);
    BOOL(WINAPI *get_disk_free_space)(LPCWSTR root, LPDWORD sectors_per_cluster,
                                      LPDWORD bytes_per_sector, LPDWORD free_clusters,
                                      LPDWORD total_clusters);
    HANDLE(WINAPI *create_file)(LPCWSTR name, DWORD access, DWORD share,
                                LPSECURITY_ATTRIBUTES sa, DWORD disposition, DWORD flags,
                                HANDLE template_file);
    BOOL(WINAPI *device_io_control)(HANDLE h, DWORD code, LPVOID in, DWORD in_len,
                                    LPVOID out, DWORD out_len, LPDWORD got,
                                    LPOVERLAPPED ov);
    BOOL(WINAPI *close_handle)(HANDLE h);
    HANDLE(WINAPI *find_first_volume)(LPWSTR volume_name, DWORD len);
    BOOL(WINAPI *find_next_volume)(HANDLE find, LPWSTR volume_name, DWORD len);
    BOOL(WINAPI *find_volume_close)(HANDLE find);
    BOOL(WINAPI *get_volume_path_names)(LPCWSTR volume_name, LPWCH names, DWORD len,
                                        PDWORD needed);
};

/* The table in use; the real one unless a test replaced it. */
extern const struct dm_win32_volume_api *dm_win32_volume;
extern const struct dm_win32_volume_api dm_win32_volume_real;

#endif /* DM_WIN32_VOLUME_H */
