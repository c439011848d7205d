/*
 * tracefs.c - locate (or mount) tracefs and read block tracepoint ids and
 * formats.
 *
 * A format file looks like this (docs/linux.md §2):
 *
 *     name: block_io_start
 *     ID: 2102
 *     format:
 *         field:unsigned short common_type;  offset:0;  size:2;  signed:0;
 *         ...
 *         field:char rwbs[10];  offset:34;  size:10;  signed:0;
 *         field:__data_loc char[] cmd;  offset:60;  size:4;  signed:0;
 *
 *     print fmt: ...
 *
 * Only "name:", "ID:" and "field:" lines matter; everything else is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/tracefs.h"
#include "platform/platform.h"

/* Where tracefs lives: its own mount point since Linux 4.1, and the older
 * path inside debugfs, which the kernel automounts tracefs under. */
#define TRACEFS_PATH "/sys/kernel/tracing"
#define DEBUGFS_TRACING_PATH "/sys/kernel/debug/tracing"

/* A format file is a few kilobytes (the print fmt line is the longest). */
#define FORMAT_FILE_MAX 65536

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static int starts_with(const char *s, size_t n, const char *prefix)
{
    size_t pl = strlen(prefix);

    return n >= pl && memcmp(s, prefix, pl) == 0;
}

static int key_is(const char *key, size_t klen, const char *want)
{
    return klen == strlen(want) && memcmp(key, want, klen) == 0;
}

/* Parse decimal digits s[0..n) into *v; nonzero on success. */
static int parse_u32(const char *s, size_t n, uint32_t *v)
{
    uint64_t acc = 0;

    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        acc = acc * 10 + (uint64_t)(s[i] - '0');
        if (acc > UINT32_MAX)
            return 0;
    }
    *v = (uint32_t)acc;
    return 1;
}

/*
 * The declaration part of a field line, "unsigned short common_type" or
 * "char comm[16]" or "__data_loc char[] cmd": the name is the last
 * identifier, after any [N] suffix is taken off.
 */
static int parse_decl(const char *d, size_t n, struct dm_tp_field *f)
{
    size_t end = n, start;

    while (end > 0 && is_space(d[end - 1]))
        end--;
    if (end > 0 && d[end - 1] == ']') {
        while (end > 0 && d[end - 1] != '[')
            end--;
        if (end == 0)
            return 0;
        end--;
        f->is_array = 1;
        while (end > 0 && is_space(d[end - 1]))
            end--;
    }
    start = end;
    while (start > 0 && is_ident(d[start - 1]))
        start--;
    /* A C identifier: not empty, not starting with a digit. */
    if (start == end || end - start >= sizeof f->name ||
        (d[start] >= '0' && d[start] <= '9'))
        return 0;
    memcpy(f->name, d + start, end - start);
    f->name[end - start] = '\0';
    f->is_data_loc = starts_with(d, n, "__data_loc");
    return 1;
}

/* "field:DECL; offset:N; size:N; signed:N;" without the "field:". */
static int parse_field(const char *s, size_t n, struct dm_tp_field *f)
{
    const char *semi = memchr(s, ';', n);
    int have_offset = 0, have_size = 0;
    size_t i;

    memset(f, 0, sizeof *f);
    if (semi == NULL || !parse_decl(s, (size_t)(semi - s), f))
        return 0;
    i = (size_t)(semi - s) + 1;
    while (i < n) {
        const char *key, *colon, *end;
        size_t klen;
        uint32_t v;

        while (i < n && is_space(s[i]))
            i++;
        if (i == n)
            break;
        key = s + i;
        colon = memchr(key, ':', n - i);
        if (colon == NULL)
            return 0;
        end = memchr(colon, ';', n - (size_t)(colon - s));
        if (end == NULL || !parse_u32(colon + 1, (size_t)(end - colon - 1), &v))
            return 0;
        klen = (size_t)(colon - key);
        if (key_is(key, klen, "offset")) {
            f->offset = v;
            have_offset = 1;
        } else if (key_is(key, klen, "size")) {
            f->size = v;
            have_size = 1;
        } else if (key_is(key, klen, "signed")) {
            if (v > 1)
                return 0;
            f->is_signed = (uint8_t)v;
        }
        /* Other keys are newer additions: skip them. */
        i = (size_t)(end - s) + 1;
    }
    /* The field must lie within a 32-bit offset range (raw samples are at
     * most 64 KiB anyway, perf_event_header.size is 16 bits). */
    return have_offset && have_size && f->size > 0 &&
           (uint64_t)f->offset + f->size <= UINT32_MAX;
}

