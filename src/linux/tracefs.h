/*
 * tracefs.h - finding tracefs and reading a tracepoint's id and format.
 *
 * The block tracepoints' field offsets differ between kernels, so diskmon
 * never hard-codes them: it reads events/block/NAME/format at run time and
 * looks fields up by name. The parser works on a string, so the unit tests
 * feed it format texts without a tracefs.
 */
#ifndef DM_TRACEFS_H
#define DM_TRACEFS_H

#include <stddef.h>
#include <stdint.h>

#define DM_TP_NAME_MAX 64       /* event and field names, NUL included */
#define DM_TP_MAX_FIELDS 48     /* block events have 12; ftrace events few more */

/* One "field:TYPE NAME; offset:N; size:N; signed:N;" line. */
struct dm_tp_field {
    char name[DM_TP_NAME_MAX];
    uint32_t offset;            /* into the raw sample */
    uint32_t size;              /* bytes; for arrays the whole array */
    uint8_t is_signed;
    uint8_t is_array;           /* "char rwbs[10]" */
    uint8_t is_data_loc;        /* "__data_loc char[] cmd": u32 (len << 16 | off) */
};

struct dm_tp_format {
    char name[DM_TP_NAME_MAX];  /* from "name:", empty if absent */
    uint32_t id;                /* from "ID:", 0 if absent */
    int n_fields;
    struct dm_tp_field fields[DM_TP_MAX_FIELDS];
};

/*
 * Parse the text of a tracepoint format file (len bytes, need not be
 * NUL-terminated). Returns 0, or DM_ECORRUPT with a message naming the line
 * when a field line is malformed or no field is found.
 */
int dm_tp_format_parse(const char *text, size_t len, struct dm_tp_format *fmt,
                       char *err, size_t errlen);

/* The field with this name, or NULL. */
const struct dm_tp_field *dm_tp_format_field(const struct dm_tp_format *fmt,
                                             const char *name);

/*
 * Find a tracefs that has events/block, writing its path into dir. If none
 * is mounted and may_mount is nonzero (diskmon is root), mount tracefs on
 * /sys/kernel/tracing, or fall back to /sys/kernel/debug/tracing. Returns 0,
 * DM_EACCESS or DM_ENOTFOUND with a message that says what to do.
 */
int dm_tracefs_locate(char *dir, size_t dirlen, int may_mount, char *err,
                      size_t errlen);

/* EVENT is a block tracepoint's name ("block_rq_issue"), or SYSTEM/NAME
 * for another system's ("sched/sched_process_fork"). */

/* Nonzero when DIR/events/block/EVENT exists. */
int dm_tracefs_has_event(const char *dir, const char *event);

/* Read DIR/events/block/EVENT/id. Returns 0, DM_EACCESS or DM_ENOTFOUND. */
int dm_tracefs_read_id(const char *dir, const char *event, uint32_t *id,
                       char *err, size_t errlen);

/* Read and parse DIR/events/block/EVENT/format. */
int dm_tracefs_read_format(const char *dir, const char *event,
                           struct dm_tp_format *fmt, char *err, size_t errlen);

/* Write value into DIR/file (a tracefs setting). Returns 0 or -errno. */
int dm_tracefs_put(const char *dir, const char *file, const char *value);

/* Remove the instance folder dir, retrying briefly while the kernel still
 * holds one of its files open. Returns 0 or -errno. */
int dm_tracefs_rmdir(const char *dir);

/* Read a short sysfs/procfs/tracefs text file whole (up to cap - 1 bytes)
 * into buf, NUL-terminated. Returns the length, or -1 with errno set. */
long dm_read_text(const char *path, char *buf, size_t cap);

/* A file holding one decimal number and its newline, as sysfs prints its
 * sizes and counts: 0 with *v, or -1 (unreadable, not one number, or past
 * UINT64_MAX). */
int dm_read_u64(const char *path, uint64_t *v);

/* sysfs gives block device and partition sizes and starts in 512-byte
 * units whatever the logical block size (Documentation/ABI/stable/
 * sysfs-block, /sys/block/<disk>/size; include/linux/blk_types.h,
 * SECTOR_SHIFT 9). */
#define DM_SYSFS_SECTOR_BYTES 512u

/*
 * What to do when diskmon may not use tracefs or perf events: the one
 * privilege advice of the Linux backend, naming this executable. On a
 * stock kernel CAP_PERFMON alone is not enough, nor is a lower
 * kernel.perf_event_paranoid: tracefs (mode 0700) must be readable too,
 * for the tracepoints' ids and formats. Without root the instance cannot
 * be made (instances/ is root's), so such a diskmon reads through perf.
 * Main thread only (a static buffer, filled once).
 */
const char *dm_linux_privilege_hint(void);

#endif /* DM_TRACEFS_H */
