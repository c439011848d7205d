/*
 * format.c - text, CSV and JSON lines. Column widths of the text format are
 * in one table so the header and the rows cannot drift apart.
 *
 * The event writers append through a char pointer with no bounds checks of
 * their own: dm_format_event_fit first makes sure the buffer holds the
 * line's upper bound (FIXED_MAX for everything but the names,
 * DM_ESCAPE_MAX bytes per name byte, and DM_DIGITS_SLACK). Inside that
 * bound the number writers (digits.h) and the name escapers (escape.h)
 * store past the line's final end on purpose. The header and the --clock
 * date (once a second) use snprintf; nothing per event does.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/digits.h"
#include "output/escape.h"
#include "output/format.h"
#include "output/tz.h"

#define NS_PER_US 1000u
#define NS_PER_MS 1000000u
#define NS_PER_SEC 1000000000u
#define US_PER_SEC 1000000u
#define SECTOR_BYTES 512u /* DiskMon's Sector and Length unit */

/* Text column widths; a negative width is left-aligned (printf's rule). */
enum {
    W_SEQ = 7,
    W_TIME = 12,
    W_CLOCK = 15, /* HH:MM:SS.uuuuuu */
    W_DURATION = 10,
    W_DISK = -8,
    W_REQUEST = -7,
    W_SECTOR = 12,
    W_LENGTH = 6,
    W_PID = 7,
    W_PROCESS = -16
};

/*
 * The widest a line can be apart from its names: json with every key, each
 * number at 20 digits (a uint64_t), seconds at 11 digits plus 9 decimals,
 * time_utc with a 6-digit year, every request flag (under 150 bytes), the
 * partition and cgroup keys, comes to about 580 bytes; text and csv are shorter. Rounded up.
 */
#define FIXED_MAX 640

/* ---- numbers ------------------------------------------------------------- */

/* ns as seconds with 6 decimals, rounded to the nearest microsecond. The
 * sum wraps within 500 ns of UINT64_MAX, as it always has. */
static DM_INLINE char *put_sec6(char *p, unsigned width, uint64_t ns)
{
    uint64_t us = (ns + NS_PER_US / 2) / NS_PER_US;

    return dm_put_fixed(p, width, us / US_PER_SEC, (uint32_t)(us % US_PER_SEC), 6);
}

/* ns as seconds with 9 decimals: exact. */
static DM_INLINE char *put_sec9(char *p, uint64_t ns)
{
    return dm_put_fixed(p, 0, ns / NS_PER_SEC, (uint32_t)(ns % NS_PER_SEC), 9);
}

/* ns as milliseconds with 6 decimals: exact. */
static DM_INLINE char *put_ms6(char *p, uint64_t ns)
{
    return dm_put_fixed(p, 0, ns / NS_PER_MS, (uint32_t)(ns % NS_PER_MS), 6);
}


/* ---- the clock (--clock, --utc) ------------------------------------------ */

/* What a struct dm_clock_cache holds. */
enum { CLOCK_TEXT = 1, CLOCK_CSV, CLOCK_JSON_UTC };

/* The civil time of wall_secs in the clock --clock/--utc asked for: UTC, the
 * time zone the trace recorded, or (live) the OS's local time. */
static int civil_of(const struct dm_format_opts *fo, int64_t wall_secs, struct dm_civil *c)
{
    struct tm *tm;
    time_t t;

    if (fo->utc || fo->tz.valid) {
        int32_t bias = fo->utc ? 0 : dm_tz_bias_minutes(&fo->tz, wall_secs);

        dm_civil_from_seconds(wall_secs - (int64_t)bias * 60, c);
        return 0;
    }
    t = (time_t)wall_secs;
    /* localtime() is not reentrant, but only the printer thread formats. */
    tm = localtime(&t);
    if (tm == NULL)
        return -1;
    c->year = tm->tm_year + 1900;
    c->month = tm->tm_mon + 1;
    c->day = tm->tm_mday;
    c->hour = tm->tm_hour;
    c->minute = tm->tm_min;
    c->second = tm->tm_sec;
    return 0;
}