int dm_tp_format_parse(const char *text, size_t len, struct dm_tp_format *fmt,
                       char *err, size_t errlen)
{
    size_t pos = 0;
    int line_no = 0;

    memset(fmt, 0, sizeof *fmt);
    while (pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - pos;

        pos += n + (nl != NULL);
        line_no++;
        while (n > 0 && is_space(*line)) {
            line++;
            n--;
        }
        if (starts_with(line, n, "field:")) {
            if (fmt->n_fields == DM_TP_MAX_FIELDS) {
                snprintf(err, errlen, "tracepoint format line %d: more than %d fields",
                         line_no, DM_TP_MAX_FIELDS);
                return DM_ECORRUPT;
            }
            if (!parse_field(line + 6, n - 6, &fmt->fields[fmt->n_fields])) {
                snprintf(err, errlen,
                         "tracepoint format line %d: malformed field line "
                         "(want \"field:TYPE NAME; offset:N; size:N; signed:N;\")",
                         line_no);
                return DM_ECORRUPT;
            }
            fmt->n_fields++;
        } else if (starts_with(line, n, "ID:")) {
            size_t i = 3;

            while (i < n && is_space(line[i]))
                i++;
            while (n > i && is_space(line[n - 1]))
                n--;
            if (!parse_u32(line + i, n - i, &fmt->id)) {
                snprintf(err, errlen, "tracepoint format line %d: bad ID", line_no);
                return DM_ECORRUPT;
            }
        } else if (starts_with(line, n, "name:")) {
            size_t i = 5;

            while (i < n && is_space(line[i]))
                i++;
            while (n > i && is_space(line[n - 1]))
                n--;
            if (n - i >= sizeof fmt->name)
                n = i + sizeof fmt->name - 1;
            memcpy(fmt->name, line + i, n - i);
            fmt->name[n - i] = '\0';
        }
    }
    if (fmt->n_fields == 0) {
        snprintf(err, errlen, "tracepoint format has no field lines");
        return DM_ECORRUPT;
    }
    return 0;
}

const struct dm_tp_field *dm_tp_format_field(const struct dm_tp_format *fmt,
                                             const char *name)
{
    for (int i = 0; i < fmt->n_fields; i++)
        if (strcmp(fmt->fields[i].name, name) == 0)
            return &fmt->fields[i];
    return NULL;
}

/* 1: DIR/events/block exists; 0: it does not; -1: we may not look. */
static int block_events_at(const char *dir)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof path, "%s/events/block", dir);
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 1 : 0;
    return dm_err_from_errno(errno) == DM_EACCESS ? -1 : 0;
}

int dm_tracefs_locate(char *dir, size_t dirlen, int may_mount, char *err,
                      size_t errlen)
{
    static const char *const candidates[] = {TRACEFS_PATH, DEBUGFS_TRACING_PATH};
    const char *denied = NULL;
    int mount_errno;

    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        int found = block_events_at(candidates[i]);

        if (found == 1) {
            snprintf(dir, dirlen, "%s", candidates[i]);
            return 0;
        }
        if (found < 0 && denied == NULL)
            denied = candidates[i];
    }
    if (denied != NULL) {
        snprintf(err, errlen, "cannot read %s: permission denied. %s", denied,
                 dm_linux_privilege_hint());
        return DM_EACCESS;
    }
    if (!may_mount) {
        snprintf(err, errlen,
                 "tracefs is not mounted (mount -t tracefs nodev %s). %s",
                 TRACEFS_PATH, dm_linux_privilege_hint());
        return DM_EACCESS;
    }
    if (mount("nodev", TRACEFS_PATH, "tracefs", 0, NULL) == 0 &&
        block_events_at(TRACEFS_PATH) == 1) {
        snprintf(dir, dirlen, "%s", TRACEFS_PATH);
        return 0;
    }
    mount_errno = errno;
    /* Looking inside debugfs/tracing makes the kernel automount tracefs
     * there, when debugfs itself is mounted. */
    if (block_events_at(DEBUGFS_TRACING_PATH) == 1) {
        snprintf(dir, dirlen, "%s", DEBUGFS_TRACING_PATH);
        return 0;
    }
    snprintf(err, errlen,
             "tracefs is not mounted and mounting it on %s failed (%s); mount it "
             "with: mount -t tracefs nodev %s",
             TRACEFS_PATH, strerror(mount_errno), TRACEFS_PATH);
    return dm_err_from_errno(mount_errno) == DM_EACCESS ? DM_EACCESS : DM_ENOTFOUND;
}

