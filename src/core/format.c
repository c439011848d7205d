/*
 * format.c - text, CSV and JSON lines. Column widths of the text format are
 * in one table so the header and the rows cannot drift apart.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "core/format.h"
#include "core/tz.h"

#define NS_PER_US 1000u
#define NS_PER_SEC 1000000000u
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

/* An append-only view of the caller's buffer; never overruns it. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->len + n >= o->cap)
        n = o->cap - 1 - o->len;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* Digits of v, right-aligned in width (no padding when width is smaller).
 * Hand-written rather than snprintf: the printer formats every live event,
 * and at 200k events/s snprintf's parsing was most of its CPU time. */
static void put_u64_w(struct out *o, int width, uint64_t v)
{
    char tmp[24];
    int n = 0;

    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (width-- > n)
        put(o, " ", 1);
    put(o, tmp + sizeof tmp - n, (size_t)n);
}

static void put_u64(struct out *o, uint64_t v)
{
    put_u64_w(o, 0, v);
}

/* s padded to |width|: right-aligned when width > 0, left when < 0. */
static void put_pad(struct out *o, int width, const char *s)
{
    size_t len = strlen(s);
    size_t w = (size_t)(width < 0 ? -width : width);

    if (width > 0)
        for (; w > len; w--)
            put(o, " ", 1);
    put(o, s, len);
    if (width < 0)
        for (; w > len; w--)
            put(o, " ", 1);
}

/* whole.frac with frac zero-padded to digits places, right-aligned in width. */
static void put_fixed(struct out *o, int width, uint64_t whole, uint64_t frac,
                      int digits)
{
    char tmp[48];
    struct out t = {tmp, sizeof tmp, 0};
    char dec[24];

    tmp[0] = '\0';
    put_u64(&t, whole);
    put(&t, ".", 1);
    for (int i = digits - 1; i >= 0; i--) {
        dec[i] = (char)('0' + frac % 10);
        frac /= 10;
    }
    put(&t, dec, (size_t)digits);
    put_pad(o, width, tmp);
}

static void putf(struct out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void putf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    o->len += (size_t)n < o->cap - o->len ? (size_t)n : o->cap - o->len - 1;
}

/* ns as seconds with 6 decimals, rounded to the nearest microsecond. */
static void put_sec6(struct out *o, int width, uint64_t ns)
{
    uint64_t us = (ns + NS_PER_US / 2) / NS_PER_US;

    put_fixed(o, width, us / 1000000u, us % 1000000u, 6);
}

/* ns as seconds with 9 decimals: exact. */
static void put_sec9(struct out *o, uint64_t ns)
{
    put_fixed(o, 0, ns / NS_PER_SEC, ns % NS_PER_SEC, 9);
}

/* ns as milliseconds with 6 decimals: exact. */
static void put_ms6(struct out *o, uint64_t ns)
{
    put_fixed(o, 0, ns / 1000000u, ns % 1000000u, 6);
}

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

/* Wall-clock time of an event (see civil_of), to the microsecond.
 * date_too adds YYYY-MM-DD. */
static void put_clock(struct out *o, int width, const struct dm_format_opts *fo,
                      const struct dm_event *ev, int date_too)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    uint64_t us = (wall % NS_PER_SEC + NS_PER_US / 2) / NS_PER_US;
    int64_t secs = (int64_t)(wall / NS_PER_SEC);
    struct dm_civil c;
    char tmp[64];

    if (us == 1000000u) { /* rounding carried into the next second */
        secs++;
        us = 0;
    }
    if (civil_of(fo, secs, &c) != 0) {
        put_pad(o, width, "?");
        return;
    }
    if (date_too)
        snprintf(tmp, sizeof tmp, "%04d-%02d-%02d %02d:%02d:%02d.%06u", c.year, c.month,
                 c.day, c.hour, c.minute, c.second, (unsigned)us);
    else
        snprintf(tmp, sizeof tmp, "%02d:%02d:%02d.%06u", c.hour, c.minute, c.second,
                 (unsigned)us);
    put_pad(o, width, tmp);
}

/* ,"time_utc":"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (RFC 3339), exact. */
static void put_json_utc(struct out *o, const struct dm_format_opts *fo,
                         const struct dm_event *ev)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    struct dm_civil c;

    dm_civil_from_seconds((int64_t)(wall / NS_PER_SEC), &c);
    putf(o, ",\"time_utc\":\"%04d-%02d-%02dT%02d:%02d:%02d.%09luZ\"", c.year, c.month,
         c.day, c.hour, c.minute, c.second, (unsigned long)(wall % NS_PER_SEC));
}