/* Work out the text of second secs for kind; once per second. */
static void clock_fill(struct dm_clock_cache *cc, const struct dm_format_opts *fo,
                       int64_t secs, int kind)
{
    struct dm_civil c;
    int n;

    cc->secs = secs;
    cc->kind = kind;
    cc->len = 0;
    if (kind == CLOCK_JSON_UTC)
        dm_civil_from_seconds(secs, &c);
    else if (civil_of(fo, secs, &c) != 0) {
        cc->ok = 0;
        return;
    }
    cc->ok = 1;
    if (kind == CLOCK_TEXT)
        n = snprintf(cc->text, sizeof cc->text, "%02d:%02d:%02d", c.hour, c.minute,
                     c.second);
    else
        n = snprintf(cc->text, sizeof cc->text, "%04d-%02d-%02d%c%02d:%02d:%02d", c.year,
                     c.month, c.day, kind == CLOCK_CSV ? ' ' : 'T', c.hour, c.minute,
                     c.second);
    if (n > 0)
        cc->len = (size_t)n < sizeof cc->text ? (size_t)n : sizeof cc->text - 1;
}

/* The second's text for kind, from the cache when it has it. */
static const struct dm_clock_cache *clock_text(const struct dm_format_opts *fo,
                                               struct dm_clock_cache *local,
                                               int64_t secs, int kind)
{
    struct dm_clock_cache *cc = fo->clock_cache != NULL ? fo->clock_cache : local;

    kind |= fo->utc << 4; /* a stale cache from before --utc changed is refilled */
    if (cc == local || cc->kind != kind || cc->secs != secs)
        clock_fill(cc, fo, secs, kind & 0xf);
    cc->kind = kind;
    return cc;
}

/* Wall-clock time of an event, to the microsecond, right-aligned in width:
 * text HH:MM:SS.uuuuuu, csv with the date in front. "?" when the OS has no
 * civil time for it. */
static char *put_clock(char *p, unsigned width, const struct dm_format_opts *fo,
                       const struct dm_event *ev, int kind)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    uint64_t us = (wall % NS_PER_SEC + NS_PER_US / 2) / NS_PER_US;
    int64_t secs = (int64_t)(wall / NS_PER_SEC);
    struct dm_clock_cache local;
    const struct dm_clock_cache *cc;
    size_t total;

    if (us == US_PER_SEC) { /* rounding carried into the next second */
        secs++;
        us = 0;
    }
    cc = clock_text(fo, &local, secs, kind);
    total = cc->ok ? cc->len + 7 : 1;
    if (width != 0) {
        memcpy(p, dm_blanks, DM_BLANKS_LEN);
        if (total < width)
            p += width - total;
    }
    if (!cc->ok) {
        *p++ = '?';
        return p;
    }
    p = dm_put_lit(p, cc->text, cc->len);
    *p++ = '.';
    return dm_put_frac(p, (uint32_t)us, 6);
}

/* ,"time_utc":"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (RFC 3339), exact. */
static char *put_json_utc(char *p, const struct dm_format_opts *fo,
                          const struct dm_event *ev)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    struct dm_clock_cache local;
    const struct dm_clock_cache *cc =
        clock_text(fo, &local, (int64_t)(wall / NS_PER_SEC), CLOCK_JSON_UTC);

    p = dm_put_lit(p, DM_LIT(",\"time_utc\":\""));
    p = dm_put_lit(p, cc->text, cc->len);
    *p++ = '.';
    p = dm_put_frac(p, (uint32_t)(wall % NS_PER_SEC), 9);
    return dm_put_lit(p, DM_LIT("Z\""));
}


/* ---- one event ----------------------------------------------------------- */

