/*
 * ftrace_page.h - the kernel ring buffer's sub-buffers ("pages"), parsed.
 *
 * A tracefs instance hands out its per-CPU ring through trace_pipe_raw one
 * sub-buffer at a time. The layout is the kernel's own, described by the
 * kernel in events/header_page and events/header_event
 * (docs/linux.md §4):
 *
 *   sub-buffer:  u64 timestamp @0, local_t commit @8, entries @16
 *   commit:      bytes of entries in the low bits; bit 31 = events were
 *                missed before this page, bit 30 = their count is stored
 *                as a long right after the entries
 *   entry:       u32 { type_len:5, time_delta:27 } then array[]
 *                type_len 1..28  data of type_len * 4 bytes at array[0]
 *                type_len 0      data length + 4 in array[0], data at array[1]
 *                type_len 29     padding: time_delta 0 = the rest of the
 *                                page is empty, else a discarded event of
 *                                4 + array[0] bytes (its delta still counts)
 *                type_len 30     time extend: delta += array[0] << 27
 *                type_len 31     absolute time stamp (array[0] << 27 |
 *                                time_delta), top 5 bits from the page's
 *
 * Everything here works on bytes the kernel wrote and a test may have
 * forged: every length is checked against the commit and the sub-buffer,
 * a page whose header makes no sense is skipped and counted, and a record
 * that would run past the commit ends the page and is counted. No system
 * calls: the unit tests feed it real captured pages and hand-made ones.
 */
#ifndef DM_FTRACE_PAGE_H
#define DM_FTRACE_PAGE_H

#include <stddef.h>
#include <stdint.h>

/* Where a sub-buffer's header fields are, from events/header_page. */
struct dm_ftrace_layout {
    uint32_t ts_off;       /* u64 page timestamp */
    uint32_t commit_off;
    uint32_t commit_size;  /* 4 or 8 (local_t is a long) */
    uint32_t data_off;     /* first entry */
    uint32_t subbuf_size;  /* whole sub-buffer: header + entries */
};

/*
 * Read the layout from the texts of events/header_page and
 * events/header_event (lengths given, need not be NUL-terminated), for
 * sub-buffers of subbuf_size bytes (buffer_subbuf_size_kb * 1024; 0: the
 * size header_page implies). Refuses, with DM_EUNSUPPORTED and a message,
 * an entry header other than the one described above: diskmon then falls
 * back to perf rather than guess.
 */
int dm_ftrace_layout_parse(const char *header_page, size_t page_len,
                           const char *header_event, size_t event_len,
                           uint32_t subbuf_size, struct dm_ftrace_layout *l,
                           char *err, size_t errlen);

/* What the parser met; added to, never reset by it. */
struct dm_ftrace_counts {
    uint64_t pages;          /* sub-buffers opened */
    uint64_t records;        /* data records returned */
    uint64_t missed_pages;   /* sub-buffers flagged: events missed before them */
    uint64_t missed_events;  /* the counts those pages stored */
    uint64_t bad_pages;      /* header impossible: the page was skipped */
    uint64_t bad_records;    /* an entry ran past the commit: rest skipped */
};

/* A cursor over one sub-buffer's entries. */
struct dm_ftrace_page {
    const uint8_t *entries;
    uint32_t size;         /* committed bytes of entries */
    uint32_t pos;          /* next entry */
    uint64_t ts;           /* time of the last entry read (page time first) */
};

/* One data record: the event's bytes (common header, then its fields). */
struct dm_ftrace_record {
    uint64_t ts;           /* trace_clock ns */
    const uint8_t *data;
    uint32_t len;          /* may include up to 3 bytes of alignment */
};

/*
 * Start reading the sub-buffer buf[0..len). len must be the sub-buffer size
 * of the layout (a shorter read is a truncated page). Returns 0, or
 * DM_ECORRUPT (counted in bad_pages) when the length or the commit cannot
 * be right.
 */
int dm_ftrace_page_open(const struct dm_ftrace_layout *l, const uint8_t *buf,
                        size_t len, struct dm_ftrace_page *pg,
                        struct dm_ftrace_counts *c);

/*
 * The next data record of the page. Returns 1 (*rec set), 0 at the end of
 * the page, or DM_ECORRUPT when an entry does not fit (counted in
 * bad_records; the cursor is then at the end, so the next call returns 0).
 */
int dm_ftrace_page_next(struct dm_ftrace_page *pg, struct dm_ftrace_record *rec,
                        struct dm_ftrace_counts *c);

#endif /* DM_FTRACE_PAGE_H */
