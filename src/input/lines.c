/*
 * lines.c - the line runner (lines.h).
 *
 * One buffer: what was read and not yet split sits at [start, end). A
 * line longer than DM_LINE_BYTES fills the buffer's spare room without an
 * end; the runner then drops what it has and skips to the line's end,
 * counting one malformed row. Memory is the buffer, the window and the
 * disk name table: a few MB whatever the input's size.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/sink.h"
#include "input/fields.h"
#include "input/lines.h"
#include "input/window.h"

/* Bytes asked of each read: large enough that a read is a small part of
 * a row's cost (about 40 bytes a row), small enough to stay in L2. */
#define READ_BYTES (256u << 10)
#define BUF_BYTES (READ_BYTES + DM_LINE_BYTES)
/* How long a read waits before the runner looks at the stop flag. */
#define WAIT_MS 100u
/* The window: 30 s of trace time, or 2^17 rows (60 bytes each with their
 * keys: 7.5 MiB at most) if sooner. The public traces' rows come in issue
 * order, so a completion is out of place by its response time: seconds at
 * worst. */
#define WINDOW_ROWS (1u << 17)
#define WINDOW_NS (UINT64_C(30) * 1000000000u)
#define NS_PER_SEC UINT64_C(1000000000)
/* Disk names kept (host_N of the MSR traces: 36 in the whole set); the
 * rows of any further one are shown by disk number. */
#define NAMES_MAX 1024u
#define NO_NAME 0xFFFFu

struct dm_lines {
    const struct dm_input_format *fmt;
    dm_infile *in;
    const char *name;
    char *buf;
    size_t start, end;
    int skipping;            /* inside a line too long to take */
    uint64_t line_no;        /* lines split so far */
    uint64_t malformed, first_bad;
    uint64_t read_bytes, total_bytes;
    size_t cut_last;         /* bytes of a last line without an end that did not parse */
    struct dm_row row;
    struct dm_window *win;
    uint64_t base_ns;        /* WALL_CLOCK: ns since 1970 at time 0 */
    int based;
    uint64_t before_base;    /* rows earlier than time 0: shown at 0 */
    char (*names)[DM_DISK_NAME_MAX];
    unsigned n_names, last_name;
    uint64_t unnamed;        /* rows whose name did not fit in the table */
    char scratch[DM_LINE_BYTES + 1];
};

/* The line [p, p + len) without its CR, NUL-terminated in place (its LF's
 * byte); 0 when blank. The UTF-8 byte order mark of a Windows editor is
 * skipped on the first line. */
static size_t trim(struct dm_lines *l, char **p, size_t len)
{
    if (len > 0 && (*p)[len - 1] == '\r')
        len--;
    if (l->line_no == 1 && len >= 3 && memcmp(*p, "\xEF\xBB\xBF", 3) == 0) {
        *p += 3;
        len -= 3;
    }
    (*p)[len] = '\0';
    return len;
}

/* Time 0 of a wall-clock format: the second its first row was issued in. */
static void set_base(struct dm_lines *l, const struct dm_event *ev, struct dm_source *src)
{
    uint64_t issue = ev->time_ns - (ev->duration_ns <= ev->time_ns ? ev->duration_ns : 0);

    l->base_ns = issue - issue % NS_PER_SEC;
    l->based = 1;
    if (src != NULL)
        src->start_wall_ns = l->base_ns;
}

/* Read what comes, up to the buffer's room: 0 (maybe nothing yet), 1 at the
 * end of the input, or a negative dm_err. */
static int fill(struct dm_lines *l, struct dm_source *src)
{
    size_t got = 0, room;
    int rc;

    if (l->start > 0) {
        memmove(l->buf, l->buf + l->start, l->end - l->start);
        l->end -= l->start;
        l->start = 0;
    }
    if (l->end == BUF_BYTES) { /* a line longer than any row: skip it */
        l->skipping = 1;
        l->end = 0;
    }
    room = BUF_BYTES - l->end < READ_BYTES ? BUF_BYTES - l->end : READ_BYTES;
    rc = dm_infile_read(l->in, l->buf + l->end, room, WAIT_MS, &got);
    if (rc < 0)
        snprintf(src->errmsg, sizeof src->errmsg, "cannot read %s: %s", l->name,
                 dm_strerror(rc));
    l->end += got;
    l->read_bytes += got;
    return rc;
}

/* The wall clock of time 0 from one row of the buffer, for prime:
 * diskmon json's time_utc, or a public trace's issue time (the earliest of
 * the rows read so far: their rows are not in time order). 1 once known. */
static int learn_start(struct dm_lines *l, struct dm_source *src)
{
    const struct dm_event *ev = &l->row.ev;

    if (!(l->fmt->flags & DM_INPUT_WALL_CLOCK)) {
        src->start_wall_ns = l->row.start_wall_ns;
        src->no_latency = (l->row.ev.flags & DM_EV_NO_DURATION) != 0;
        return 1;
    }
    if (!l->based || ev->time_ns - (ev->duration_ns <= ev->time_ns ? ev->duration_ns : 0) <
                         l->base_ns)
        set_base(l, ev, src);
    return 0;
}