static uint64_t sector_of(const struct dm_event *ev)
{
    return ev->byte_offset / SECTOR_BYTES;
}

static uint64_t length_of(const struct dm_event *ev)
{
    return ((uint64_t)ev->transfer_size + SECTOR_BYTES - 1) / SECTOR_BYTES;
}

static void disk_text(const struct dm_event *ev, char *buf, size_t cap)
{
    if (ev->disk_name[0] != '\0')
        snprintf(buf, cap, "%s", ev->disk_name);
    else
        snprintf(buf, cap, "%" PRIu32, ev->disk);
}

static const char *request_name(const struct dm_event *ev)
{
    return ev->request < DM_REQ_COUNT ? dm_request_names[ev->request] : "?";
}

/* ---- text ---------------------------------------------------------------- */

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
        puts_(o, "Process\n");
}

static void text_event(struct out *o, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    const char *process = (ev->flags & DM_EV_HAS_PROCESS) ? ev->process : "-";

    put_u64_w(o, W_SEQ, seq);
    puts_(o, " ");
    if (fo->clock)
        put_clock(o, W_CLOCK, fo, ev, 0);
    else
        put_sec6(o, W_TIME, ev->time_ns);
    puts_(o, " ");
    put_sec6(o, W_DURATION, ev->duration_ns);
    if (fo->queue) {
        puts_(o, " ");
        if (ev->flags & DM_EV_HAS_QUEUE)
            put_sec6(o, W_DURATION, ev->queue_ns);
        else
            put_pad(o, W_DURATION, "-");
    }
    puts_(o, " ");
    if (ev->disk_name[0] != '\0') {
        put_pad(o, W_DISK, ev->disk_name);
    } else {
        size_t before = o->len;

        put_u64(o, ev->disk);
        for (size_t n = o->len - before; n < (size_t)-W_DISK; n++)
            puts_(o, " ");
    }
    puts_(o, " ");
    put_pad(o, W_REQUEST, request_name(ev));
    puts_(o, " ");
    put_u64_w(o, W_SECTOR, sector_of(ev));
    puts_(o, " ");
    put_u64_w(o, W_LENGTH, length_of(ev));
    puts_(o, " ");
    if (ev->flags & DM_EV_HAS_PID)
        put_u64_w(o, W_PID, ev->pid);
    else
        put_pad(o, W_PID, "-");
    puts_(o, " ");
    if (fo->show_file && (ev->flags & DM_EV_HAS_FILE)) {
        put_pad(o, W_PROCESS, process);
        puts_(o, (ev->flags & DM_EV_FILE_CUT) ? " ..." : " ");
        puts_(o, ev->file);
    } else {
        puts_(o, process);
    }
    puts_(o, "\n");
}

/* ---- csv (RFC 4180) ------------------------------------------------------ */

static void csv_string(struct out *o, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        puts_(o, s);
        return;
    }
    puts_(o, "\"");
    for (; *s != '\0'; s++) {
        if (*s == '"')
            puts_(o, "\"\"");
        else
            put(o, s, 1);
    }
    puts_(o, "\"");
}

static void csv_header(struct out *o, const struct dm_format_opts *fo)
{
    puts_(o, "seq,time,duration");
    if (fo->queue)
        puts_(o, ",queue");
    puts_(o, ",disk,request,sector,length,pid,tid,process,file,offset,bytes\r\n");
}

static void csv_event(struct out *o, const struct dm_format_opts *fo,
                      uint64_t seq, const struct dm_event *ev)
{
    char disk[DM_DISK_NAME_MAX + 16];

    put_u64(o, seq);
    puts_(o, ",");
    if (fo->clock)
        put_clock(o, 0, fo, ev, 1);
    else
        put_sec9(o, ev->time_ns);
    puts_(o, ",");
    put_sec9(o, ev->duration_ns);
    if (fo->queue) {
        puts_(o, ",");
        if (ev->flags & DM_EV_HAS_QUEUE)
            put_sec9(o, ev->queue_ns);
    }
    disk_text(ev, disk, sizeof disk);
    puts_(o, ",");
    csv_string(o, disk);
    puts_(o, ",");
    puts_(o, request_name(ev));
    puts_(o, ",");
    put_u64(o, sector_of(ev));
    puts_(o, ",");
    put_u64(o, length_of(ev));
    puts_(o, ",");
    if (ev->flags & DM_EV_HAS_PID)
        put_u64(o, ev->pid);
    puts_(o, ",");
    if (ev->flags & DM_EV_HAS_TID)
        put_u64(o, ev->tid);
    puts_(o, ",");
    if (ev->flags & DM_EV_HAS_PROCESS)
        csv_string(o, ev->process);
    puts_(o, ",");
    if (ev->flags & DM_EV_HAS_FILE) {
        char file[DM_FILE_MAX + 4];

        snprintf(file, sizeof file, "%s%s",
                 (ev->flags & DM_EV_FILE_CUT) ? "..." : "", ev->file);
        csv_string(o, file);
    }
    puts_(o, ",");
    put_u64(o, ev->byte_offset);
    puts_(o, ",");
    put_u64(o, ev->transfer_size);
    puts_(o, "\r\n");
}