/* The event's names and their lengths, worked out once per line. */
struct names {
    const char *disk;        /* NULL: the disk number */
    size_t disk_len;
    const char *process;     /* "" when the event has none */
    size_t process_len;
    const char *file;        /* "" when the event has none */
    size_t file_len;
    size_t partition_len;    /* of ev->partition, "" for the whole disk */
    size_t cgroup_len;       /* of ev->cgroup, "" when unknown */
};

/* The request column's words (dm_request_names, and "?"), blank-padded to
 * 8 bytes so each is one fixed-size copy; len is the word's own length.
 * The text column is 7 wide: the longest word, so no word is cut. */
static const struct {
    char name[8];
    size_t len;
} requests[DM_REQ_COUNT + 1] = {
    {"Read    ", 4}, {"Write   ", 5}, {"Flush   ", 5}, {"Discard ", 7}, {"?       ", 1},
};

static DM_INLINE char *put_request(char *p, const struct dm_event *ev, int padded)
{
    unsigned rq = ev->request < DM_REQ_COUNT ? ev->request : DM_REQ_COUNT;

    memcpy(p, requests[rq].name, 8);
    return p + (padded ? (size_t)-W_REQUEST : requests[rq].len);
}

/* The request flags, their words (dm_req_flag_names) in bit order joined
 * with '|'; nothing when there are none. At most 12 words of up to 11
 * bytes: under 150 bytes, inside FIXED_MAX's margin. */
static char *put_req_flags(char *p, uint16_t flags)
{
    int first = 1;

    for (unsigned i = 0; i < DM_RQ_COUNT; i++) {
        if (!(flags & (1u << i)))
            continue;
        if (!first)
            *p++ = '|';
        first = 0;
        p = dm_put_lit(p, dm_req_flag_names[i], strlen(dm_req_flag_names[i]));
    }
    return p;
}

static uint64_t sector_of(const struct dm_event *ev)
{
    return ev->byte_offset / SECTOR_BYTES;
}

static uint64_t length_of(const struct dm_event *ev)
{
    return ((uint64_t)ev->transfer_size + SECTOR_BYTES - 1) / SECTOR_BYTES;
}

/* A name for the text line (dm_escape_term), left-aligned in width. */
static DM_INLINE char *put_term_left(char *p, unsigned width, const char *s, size_t len)
{
    char *start = p;

    p = dm_escape_term(p, s, len);
    if ((size_t)(p - start) < width) {
        /* (the escaper may have stored past its end: blank over that) */
        memcpy(p, dm_blanks, width - (size_t)(p - start));
        p = start + width;
    }
    return p;
}

/* The lengths an event from the ring carries (DM_EV_NAME_LENS), or
 * measured. */
static void names_of(const struct dm_event *ev, struct names *nm)
{
    int known = (ev->flags & DM_EV_NAME_LENS) != 0;
    size_t disk_len = known ? ev->disk_name_len : strlen(ev->disk_name);

    nm->disk = disk_len != 0 ? ev->disk_name : NULL;
    nm->disk_len = disk_len;
    nm->process = "";
    nm->process_len = 0;
    if (ev->flags & DM_EV_HAS_PROCESS) {
        nm->process = ev->process;
        nm->process_len = known ? ev->process_len : strlen(ev->process);
    }
    nm->file = "";
    nm->file_len = 0;
    if (ev->flags & DM_EV_HAS_FILE) {
        nm->file = ev->file;
        nm->file_len = known ? ev->file_len : strlen(ev->file);
    }
    nm->partition_len = known ? ev->partition_len : strlen(ev->partition);
    nm->cgroup_len = known ? ev->cgroup_len : strlen(ev->cgroup);
}