/*
 * Before the run: read until a first row parses, for the wall clock of
 * time 0 (see learn_start), and for a public trace go on through the rest
 * of what was read (a file: the buffer's first 256 KB) for the earliest
 * issue. The lines stay in the buffer for the run. Gives up at the end of
 * the input, when the buffer is full, or on Ctrl+C (DM_ESTOPPED).
 */
static int prime(struct dm_lines *l, struct dm_source *src)
{
    size_t at = 0;

    for (;;) {
        char *nl = memchr(l->buf + at, '\n', l->end - at);
        size_t len = nl != NULL ? (size_t)(nl - (l->buf + at)) : l->end - at;
        int rc;

        if (nl != NULL || (len > 0 && l->end == BUF_BYTES)) {
            if (len <= DM_LINE_BYTES) {
                char *p = l->scratch;

                memcpy(p, l->buf + at, len);
                l->line_no = at == 0;
                len = trim(l, &p, len);
                l->line_no = 0;
                if (len > 0 && l->fmt->parse(p, len, &l->row) == DM_ROW_OK &&
                    learn_start(l, src))
                    return 0;
            }
            if (nl == NULL)
                return 0;
            at = (size_t)(nl - l->buf) + 1;
            continue;
        }
        if (l->based)
            return 0; /* a public trace: the earliest of the rows read */
        if (dm_interrupted())
            return DM_ESTOPPED;
        rc = fill(l, src);
        if (rc != 0)
            return rc < 0 ? rc : 0;
    }
}

int dm_lines_open(struct dm_lines **out, const struct dm_input_format *fmt, dm_infile *in,
                  const char *head, size_t len, const char *name, struct dm_source *src)
{
    struct dm_lines *l = calloc(1, sizeof *l);
    int rc;

    *out = l;
    if (l == NULL) {
        dm_infile_close(in);
        snprintf(src->errmsg, sizeof src->errmsg, "out of memory reading %s", name);
        return DM_ENOMEM;
    }
    l->fmt = fmt;
    l->in = in;
    l->name = name;
    l->total_bytes = dm_infile_size(in);
    l->buf = malloc(BUF_BYTES + 1);
    if (fmt->flags & DM_INPUT_UNORDERED) {
        l->win = dm_window_create(WINDOW_ROWS, WINDOW_NS);
        l->names = calloc(NAMES_MAX, sizeof *l->names);
    }
    if (l->buf == NULL || ((fmt->flags & DM_INPUT_UNORDERED) && (l->win == NULL || l->names == NULL))) {
        snprintf(src->errmsg, sizeof src->errmsg, "out of memory reading %s", name);
        return DM_ENOMEM;
    }
    memcpy(l->buf, head, len);
    l->end = len;
    l->read_bytes = len;
    src->is_live = 0;
    src->has_files = fmt->has_files;
    src->no_latency = (fmt->flags & DM_INPUT_NO_LATENCY) != 0;
    rc = prime(l, src);
    if (rc == DM_ESTOPPED)
        src->errmsg[0] = '\0';
    return rc;
}

/* The index of the row's disk name in the table (added when new). */
static uint16_t name_index(struct dm_lines *l, const char *name)
{
    if (name[0] == '\0')
        return NO_NAME;
    if (l->n_names > 0 && strcmp(l->names[l->last_name], name) == 0)
        return (uint16_t)l->last_name;
    for (unsigned i = 0; i < l->n_names; i++)
        if (strcmp(l->names[i], name) == 0)
            return (uint16_t)(l->last_name = i);
    if (l->n_names == NAMES_MAX) {
        l->unnamed++;
        return NO_NAME;
    }
    strcpy(l->names[l->n_names], name);
    l->last_name = l->n_names;
    return (uint16_t)l->n_names++;
}

static int emit_window_row(struct dm_lines *l, const struct dm_window_row *w,
                           struct dm_sink *sink)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.time_ns = w->time_ns;
    ev.duration_ns = w->duration_ns;
    ev.byte_offset = w->byte_offset;
    ev.transfer_size = w->transfer_size;
    ev.disk = w->disk;
    ev.request = w->request;
    ev.flags = w->no_duration ? DM_EV_NO_DURATION : 0;
    ev.disk_name = w->name == NO_NAME ? "" : l->names[w->name];
    ev.process = ev.file = ev.partition = ev.cgroup = "";
    return dm_sink_emit(sink, &ev);
}

/* A row of an unordered wall-clock format: on time 0's clock, into the
 * window; out with it whatever the window lets go. */
static int window_row(struct dm_lines *l, struct dm_sink *sink)
{
    const struct dm_event *ev = &l->row.ev;
    struct dm_window_row w, out;

    if (!l->based)
        set_base(l, ev, NULL);
    w.time_ns = ev->time_ns >= l->base_ns ? ev->time_ns - l->base_ns : 0;
    l->before_base += ev->time_ns < l->base_ns;
    w.duration_ns = ev->duration_ns;
    w.byte_offset = ev->byte_offset;
    w.transfer_size = ev->transfer_size;
    w.disk = ev->disk;
    w.request = ev->request;
    w.no_duration = (ev->flags & DM_EV_NO_DURATION) != 0;
    w.name = name_index(l, ev->disk_name);
    w.seq = 0;
    while (dm_window_pop(l->win, &out, 0))
        if (emit_window_row(l, &out, sink) == DM_ESTOPPED)
            return DM_ESTOPPED;
    dm_window_push(l->win, &w);
    return 0;
}

