/*
 * saved_tgids.h - the kernel's thread -> process record (tracefs
 * saved_tgids, "PID TGID" lines; docs/linux.md §5), read once for many
 * lookups.
 *
 * Reading the file is costly: the kernel prints every entry of its tgid map
 * (tens of thousands of lines on a machine that has run many processes), a
 * few milliseconds a read. A busy machine's short-lived processes each miss
 * in /proc, and reading the file once per miss took most of the reader's
 * time. So a snapshot is kept and read again only when it may be too old
 * for the event asked about: the kernel saves a task's tgid at its next
 * context switch after the event, so a snapshot taken a margin after the
 * event holds it (the margin: DM_TGIDS_MARGIN_NS). The kernel lists the
 * map in pid order (the file's position is the pid: saved_tgids_start and
 * saved_tgids_next in kernel/trace/trace.c), which the rest relies on: a
 * snapshot is read only as far as the thread asked about (a later question
 * for a higher pid reads on in the same open file; what it prints then is
 * newer still), and is kept as the text read, searched in place by binary
 * search, a dozen lines parsed a question rather than every line of the
 * map a snapshot.
 * Single-threaded: only the reader thread uses it.
 */
#ifndef DM_SAVED_TGIDS_H
#define DM_SAVED_TGIDS_H

#include <stddef.h>
#include <stdint.h>

/* 10 ms: the time the reader holds an event back before it merges it
 * (linux_source.c, COMMIT_SLACK_NS), so within one pass of the reader one
 * snapshot serves every event. */
#define DM_TGIDS_MARGIN_NS 10000000ull

struct dm_saved_tgids {
    char *text;                 /* the file as read so far in this snapshot */
    size_t len, cap;
    size_t lines_end;           /* the end of its last complete line */
    uint32_t last_pid;          /* that line's pid (have_last) */
    int have_last;
    int reading;                /* fd is open: the file is read on as asked */
    int fd;
    uint64_t taken_ns;          /* CLOCK_MONOTONIC before the read; 0: none */
    uint64_t reads;             /* snapshots read (for the tests) */
};

/* The process of thread tid for an event at event_ns (CLOCK_MONOTONIC),
 * from path (the top-level saved_tgids); the snapshot is read again first
 * when it was taken less than the margin after the event. 0 when absent
 * or unreadable. */
uint32_t dm_saved_tgid(struct dm_saved_tgids *s, const char *path, uint32_t tid,
                       uint64_t event_ns);

void dm_saved_tgids_free(struct dm_saved_tgids *s);

#endif /* DM_SAVED_TGIDS_H */
