/*
 * selftest.h - diskmon --self-test: start the live source as a normal run
 * would, do known I/O of its own to a temporary file, and check from the
 * events that came through the pipeline (filter, sink, ring) that diskmon
 * saw each request once, as it was made. One "PASS name: figure" or
 * "FAIL name: figure" line per check, then a summary (README "Self-test").
 *
 * selftest.c is the portable part: the plan of requests, the capture and
 * the checks. The file and its I/O are the OS's (selftest_linux.c,
 * selftest_win32.c; CMake picks one), behind the small interface below.
 */
#ifndef DM_SELFTEST_H
#define DM_SELFTEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "diskmon.h"
#include "cli/options.h"

/*
 * Run the whole self-test with the live source ops, printing to out.
 * Returns the exit code: 0 when every check passed, 1 otherwise. The
 * temporary file and the source's session are gone when it returns,
 * however the test ended (a failed step, Ctrl+C).
 */
int dm_selftest(const struct dm_options *opt, const struct dm_source_ops *ops, FILE *out);

/* --- the OS part -------------------------------------------------------- */

/* The unit of the self-test's I/O: 4096 bytes, a multiple of every disk's
 * logical sector (512 or 4096) and of the page size, so unbuffered I/O
 * (O_DIRECT; FILE_FLAG_NO_BUFFERING) accepts each offset and length. */
#define DM_ST_BLOCK 4096u
/* The file: 8 blocks, written whole before the capture starts. */
#define DM_ST_FILE_BLOCKS 8u
#define DM_ST_MAX_EXTENTS 16

/* The file's bytes, which both OS parts write and check: every byte of
 * block k is 0xA0 + k, so a read that returns another block's bytes (or
 * zeros) is caught. dm_st_fill puts them at p for bytes at offset. */
static inline void dm_st_fill(unsigned char *p, uint64_t offset, uint32_t bytes)
{
    for (uint32_t i = 0; i < bytes; i += DM_ST_BLOCK)
        memset(p + i, 0xA0 + (int)((offset + i) / DM_ST_BLOCK), DM_ST_BLOCK);
}

/* 0 when the bytes read at offset into p are those dm_st_fill puts there;
 * else DM_EIO with the reason in msg. */
static inline int dm_st_check_read(const unsigned char *p, uint64_t offset, uint32_t bytes,
                                   char *msg, size_t len)
{
    for (uint32_t i = 0; i < bytes; i++) {
        if (p[i] != (unsigned char)(0xA0 + (offset + i) / DM_ST_BLOCK)) {
            snprintf(msg, len, "the %u bytes read at %llu are not those written", bytes,
                     (unsigned long long)offset);
            return DM_EIO;
        }
    }
    return 0;
}

/* One piece of the file where the disk holds it, in the units the events
 * use: byte offsets on the disk the events name (Linux: the whole disk,
 * partition start included; Windows: the physical disk). */
struct dm_st_extent {
    uint64_t file_offset;
    uint64_t disk_offset;
    uint64_t bytes;
};

/* Where the file is, as the OS says it (FIEMAP; retrieval pointers). */
struct dm_st_place {
    uint32_t disk;                /* the events' disk number (dm_event.disk) */
    char disk_name[DM_DISK_NAME_MAX]; /* "vda", "loop3", "disk 0" */
    int mapped;                   /* 1: ext[] holds the whole file */
    int n_ext;
    struct dm_st_extent ext[DM_ST_MAX_EXTENTS];
    char unmapped_why[200];       /* mapped == 0: why the offsets are unknown */
    /* 1: the disk has a volatile write cache, so a flush reaches it;
     * 0: it has none and the OS completes flushes without sending them;
     * -1: unknown. */
    int write_cache;
    char where[160];              /* how the place was learned, for the figure */
};

struct dm_st_file;

/*
 * Main thread, before the source opens: create a new file (never through a
 * symlink, never replacing one) in the folder of path (a directory, or the
 * folder of a file; NULL: the system's default), write its
 * DM_ST_FILE_BLOCKS blocks, make them durable, learn where they are, and
 * keep it open (Windows: that handle's I/O is named only by the session's
 * start rundown). Returns 0, or a negative dm_err with a one-line reason in
 * msg; nothing is left behind on failure.
 */
int dm_st_prepare(struct dm_st_file **f, const char *path, struct dm_st_place *place,
                  char *msg, size_t len);
/* The file's path, as it was made. */
const char *dm_st_path(const struct dm_st_file *f);
/* The name the File column shows for it (UTF-8), or NULL when this OS's
 * events name no files. */
const char *dm_st_file_name(const struct dm_st_file *f);

/*
 * One request, unbuffered and written through: a read or write of bytes
 * at offset (both multiples of DM_ST_BLOCK), or a flush of the file
 * (fdatasync; FlushFileBuffers). early: through the handle opened by
 * dm_st_prepare, else through one opened during the capture. Returns 0,
 * or a negative dm_err with the reason in msg.
 */
int dm_st_request(struct dm_st_file *f, int request, uint64_t offset, uint32_t bytes,
                  int early, char *msg, size_t len);

/* Close and delete the file; f may be NULL. Removes the file even when it
 * was never fully written. */
void dm_st_remove(struct dm_st_file *f);

/* diskmon's own process id and its name as the kernel reports it in
 * events (Linux: the comm; Windows: the image file name). */
uint32_t dm_st_own_pid(void);
void dm_st_own_name(char *buf, size_t len);

#endif /* DM_SELFTEST_H */
