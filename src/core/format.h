/*
 * format.h - one event as a line of text, CSV or JSON.
 *
 * All formatting is integer arithmetic on nanoseconds, so the same event
 * prints the same bytes on every OS and compiler (the Windows build's replay
 * output is compared byte for byte with the Linux build's).
 */
#ifndef DM_FORMAT_H
#define DM_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "diskmon.h"
#include "core/options.h"

struct dm_format_opts {
    enum dm_format format;
    int clock;               /* wall-clock Time column (text, csv) */
    int utc;                 /* that clock in UTC; json: a time_utc key */
    struct dm_time_zone tz;  /* valid: the clock in this zone (replay: the
                              * trace's); else the OS's local time */
    int queue;               /* Queue column (Linux --queue) */
    int show_file;           /* the source can name files: File column */
    uint64_t start_wall_ns;  /* wall clock at time 0, ns since 1970 */
};

/* Longest line any format produces, with the longest file name escaped. */
#define DM_LINE_MAX 2048

/* The header (text: column titles; csv: the header row; json: nothing).
 * Returns the number of bytes written into buf (NUL-terminated). */
size_t dm_format_header(char *buf, size_t cap, const struct dm_format_opts *fo);

/* One event, with its 1-based sequence number, ending in a newline
 * (csv: CRLF, as RFC 4180 says). Returns the bytes written into buf. */
size_t dm_format_event(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev);

/* s as a JSON string (quoted, escaped, invalid UTF-8 as U+FFFD) or a CSV
 * field (quoted when it holds a comma, quote or line break), the same way
 * the event lines write them; for --top's rows. Returns the bytes written. */
size_t dm_format_json_string(char *buf, size_t cap, const char *s);
size_t dm_format_csv_string(char *buf, size_t cap, const char *s);

#endif /* DM_FORMAT_H */
