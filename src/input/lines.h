/*
 * lines.h - the line runner: reads a line format's input in pieces as they
 * come (platform.h, dm_infile), splits the lines itself (LF or CRLF, blank
 * lines skipped, a last line without its end taken when it parses), hands
 * each to the format's parse, counts the malformed ones and emits the
 * rows, through the time-order window (window.h) for the formats that need
 * it. Nothing waits for the end of the input: a row that came through a
 * pipe is emitted as soon as its line is whole (and, through the window,
 * as soon as the window lets it go).
 */
#ifndef DM_INPUT_LINES_H
#define DM_INPUT_LINES_H

#include <stddef.h>

#include "diskmon.h"
#include "input/input.h"
#include "platform/platform.h"

/* The longest line taken: diskmon's json lines are at most a few KB (five
 * names of at most 264 bytes, each byte at most 6 escaped, format.h); a
 * longer line is counted malformed and skipped to its end. */
#define DM_LINE_BYTES (64u << 10)

struct dm_lines;

/* Take in (which the runner closes) with the len bytes of its start
 * already read (head), for fmt. Reads on until a first row parses (or the
 * input ends, or a buffer's worth came without one) to set src's
 * start_wall_ns; sets src's is_live, has_files and errmsg. name: the input
 * for messages. 0 or a negative dm_err. */
int dm_lines_open(struct dm_lines **l, const struct dm_input_format *fmt, dm_infile *in,
                  const char *head, size_t len, const char *name, struct dm_source *src);
/* The source thread's loop (dm_source_ops run). */
int dm_lines_run(struct dm_lines *l, struct dm_source *src, struct dm_sink *sink);
void dm_lines_close(struct dm_lines *l);

#endif /* DM_INPUT_LINES_H */
