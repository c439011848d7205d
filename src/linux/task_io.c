/*
 * task_io.c - /proc/PID/io write_bytes of every process (task_io.h).
 *
 * One scan opens /proc/N/io for each numeric entry of /proc, relative to
 * one descriptor of /proc so the kernel walks no path from the root. The
 * file of a whole process (not /proc/N/task/T/io) is the sum over its
 * threads, ended ones included (fs/proc/base.c, do_io_accounting), so no
 * thread's bytes are lost when it exits between two scans.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux/task_io.h"
#include "linux/tracefs.h"
#include "platform/platform.h"

#define PROC_DIR "/proc"
/* The seven "name: value" lines of /proc/PID/io, each well under 40 bytes. */
#define IO_FILE_MAX 512
#define WRITE_BYTES_KEY "\nwrite_bytes: "
/* /proc/PID/stat is read whole: its 52 fields fit in 1 KiB (the comm is at
 * most 64 bytes, TASK_COMM_LEN of a kernel thread's name included). */
#define STAT_HEAD_MAX 1024
/* TASK_COMM_LEN (include/linux/sched.h) less its NUL. */
#define COMM_MAX 15
#define KWORKER "kworker/"

/* write_bytes out of a /proc/PID/io text; 0, or -1 when it has none. */
static int parse_write_bytes(const char *text, uint64_t *bytes)
{
    const char *p = strstr(text, WRITE_BYTES_KEY);
    char *end;
    unsigned long long v;

    if (p == NULL)
        return -1;
    errno = 0;
    v = strtoull(p + strlen(WRITE_BYTES_KEY), &end, 10);
    if (errno != 0 || *end != '\n')
        return -1;
    *bytes = v;
    return 0;
}

static long read_at(int dir, const char *name, char *buf, size_t cap)
{
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    do
        n = read(fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (long)n;
}

static int task_io_probe(char *why, size_t cap)
{
    char buf[IO_FILE_MAX];
    uint64_t bytes;

    if (dm_read_text(PROC_DIR "/self/io", buf, sizeof buf) < 0) {
        int e = errno;

        snprintf(why, cap, "%s/self/io: %s%s", PROC_DIR, strerror(e),
                 e == ENOENT ? " (a kernel without CONFIG_TASK_IO_ACCOUNTING)" : "");
        return dm_err_from_errno(e);
    }
    if (parse_write_bytes(buf, &bytes) != 0) {
        snprintf(why, cap, "%s/self/io has no write_bytes line", PROC_DIR);
        return DM_ECORRUPT;
    }
    return 0;
}

/* A process's directory name: digits only (the rest of /proc is not one). */
static int pid_of_name(const char *name, uint32_t *pid)
{
    unsigned long v = 0;

    if (*name == '\0')
        return -1;
    for (const char *c = name; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || v > UINT32_MAX / 10)
            return -1;
        v = v * 10 + (unsigned long)(*c - '0');
    }
    if (v > UINT32_MAX)
        return -1;
    *pid = (uint32_t)v;
    return 0;
}

static long task_io_scan(void (*each)(void *arg, uint32_t pid, uint64_t bytes), void *arg)
{
    DIR *d = opendir(PROC_DIR);
    struct dirent *de;
    long n = 0;

    if (d == NULL)
        return dm_err_from_errno(errno);
    while ((de = readdir(d)) != NULL) {
        char path[sizeof de->d_name + 8], buf[IO_FILE_MAX];
        uint32_t pid;
        uint64_t bytes;

        if (pid_of_name(de->d_name, &pid) != 0)
            continue;
        snprintf(path, sizeof path, "%s/io", de->d_name);
        /* Gone since readdir, or a process we may not look into: not
         * counted, as it would not be by iotop either. */
        if (read_at(dirfd(d), path, buf, sizeof buf) < 0 ||
            parse_write_bytes(buf, &bytes) != 0)
            continue;
        each(arg, pid, bytes);
        n++;
    }
    closedir(d);
    return n;
}

/* /proc/PID/stat begins "PID (COMM) STATE PPID", and its 22nd field is
 * the start time in clock ticks after boot: COMM may hold spaces and
 * parentheses itself, so it ends at the last ')' (proc(5)). */
static int task_io_about(uint32_t pid, uint32_t *ppid, uint64_t *start, char *name,
                         size_t cap)
{
    char path[32], text[STAT_HEAD_MAX];
    const char *open_paren, *close_paren;
    unsigned long parent;
    unsigned long long started;
    size_t n;
    char state;

    snprintf(path, sizeof path, PROC_DIR "/%u/stat", (unsigned)pid);
    if (cap == 0 || dm_read_text(path, text, sizeof text) < 0)
        return -1;
    open_paren = strchr(text, '(');
    close_paren = strrchr(text, ')');
    if (open_paren == NULL || close_paren == NULL || close_paren < open_paren ||
        sscanf(close_paren + 1,
               " %c %lu %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
               &state, &parent, &started) != 3 ||
        parent > UINT32_MAX)
        return -1;
    n = (size_t)(close_paren - open_paren - 1);
    /* The comm as the block tracepoints give it: /proc adds to a work
     * queue worker's name what it runs, after a '-' or '+'
     * ("kworker/u8:1-writeback"; kernel/workqueue.c, wq_worker_comm). */
    if (n > strlen(KWORKER) && strncmp(open_paren + 1, KWORKER, strlen(KWORKER)) == 0)
        n = strcspn(open_paren + 1, "+-)");
    if (n > COMM_MAX)
        n = COMM_MAX;
    if (n >= cap)
        n = cap - 1;
    memcpy(name, open_paren + 1, n);
    name[n] = '\0';
    *ppid = (uint32_t)parent;
    *start = started;
    return 0;
}

const struct dm_task_io dm_linux_task_io = {
    .probe = task_io_probe,
    .scan = task_io_scan,
    .about = task_io_about,
};