static char *text_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                        const struct dm_event *ev, const struct names *nm)
{
    p = dm_put_u64_right(p, W_SEQ, seq);
    *p++ = ' ';
    if (fo->clock)
        p = put_clock(p, W_CLOCK, fo, ev, CLOCK_TEXT);
    else
        p = put_sec6(p, W_TIME, ev->time_ns);
    *p++ = ' ';
    if (ev->flags & DM_EV_NO_DURATION) {
        p = dm_put_lit(p, dm_blanks, W_DURATION - 1);
        *p++ = '-';
    } else {
        p = put_sec6(p, W_DURATION, ev->duration_ns);
    }
    if (fo->queue) {
        *p++ = ' ';
        if (ev->flags & DM_EV_HAS_QUEUE)
            p = put_sec6(p, W_DURATION, ev->queue_ns);
        else
        {
            p = dm_put_lit(p, dm_blanks, W_DURATION - 1);
            *p++ = '-';
        }
    }
    *p++ = ' ';
    if (nm->disk != NULL) {
        p = put_term_left(p, -W_DISK, nm->disk, nm->disk_len);
    } else {
        char *start = p;

        memcpy(p, dm_blanks, DM_BLANKS_LEN);
        p = dm_put_u64(p, ev->disk);
        if (p - start < -W_DISK)
            p = start - W_DISK;
    }
    *p++ = ' ';
    p = put_request(p, ev, 1);
    *p++ = ' ';
    p = dm_put_u64_right(p, W_SECTOR, sector_of(ev));
    *p++ = ' ';
    p = dm_put_u64_right(p, W_LENGTH, length_of(ev));
    *p++ = ' ';
    if (ev->flags & DM_EV_HAS_PID) {
        p = dm_put_u64_right(p, W_PID, ev->pid);
    } else {
        p = dm_put_lit(p, dm_blanks, W_PID - 1);
        *p++ = '-';
    }
    *p++ = ' ';
    if (fo->show_file && (ev->flags & DM_EV_HAS_FILE)) {
        if (ev->flags & DM_EV_HAS_PROCESS)
            p = put_term_left(p, -W_PROCESS, nm->process, nm->process_len);
        else
            p = dm_put_left(p, -W_PROCESS, "-", 1);
        if (ev->flags & DM_EV_FILE_CUT)
            p = dm_put_lit(p, DM_LIT(" ..."));
        else
            *p++ = ' ';
        p = dm_escape_term(p, nm->file, nm->file_len);
    } else if (ev->flags & DM_EV_HAS_PROCESS) {
        p = dm_escape_term(p, nm->process, nm->process_len);
    } else {
        *p++ = '-';
    }
    /* The flags after the last column, so DiskMon's columns keep their
     * places and a grep for Write still finds every write. */
    if (ev->req_flags != 0) {
        p = dm_put_lit(p, DM_LIT(" ["));
        p = put_req_flags(p, ev->req_flags);
        *p++ = ']';
    }
    *p++ = '\n';
    return p;
}

static char *csv_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                       const struct dm_event *ev, const struct names *nm)
{
    p = dm_put_u64(p, seq);
    *p++ = ',';
    if (fo->clock)
        p = put_clock(p, 0, fo, ev, CLOCK_CSV);
    else
        p = put_sec9(p, ev->time_ns);
    *p++ = ',';
    if (!(ev->flags & DM_EV_NO_DURATION))
        p = put_sec9(p, ev->duration_ns);
    if (fo->queue) {
        *p++ = ',';
        if (ev->flags & DM_EV_HAS_QUEUE)
            p = put_sec9(p, ev->queue_ns);
    }
    *p++ = ',';
    if (nm->disk != NULL)
        p = dm_escape_csv(p, "", 0, nm->disk, nm->disk_len);
    else
        p = dm_put_u64(p, ev->disk);
    *p++ = ',';
    p = put_request(p, ev, 0);
    *p++ = ',';
    p = dm_put_u64(p, sector_of(ev));
    *p++ = ',';
    p = dm_put_u64(p, length_of(ev));
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_PID)
        p = dm_put_u64(p, ev->pid);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_TID)
        p = dm_put_u64(p, ev->tid);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_PROCESS)
        p = dm_escape_csv(p, "", 0, nm->process, nm->process_len);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_FILE) {
        if (ev->flags & DM_EV_FILE_CUT)
            p = dm_escape_csv(p, DM_LIT("..."), nm->file, nm->file_len);
        else
            p = dm_escape_csv(p, "", 0, nm->file, nm->file_len);
    }
    *p++ = ',';
    p = dm_put_u64(p, ev->byte_offset);
    *p++ = ',';
    p = dm_put_u64(p, ev->transfer_size);
    *p++ = ',';
    p = put_req_flags(p, ev->req_flags);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_PRIORITY)
        p = dm_put_u64(p, ev->priority);
    *p++ = ',';
    p = dm_escape_csv(p, "", 0, ev->partition, nm->partition_len);
    *p++ = ',';
    p = dm_escape_csv(p, "", 0, ev->cgroup, nm->cgroup_len);
    return dm_put_lit(p, DM_LIT("\r\n"));
}

