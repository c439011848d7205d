/*
 * selftest_win32.h - where the self-test's file lies on the physical disk,
 * on Windows (selftest_win32_map.c), for selftest_win32.c.
 */
#ifndef DM_SELFTEST_WIN32_H
#define DM_SELFTEST_WIN32_H

#include <windows.h>

#include "selftest/selftest.h"

/*
 * Fill pl (disk, disk_name, ext[], mapped or unmapped_why, write_cache,
 * where) for the file open as h whose final path is final_path (as
 * GetFinalPathNameByHandleW gives it, "\\?\" prefix and all). pl was
 * zeroed by the caller with write_cache -1. Never fails: what cannot be
 * learned stays unknown, with the reason in unmapped_why.
 */
void dm_st_map_file(HANDLE h, const wchar_t *final_path, struct dm_st_place *pl);

#endif /* DM_SELFTEST_WIN32_H */