/* DIR/events/SYSTEM/NAME/FILE for event "SYSTEM/NAME", or "NAME" of the
 * block system (tracefs.h); file "" for the event's folder. */
static void event_path(char *path, size_t cap, const char *dir, const char *event,
                       const char *file)
{
    snprintf(path, cap, "%s/events/%s%s%s%s", dir, strchr(event, '/') != NULL ? "" : "block/",
             event, file[0] != '\0' ? "/" : "", file);
}

int dm_tracefs_has_event(const char *dir, const char *event)
{
    char path[256];
    struct stat st;

    event_path(path, sizeof path, dir, event, "");
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

long dm_read_text(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    int e = 0;

    if (fd < 0)
        return -1;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            break;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (e != 0) {
        errno = e;
        return -1;
    }
    buf[len] = '\0';
    return (long)len;
}

int dm_read_u64(const char *path, uint64_t *v)
{
    char buf[32], *end;
    unsigned long long n;

    if (dm_read_text(path, buf, sizeof buf) <= 0)
        return -1;
    errno = 0;
    n = strtoull(buf, &end, 10);
    if (errno != 0 || end == buf || (*end != '\n' && *end != '\0'))
        return -1;
    *v = (uint64_t)n;
    return 0;
}

/* dm_read_text with a message that says what to do; returns the length or
 * a negative dm_err. */
static long read_small(const char *path, char *buf, size_t cap, char *err,
                       size_t errlen)
{
    long n = dm_read_text(path, buf, cap);
    int e = errno, rc;

    if (n >= 0)
        return n;
    rc = dm_err_from_errno(e);
    snprintf(err, errlen, "cannot read %s: %s%s%s", path, strerror(e),
             rc == DM_EACCESS ? ". " : "", rc == DM_EACCESS ? dm_linux_privilege_hint() : "");
    return rc;
}

int dm_tracefs_read_id(const char *dir, const char *event, uint32_t *id,
                       char *err, size_t errlen)
{
    char path[256], buf[32];
    long n;

    event_path(path, sizeof path, dir, event, "id");
    n = read_small(path, buf, sizeof buf, err, errlen);
    if (n < 0)
        return (int)n;
    while (n > 0 && (buf[n - 1] == '\n' || is_space(buf[n - 1])))
        n--;
    if (!parse_u32(buf, (size_t)n, id)) {
        snprintf(err, errlen, "%s does not hold a number", path);
        return DM_ECORRUPT;
    }
    return 0;
}

int dm_tracefs_read_format(const char *dir, const char *event,
                           struct dm_tp_format *fmt, char *err, size_t errlen)
{
    char path[256], why[256], *buf = malloc(FORMAT_FILE_MAX);
    long n;
    int rc;

    if (buf == NULL) {
        snprintf(err, errlen, "%s", dm_strerror(DM_ENOMEM));
        return DM_ENOMEM;
    }
    event_path(path, sizeof path, dir, event, "format");
    n = read_small(path, buf, FORMAT_FILE_MAX, err, errlen);
    if (n < 0) {
        free(buf);
        return (int)n;
    }
    rc = dm_tp_format_parse(buf, (size_t)n, fmt, why, sizeof why);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", path, why);
    free(buf);
    return rc;
}

const char *dm_linux_privilege_hint(void)
{
    static char hint[PATH_MAX + 512];
    char exe[PATH_MAX];
    ssize_t n;

    if (hint[0] != '\0')
        return hint;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        snprintf(exe, sizeof exe, "diskmon");
    else
        exe[n] = '\0';
    /* Short: it follows another message in a 512-byte buffer. */
    snprintf(hint, sizeof hint,
             "Run diskmon as root, or give it the capabilities it needs: sudo setcap "
             "cap_perfmon,cap_dac_read_search+ep %s (CAP_PERFMON for perf events, "
             "CAP_DAC_READ_SEARCH to read tracefs; CAP_PERFMON alone or a lower "
             "kernel.perf_event_paranoid is not enough)",
             exe);
    return hint;
}

int dm_tracefs_put(const char *dir, const char *file, const char *value)
{
    char path[320];
    size_t len = strlen(value);
    ssize_t n;
    int fd, e;

    snprintf(path, sizeof path, "%s/%s", dir, file);
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = write(fd, value, len);
    e = errno;
    close(fd);
    return n == (ssize_t)len ? 0 : n < 0 ? -e : -EIO;
}

/* x 10 ms: the fds of a reader still closing. */
#define RMDIR_TRIES 50

int dm_tracefs_rmdir(const char *dir)
{
    for (int i = 0; i < RMDIR_TRIES; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            break;
        usleep(10000);
    }
    return -errno;
}