static char *json_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                        const struct dm_event *ev, const struct names *nm)
{
    p = dm_put_lit(p, DM_LIT("{\"seq\":"));
    p = dm_put_u64(p, seq);
    p = dm_put_lit(p, DM_LIT(",\"time\":"));
    p = put_sec9(p, ev->time_ns);
    if (fo->utc)
        p = put_json_utc(p, fo, ev);
    if (!(ev->flags & DM_EV_NO_DURATION)) {
        p = dm_put_lit(p, DM_LIT(",\"duration_ms\":"));
        p = put_ms6(p, ev->duration_ns);
    }
    if (fo->queue && (ev->flags & DM_EV_HAS_QUEUE)) {
        p = dm_put_lit(p, DM_LIT(",\"queue_ms\":"));
        p = put_ms6(p, ev->queue_ns);
    }
    p = dm_put_lit(p, DM_LIT(",\"disk\":"));
    if (nm->disk != NULL)
        p = dm_escape_json(p, "", 0, nm->disk, nm->disk_len);
    else
        p = dm_put_u64(p, ev->disk);
    p = dm_put_lit(p, DM_LIT(",\"request\":\""));
    p = put_request(p, ev, 0);
    p = dm_put_lit(p, DM_LIT("\",\"offset\":"));
    p = dm_put_u64(p, ev->byte_offset);
    p = dm_put_lit(p, DM_LIT(",\"bytes\":"));
    p = dm_put_u64(p, ev->transfer_size);
    p = dm_put_lit(p, DM_LIT(",\"sector\":"));
    p = dm_put_u64(p, sector_of(ev));
    p = dm_put_lit(p, DM_LIT(",\"length\":"));
    p = dm_put_u64(p, length_of(ev));
    if (ev->flags & DM_EV_HAS_PID) {
        p = dm_put_lit(p, DM_LIT(",\"pid\":"));
        p = dm_put_u64(p, ev->pid);
    }
    if (ev->flags & DM_EV_HAS_TID) {
        p = dm_put_lit(p, DM_LIT(",\"tid\":"));
        p = dm_put_u64(p, ev->tid);
    }
    if (ev->flags & DM_EV_HAS_PROCESS) {
        p = dm_put_lit(p, DM_LIT(",\"process\":"));
        p = dm_escape_json(p, "", 0, nm->process, nm->process_len);
    }
    if (ev->flags & DM_EV_HAS_FILE) {
        p = dm_put_lit(p, DM_LIT(",\"file\":"));
        if (ev->flags & DM_EV_FILE_CUT)
            p = dm_escape_json(p, DM_LIT("..."), nm->file, nm->file_len);
        else
            p = dm_escape_json(p, "", 0, nm->file, nm->file_len);
    }
    if (ev->flags & DM_EV_HAS_IRP_FLAGS) {
        p = dm_put_lit(p, DM_LIT(",\"irp_flags\":"));
        p = dm_put_u64(p, ev->irp_flags);
    }
    p = dm_put_lit(p, DM_LIT(",\"flags\":\""));
    p = put_req_flags(p, ev->req_flags);
    *p++ = '"';
    if (ev->flags & DM_EV_HAS_PRIORITY) {
        p = dm_put_lit(p, DM_LIT(",\"priority\":"));
        p = dm_put_u64(p, ev->priority);
    }
    if (nm->partition_len != 0) {
        p = dm_put_lit(p, DM_LIT(",\"partition\":"));
        p = dm_escape_json(p, "", 0, ev->partition, nm->partition_len);
    }
    if (nm->cgroup_len != 0) {
        p = dm_put_lit(p, DM_LIT(",\"cgroup\":"));
        p = dm_escape_json(p, "", 0, ev->cgroup, nm->cgroup_len);
    }
    return dm_put_lit(p, DM_LIT("}\n"));
}

