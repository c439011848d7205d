/*
 * input.h - the formats diskmon reads (-r FILE, -r -): one file each in
 * src/input, one line each in input/input_list.h, as the views are.
 *
 * A format is recognised from the bytes at the start of its input (a magic
 * number, or the form of the first line), never from the file's name;
 * --input-format NAME picks one by name. There are two kinds:
 *   - a format with a source of its own (.etl, which the replay source in
 *     src/etl reads in two passes from a file): source is set;
 *   - a line format (diskmon's own csv and json lines, the public block
 *     traces): parse turns one line into one row, and the line runner
 *     (input/lines.h) reads the input in pieces as it comes, splits the
 *     lines, counts what does not parse and emits the rows, in time order
 *     through a bounded window for the formats whose rows are not.
 * dm_input_source (input_source.c) is the one dm_source that -r runs: it
 * opens the input, picks the format and runs it.
 */
#ifndef DM_INPUT_H
#define DM_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

/* The most of the input's start a format is recognised from. A line format
 * looks at the first line only; a stream is read until that line is whole,
 * or this much came. */
#define DM_SNIFF_BYTES 4096u

/* A line format's flags. */
#define DM_INPUT_UNORDERED 0x1u  /* rows not in time order: the window sorts */
#define DM_INPUT_WALL_CLOCK 0x2u /* time_ns is ns since 1970 (rebased on
                                  * the first row's issue time) */
#define DM_INPUT_NO_LATENCY 0x4u /* no response times: durations are 0 */
#define DM_INPUT_CGROUPS 0x8u    /* rows may carry the issuer's cgroup (a
                                  * Linux live capture's cgroup field), so
                                  * --cgroup and --by cgroup apply */

/* One row of a line format: the event and the storage its names point
 * into. parse sets every name pointer (to "" when the row has none). */
struct dm_row {
    struct dm_event ev;
    /* ns since 1970 at the capture's time 0, when the row says (the json
     * time_utc key): 0 for none. */
    uint64_t start_wall_ns;
    char disk_name[DM_DISK_NAME_MAX];
    char process[DM_PROCESS_MAX];
    char file[DM_FILE_MAX];
    char partition[DM_PARTITION_MAX];
    char cgroup[DM_CGROUP_MAX];
};

/* What parse says of a line. */
#define DM_ROW_OK 1         /* a row: in *row */
#define DM_ROW_SKIP 0       /* a header or a comment: nothing */
#define DM_ROW_MALFORMED -1 /* counted and skipped */

struct dm_input_format {
    const char *name;        /* --input-format NAME */
    const char *what;        /* for the list of formats: "diskmon -f json lines" */
    /* 1 when head (the input's first len bytes, len <= DM_SNIFF_BYTES, not
     * NUL-terminated) is this format's start. */
    int (*sniff)(const char *head, size_t len);
    /* A format with a source of its own, read from a file (not a stream). */
    const struct dm_source_ops *source;
    /* A line format: flags, and parse for one line (len bytes without its
     * line end, line[len] writable, so a parser may NUL-terminate a field
     * in place). has_files: the text output's File column. */
    unsigned flags;
    int has_files;
    int (*parse)(char *line, size_t len, struct dm_row *row);
};

/* The formats, one file each (input/input_list.h). */
#define DM_INPUT(name) extern const struct dm_input_format dm_##name##_input;
#include "input/input_list.h"
#undef DM_INPUT

/* The format called name, or NULL. */
const struct dm_input_format *dm_input_by_name(const char *name);
/* The first format that recognises head, or NULL. */
const struct dm_input_format *dm_input_sniff(const char *head, size_t len);
/* The formats' names, ", "-separated, into buf (for messages). */
void dm_input_names(char *buf, size_t cap);

/* -r: the source that picks the format and runs it. */
extern const struct dm_source_ops dm_input_source;

#endif /* DM_INPUT_H */