/* One line (NUL-terminated in place, len bytes, no line end). */
static int take_line(struct dm_lines *l, char *p, size_t len, struct dm_sink *sink)
{
    int rc;

    len = trim(l, &p, len);
    if (len == 0)
        return 0;
    rc = l->fmt->parse(p, len, &l->row);
    if (rc == DM_ROW_MALFORMED) {
        if (l->malformed++ == 0)
            l->first_bad = l->line_no;
        return 0;
    }
    if (rc != DM_ROW_OK)
        return 0;
    if (l->win != NULL)
        return window_row(l, sink);
    return dm_sink_emit(sink, &l->row.ev);
}

/* The whole lines in the buffer. */
static int split(struct dm_lines *l, struct dm_sink *sink)
{
    for (;;) {
        char *p = l->buf + l->start;
        char *nl = memchr(p, '\n', l->end - l->start);

        if (nl == NULL)
            return 0;
        l->start = (size_t)(nl - l->buf) + 1;
        l->line_no++;
        if (l->skipping) { /* the end of a line too long to take */
            l->skipping = 0;
            if (l->malformed++ == 0)
                l->first_bad = l->line_no;
            continue;
        }
        if (take_line(l, p, (size_t)(nl - p), sink) == DM_ESTOPPED)
            return DM_ESTOPPED;
    }
}

/* The end of the input: a last line without its end, then the window. */
static int finish_input(struct dm_lines *l, struct dm_sink *sink)
{
    struct dm_window_row out;

    if (l->end > l->start) {
        l->line_no++;
        if (l->skipping) {
            if (l->malformed++ == 0)
                l->first_bad = l->line_no;
        } else {
            uint64_t before = l->malformed;
            size_t len = l->end - l->start;

            if (take_line(l, l->buf + l->start, len, sink) == DM_ESTOPPED)
                return DM_ESTOPPED;
            if (l->malformed > before) { /* cut by Ctrl+C or a full disk */
                l->malformed = before;
                l->cut_last = len;
            }
        }
        l->start = l->end;
    }
    while (l->win != NULL && dm_window_pop(l->win, &out, 1))
        if (emit_window_row(l, &out, sink) == DM_ESTOPPED)
            return DM_ESTOPPED;
    return 0;
}

/* What the run saw that the user should know, as notes and counts. */
static void report(struct dm_lines *l, struct dm_source *src)
{
    uint64_t late = l->win != NULL ? dm_window_late(l->win) : 0;

    src->malformed = l->malformed;
    if (l->malformed > 0)
        dm_note(&src->notes, "diskmon: %s: %" PRIu64 " malformed line%s skipped (the first "
                "is line %" PRIu64 ")\n", l->name, l->malformed,
                l->malformed == 1 ? "" : "s", l->first_bad);
    if (l->cut_last > 0)
        dm_note(&src->notes, "diskmon: %s: the last line is cut short (%" PRIu64 " bytes without "
                "a line end, as a capture stopped mid-line leaves it): skipped\n", l->name,
                (uint64_t)l->cut_last);
    if (late > 0)
        dm_note(&src->notes, "diskmon: %s: %" PRIu64 " row%s came more than the window "
                "(30 s or %u rows) after later ones: shown late, out of time order\n",
                l->name, late, late == 1 ? "" : "s", WINDOW_ROWS);
    if (l->before_base > 0)
        dm_note(&src->notes, "diskmon: %s: %" PRIu64 " row%s completed before the first "
                "row's second: shown at time 0\n", l->name, l->before_base,
                l->before_base == 1 ? "" : "s");
    if (l->unnamed > 0)
        dm_note(&src->notes, "diskmon: %s: %" PRIu64 " rows of disks past the first %u "
                "names: shown by disk number\n", l->name, l->unnamed, NAMES_MAX);
}

int dm_lines_run(struct dm_lines *l, struct dm_source *src, struct dm_sink *sink)
{
    int rc = 0;

    for (;;) {
        if (split(l, sink) == DM_ESTOPPED || dm_sink_stopping(sink))
            break;
        rc = fill(l, src);
        if (rc < 0)
            break;
        if (l->total_bytes > 0)
            dm_sink_progress(sink, l->read_bytes, l->total_bytes);
        if (rc == 1) {
            rc = 0;
            (void)split(l, sink);
            if (!dm_sink_stopping(sink))
                (void)finish_input(l, sink);
            break;
        }
    }
    report(l, src);
    return rc;
}

void dm_lines_close(struct dm_lines *l)
{
    if (l == NULL)
        return;
    dm_infile_close(l->in);
    dm_window_destroy(l->win);
    free(l->names);
    free(l->buf);
    free(l);
}