/* ---- json (one object per line) ------------------------------------------ */

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A JSON string (RFC 8259): quotes, backslashes and control characters
 * escaped; a byte that is not valid UTF-8 becomes U+FFFD so the line stays
 * valid JSON whatever a process named itself. */
static void json_string(struct out *o, const char *prefix, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    puts_(o, "\"");
    puts_(o, prefix);
    while (*p != '\0') {
        size_t n;

        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            put(o, esc, 2);
            p++;
        } else if (*p < 0x20) {
            putf(o, "\\u%04x", *p);
            p++;
        } else if ((n = utf8_len(p)) == 0) {
            puts_(o, "\\ufffd");
            p++;
        } else {
            put(o, (const char *)p, n);
            p += n;
        }
    }
    puts_(o, "\"");
}

/* ,"key":number */
static void json_u64(struct out *o, const char *key, uint64_t v)
{
    puts_(o, ",\"");
    puts_(o, key);
    puts_(o, "\":");
    put_u64(o, v);
}

static void json_event(struct out *o, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    puts_(o, "{\"seq\":");
    put_u64(o, seq);
    puts_(o, ",\"time\":");
    put_sec9(o, ev->time_ns);
    if (fo->utc)
        put_json_utc(o, fo, ev);
    puts_(o, ",\"duration_ms\":");
    put_ms6(o, ev->duration_ns);
    if (fo->queue && (ev->flags & DM_EV_HAS_QUEUE)) {
        puts_(o, ",\"queue_ms\":");
        put_ms6(o, ev->queue_ns);
    }
    puts_(o, ",\"disk\":");
    if (ev->disk_name[0] != '\0')
        json_string(o, "", ev->disk_name);
    else
        put_u64(o, ev->disk);
    puts_(o, ",\"request\":\"");
    puts_(o, request_name(ev));
    puts_(o, "\"");
    json_u64(o, "offset", ev->byte_offset);
    json_u64(o, "bytes", ev->transfer_size);
    json_u64(o, "sector", sector_of(ev));
    json_u64(o, "length", length_of(ev));
    if (ev->flags & DM_EV_HAS_PID)
        json_u64(o, "pid", ev->pid);
    if (ev->flags & DM_EV_HAS_TID)
        json_u64(o, "tid", ev->tid);
    if (ev->flags & DM_EV_HAS_PROCESS) {
        puts_(o, ",\"process\":");
        json_string(o, "", ev->process);
    }
    if (ev->flags & DM_EV_HAS_FILE) {
        puts_(o, ",\"file\":");
        json_string(o, (ev->flags & DM_EV_FILE_CUT) ? "..." : "", ev->file);
    }
    if (ev->flags & DM_EV_HAS_IRP_FLAGS)
        json_u64(o, "irp_flags", ev->irp_flags);
    puts_(o, "}\n");
}

size_t dm_format_header(char *buf, size_t cap, const struct dm_format_opts *fo)
{
    struct out o = {buf, cap, 0};

    buf[0] = '\0';
    if (fo->format == DM_FMT_TEXT)
        text_header(&o, fo);
    else if (fo->format == DM_FMT_CSV)
        csv_header(&o, fo);
    return o.len;
}

size_t dm_format_event(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    struct out o = {buf, cap, 0};

    buf[0] = '\0';
    switch (fo->format) {
    case DM_FMT_CSV:
        csv_event(&o, fo, seq, ev);
        break;
    case DM_FMT_JSON:
        json_event(&o, fo, seq, ev);
        break;
    default:
        text_event(&o, fo, seq, ev);
        break;
    }
    return o.len;
}

size_t dm_format_json_string(char *buf, size_t cap, const char *s)
{
    struct out o = {buf, cap, 0};

    buf[0] = '\0';
    json_string(&o, "", s);
    return o.len;
}

size_t dm_format_csv_string(char *buf, size_t cap, const char *s)
{
    struct out o = {buf, cap, 0};

    buf[0] = '\0';
    csv_string(&o, s);
    return o.len;
}
