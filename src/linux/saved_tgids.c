/*
 * saved_tgids.c - a snapshot of the kernel's saved_tgids (rules in
 * saved_tgids.h), kept as the text the kernel printed and searched in
 * place.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/saved_tgids.h"
#include "platform/platform.h"

/* One read(2) of the file. The kernel prints the entries a read asks for
 * and no more (seq_read_iter), in pid order, about 12 bytes a line: a read
 * of 8 KiB is some 700 entries, a few hundredths of a full map. */
#define READ_CHUNK (8u << 10)

/* One line's decimal number at *p, moving *p past it; -1 when none. */
static int64_t number(const char **p, const char *end)
{
    uint64_t v = 0;
    const char *q = *p;

    while (q < end && *q == ' ')
        q++;
    if (q == end || *q < '0' || *q > '9')
        return -1;
    while (q < end && *q >= '0' && *q <= '9' && v <= UINT32_MAX)
        v = v * 10 + (uint64_t)(*q++ - '0');
    *p = q;
    return v > UINT32_MAX ? -1 : (int64_t)v;
}

/* The "PID TGID" line from line to eol: 0, or -1 when malformed. */
static int parse_line(const char *line, const char *eol, uint32_t *pid, uint32_t *tgid)
{
    int64_t a = number(&line, eol), b = a < 0 ? -1 : number(&line, eol);

    if (b < 0)
        return -1;
    *pid = (uint32_t)a;
    *tgid = (uint32_t)b;
    return 0;
}

static void end_read(struct dm_saved_tgids *s)
{
    if (s->reading)
        close(s->fd);
    s->reading = 0;
}

/* Note the last complete line of the text (its pid: how far the snapshot
 * reaches); lines_end moves to its end. */
static void take_lines(struct dm_saved_tgids *s, size_t end)
{
    const char *t = s->text, *line;
    uint32_t pid, tgid;

    if (end <= s->lines_end)
        return;
    line = t + end - 1; /* the last line's newline, or its last byte at EOF */
    while (line > t + s->lines_end && line[-1] != '\n')
        line--;
    s->lines_end = end;
    if (parse_line(line, t + end, &pid, &tgid) == 0) {
        s->last_pid = pid;
        s->have_last = 1;
    }
}

/*
 * Read on in the open snapshot until it reaches tid (a line of pid tid or
 * more is in), or the file ends. The entries come in pid order, so the rest
 * of the map (most of it, as often as not) is not printed for this
 * question. The text is kept as read; memory running out ends the snapshot
 * with what it has.
 */
static void read_on(struct dm_saved_tgids *s, uint32_t tid)
{
    while (s->reading && (!s->have_last || s->last_pid < tid)) {
        const char *nl;
        ssize_t got;

        if (s->cap - s->len < READ_CHUNK) {
            size_t cap = s->cap ? s->cap * 2 : 4 * READ_CHUNK;
            char *t = realloc(s->text, cap);

            if (t == NULL) {
                end_read(s);
                break;
            }
            s->text = t;
            s->cap = cap;
        }
        got = read(s->fd, s->text + s->len, READ_CHUNK);
        if (got <= 0) {
            end_read(s);
            take_lines(s, s->len); /* a last line without its newline */
            break;
        }
        s->len += (size_t)got;
        for (nl = s->text + s->len; nl > s->text + s->lines_end && nl[-1] != '\n'; nl--)
            ;
        take_lines(s, (size_t)(nl - s->text));
    }
}

/* tid's line among the complete lines, by binary search over the text's
 * bytes (each probe parses the line it falls in); a malformed line, which
 * the kernel does not print, makes it look at every line of the range. */
static uint32_t search(const struct dm_saved_tgids *s, uint32_t tid)
{
    const char *t = s->text;
    size_t lo = 0, hi = s->lines_end;

    while (lo < hi) {
        size_t at = lo + (hi - lo) / 2, start = at;
        const char *eol;
        uint32_t pid, tgid;

        while (start > lo && t[start - 1] != '\n')
            start--;
        eol = memchr(t + start, '\n', hi - start);
        if (eol == NULL)
            eol = t + hi;
        if (parse_line(t + start, eol, &pid, &tgid) != 0)
            break;
        if (pid == tid)
            return tgid;
        if (pid < tid)
            lo = (size_t)(eol - t) + 1;
        else
            hi = start;
    }
    while (lo < hi) { /* only after a malformed line */
        const char *eol = memchr(t + lo, '\n', hi - lo);
        uint32_t pid, tgid;

        if (eol == NULL)
            eol = t + hi;
        if (parse_line(t + lo, eol, &pid, &tgid) == 0 && pid == tid)
            return tgid;
        lo = (size_t)(eol - t) + 1;
    }
    return 0;
}

uint32_t dm_saved_tgid(struct dm_saved_tgids *s, const char *path, uint32_t tid,
                       uint64_t event_ns)
{
    if (s->taken_ns == 0 || s->taken_ns < event_ns + DM_TGIDS_MARGIN_NS) {
        uint64_t now = dm_monotonic_ns();
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
            return 0;
        end_read(s);
        s->fd = fd;
        s->reading = 1;
        s->len = s->lines_end = 0;
        s->have_last = 0;
        s->taken_ns = now;
        s->reads++;
    }
    read_on(s, tid);
    return search(s, tid);
}

void dm_saved_tgids_free(struct dm_saved_tgids *s)
{
    end_read(s);
    free(s->text);
    memset(s, 0, sizeof *s);
}