size_t dm_format_event_fit(char *buf, size_t cap, const struct dm_format_opts *fo,
                           uint64_t seq, const struct dm_event *ev, size_t *need)
{
    struct names nm;
    size_t bound;
    char *end;

    names_of(ev, &nm);
    bound = FIXED_MAX + DM_DIGITS_SLACK +
            DM_ESCAPE_MAX * (nm.disk_len + nm.process_len + nm.file_len +
                             nm.partition_len + nm.cgroup_len);
    if (cap < bound) {
        *need = bound;
        return 0;
    }
    switch (fo->format) {
    case DM_FMT_CSV:
        end = csv_event(buf, fo, seq, ev, &nm);
        break;
    case DM_FMT_JSON:
        end = json_event(buf, fo, seq, ev, &nm);
        break;
    default:
        end = text_event(buf, fo, seq, ev, &nm);
        break;
    }
    *end = '\0';
    return (size_t)(end - buf);
}


size_t dm_format_event(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    size_t need = 0, len = dm_format_event_fit(buf, cap, fo, seq, ev, &need);
    char *big;

    if (len > 0)
        return len;
    big = malloc(need);
    if (big == NULL)
        return dm_escape_cut_to(buf, cap, "", 0);
    len = dm_format_event_fit(big, need, fo, seq, ev, &need);
    len = dm_escape_cut_to(buf, cap, big, len);
    free(big);
    return len;
}

/* ---- headers and --top's fields ------------------------------------------ */

/* An append-only view of the caller's buffer; never overruns it. For the
 * header, once per run: printf is fine there. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static void putf(struct out *o, const char *fmt, ...) DM_PRINTF(2, 3);

static void putf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->len + 1 >= o->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    o->len += (size_t)n < o->cap - o->len ? (size_t)n : o->cap - o->len - 1;
}

static void text_header(struct out *o, const struct dm_format_opts *fo)
{
    putf(o, "%*s %*s %*s", W_SEQ, "#", fo->clock ? W_CLOCK : W_TIME, "Time",
         W_DURATION, "Duration");
    if (fo->queue)
        putf(o, " %*s", W_DURATION, "Queue");
    putf(o, " %*s %*s %*s %*s %*s ", W_DISK, "Disk", W_REQUEST, "Request",
         W_SECTOR, "Sector", W_LENGTH, "Length", W_PID, "PID");
    if (fo->show_file)
        putf(o, "%*s File\n", W_PROCESS, "Process");
    else
        putf(o, "Process\n");
}

static void csv_header(struct out *o, const struct dm_format_opts *fo)
{
    putf(o, "seq,time,duration%s,disk,request,sector,length,pid,tid,process,file,"
            "offset,bytes,flags,priority,partition,cgroup\r\n",
         fo->queue ? ",queue" : "");
}

size_t dm_format_header(char *buf, size_t cap, const struct dm_format_opts *fo)
{
    struct out o = {buf, cap, 0};

    if (cap == 0)
        return 0;
    buf[0] = '\0';
    if (fo->format == DM_FMT_TEXT)
        text_header(&o, fo);
    else if (fo->format == DM_FMT_CSV)
        csv_header(&o, fo);
    return o.len;
}
