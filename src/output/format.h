/*
 * format.h - one event as a line of text, CSV or JSON.
 *
 * All formatting is integer arithmetic on nanoseconds, so the same event
 * prints the same bytes on every OS and compiler (the Windows build's replay
 * output is compared byte for byte with the Linux build's).
 *
 * The printer formats every event, so the line functions are written for
 * speed: digits two at a time from a table (digits.h), padding by block
 * stores, names scanned a word at a time for the bytes CSV and JSON must
 * escape (escape.h), no printf and no stdio. Only the header and --clock's date (once per second, kept in
 * a struct dm_clock_cache) go through snprintf.
 */
#ifndef DM_FORMAT_H
#define DM_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"

/* -f: the form of each event line. */
enum dm_format { DM_FMT_TEXT = 0, DM_FMT_CSV, DM_FMT_JSON };

/*
 * --clock and --utc: the date and time of day down to the second, as text,
 * for the last second formatted. The date changes once a second while events
 * come thousands of times a second, so the civil-time arithmetic (and for a
 * live --clock, localtime()) runs once per second instead of per event.
 * Owned by one formatting thread (the printer); zero it before first use.
 */
struct dm_clock_cache {
    int64_t secs;            /* the second text describes */
    int kind;                /* what text holds (format.c); 0: nothing yet */
    int ok;                  /* 0: that second has no civil time ("?") */
    size_t len;
    char text[40];           /* "HH:MM:SS", "YYYY-MM-DD HH:MM:SS", "...T..." */
};

struct dm_format_opts {
    enum dm_format format;
    int clock;               /* wall-clock Time column (text, csv) */
    int utc;                 /* that clock in UTC; json: a time_utc key */
    struct dm_time_zone tz;  /* valid: the clock in this zone (replay: the
                              * trace's); else the OS's local time */
    int queue;               /* Queue column (Linux --queue) */
    int show_file;           /* the source can name files: File column */
    uint64_t start_wall_ns;  /* wall clock at time 0, ns since 1970 */
    /* NULL: the clock text is worked out for every event. Else the
     * formatting thread's cache; it must be zeroed again whenever clock,
     * utc or tz change. */
    struct dm_clock_cache *clock_cache;
};

/* Room for any header and for ordinary lines. A json line whose names are
 * long and full of control bytes (6 bytes each escaped) can be longer:
 * dm_format_event cuts it to its buffer, the printer never does (it sizes
 * every line with dm_format_event_fit). */
#define DM_LINE_MAX 2048

/* The header (text: column titles; csv: the header row; json: nothing).
 * Returns the number of bytes written into buf (NUL-terminated). */
size_t dm_format_header(char *buf, size_t cap, const struct dm_format_opts *fo);

/* One event, with its 1-based sequence number, ending in a newline
 * (csv: CRLF, as RFC 4180 says). Returns the bytes written into buf
 * (NUL-terminated); a line that does not fit in cap bytes is cut. */
size_t dm_format_event(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev);

/*
 * The printer's form of dm_format_event: the same line, written into buf
 * only when cap is at least an upper bound of its length worked out from
 * the lengths of the names (every byte escaped as \u00XX, plus every number
 * at its widest). Returns the line's length (never 0; buf[len] is NUL), or
 * 0 with nothing written and *need set to that bound, so the caller can
 * write out what it has and come back with a buffer of *need bytes. Writes
 * anywhere inside buf[0..bound), not only up to the returned length.
 */
size_t dm_format_event_fit(char *buf, size_t cap, const struct dm_format_opts *fo,
                           uint64_t seq, const struct dm_event *ev, size_t *need);

#endif /* DM_FORMAT_H */
