/*
 * test_format.c - byte-exact lines of the text, CSV and JSON formats. The
 * expected strings are written from the column specification in docs/output.md
 * (widths, units, rounding), not captured from the program.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "output/escape.h"
#include "output/format.h"
#include "output/tz.h"
#include "dmtest.h"

/* A Read like the first one of the Windows 8 sample: 16 KiB at byte
 * 849,788,928 (sector 1,659,744), 25.821 ms, by System (pid 4). */
static struct dm_event sample_read(void)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.time_ns = 1275943100;          /* 1.2759431 s -> 1.275943 */
    ev.duration_ns = 25821000;        /* 0.025821 s */
    ev.byte_offset = 849788928;
    ev.transfer_size = 16384;
    ev.disk = 0;
    ev.irp_flags = 0x20002;
    ev.pid = 4;
    ev.tid = 44;
    ev.request = DM_REQ_READ;
    ev.flags = DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS | DM_EV_HAS_FILE |
               DM_EV_HAS_IRP_FLAGS | DM_EV_HAS_PRIORITY;
    ev.req_flags = DM_RQ_PAGING;      /* IRP_PAGING_IO 0x2 */
    ev.priority = 1;                  /* 0x20002 >> 17 */
    ev.disk_name = "";
    ev.process = "System";
    ev.file = "C:\\Users\\a \"b\",c.dat";
    return ev;
}

static struct dm_format_opts fmt(enum dm_format f, int show_file)
{
    struct dm_format_opts fo;

    memset(&fo, 0, sizeof fo);
    fo.format = f;
    fo.show_file = show_file;
    return fo;
}

DM_TEST(text_header_and_row)
{
    struct dm_format_opts fo = fmt(DM_FMT_TEXT, 1);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    dm_format_header(buf, sizeof buf, &fo);
    /* #:7 Time:12 Duration:10 Disk:-8 Request:-7 Sector:12 Length:6 PID:7
     * Process:-16, one space between columns. */
    DM_ASSERT_STR_EQ(buf, "      #         Time   Duration Disk     Request       Sector "
                          "Length     PID Process          File\n");
    dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    DM_ASSERT_STR_EQ(buf, "      1     1.275943   0.025821 0        Read         1659744 "
                          "    32       4 System           C:\\Users\\a \"b\",c.dat [paging]\n");
}

DM_TEST(text_unknowns_and_rounding)
{
    struct dm_format_opts fo = fmt(DM_FMT_TEXT, 0);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    ev.flags = 0;                     /* no pid, no process */
    ev.req_flags = DM_RQ_PREFLUSH | DM_RQ_FUA | DM_RQ_SYNC;
    ev.request = DM_REQ_FLUSH;
    ev.byte_offset = 0;
    ev.transfer_size = 513;           /* 513 bytes round up to 2 sectors */
    ev.time_ns = 999999500;           /* rounds up to 1.000000 */
    ev.duration_ns = 499;             /* rounds down to 0.000000 */
    ev.disk_name = "nvme0n1";
    dm_format_event(buf, sizeof buf, &fo, 12345678, &ev);
    DM_ASSERT_STR_EQ(buf, "12345678     1.000000   0.000000 nvme0n1  Flush              0 "
                          "     2       - - [preflush|fua|sync]\n");
    dm_format_header(buf, sizeof buf, &fo);
    DM_ASSERT_STR_EQ(buf, "      #         Time   Duration Disk     Request       Sector "
                          "Length     PID Process\n");
}

DM_TEST(text_queue_column)
{
    struct dm_format_opts fo = fmt(DM_FMT_TEXT, 0);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    fo.queue = 1;
    ev.flags = DM_EV_HAS_PID | DM_EV_HAS_PROCESS | DM_EV_HAS_QUEUE;
    ev.queue_ns = 1500;               /* 0.0000015 s -> 0.000002 */
    dm_format_header(buf, sizeof buf, &fo);
    DM_ASSERT_STR_EQ(buf, "      #         Time   Duration      Queue Disk     Request "
                          "      Sector Length     PID Process\n");
    dm_format_event(buf, sizeof buf, &fo, 2, &ev);
    DM_ASSERT_STR_EQ(buf, "      2     1.275943   0.025821   0.000002 0        Read    "
                          "     1659744     32       4 System [paging]\n");
}

DM_TEST(csv_rfc4180)
{
    struct dm_format_opts fo = fmt(DM_FMT_CSV, 1);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    dm_format_header(buf, sizeof buf, &fo);
    DM_ASSERT_STR_EQ(buf, "seq,time,duration,disk,request,sector,length,pid,tid,process,"
                          "file,offset,bytes,flags,priority,partition,cgroup\r\n");
    dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    /* The file name holds a quote and a comma: quoted, quote doubled. */
    DM_ASSERT_STR_EQ(buf, "1,1.275943100,0.025821000,0,Read,1659744,32,4,44,System,"
                          "\"C:\\Users\\a \"\"b\"\",c.dat\",849788928,16384,paging,1,,\r\n");
    ev.flags = 0;
    ev.req_flags = DM_RQ_META | DM_RQ_SYNC | DM_RQ_READAHEAD;
    dm_format_event(buf, sizeof buf, &fo, 2, &ev);
    DM_ASSERT_STR_EQ(buf, "2,1.275943100,0.025821000,0,Read,1659744,32,,,,,849788928,16384,"
                          "sync|meta|readahead,,,\r\n");
    ev.req_flags = 0;
    dm_format_event(buf, sizeof buf, &fo, 3, &ev);
    DM_ASSERT_STR_EQ(buf, "3,1.275943100,0.025821000,0,Read,1659744,32,,,,,849788928,16384,"
                          ",,,\r\n");
}

DM_TEST(json_keys_and_escapes)
{
    struct dm_format_opts fo = fmt(DM_FMT_JSON, 1);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    DM_ASSERT_EQ_U64(dm_format_header(buf, sizeof buf, &fo), 0);
    dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    DM_ASSERT_STR_EQ(buf, "{\"seq\":1,\"time\":1.275943100,\"duration_ms\":25.821000,"
                          "\"disk\":0,\"request\":\"Read\",\"offset\":849788928,"
                          "\"bytes\":16384,\"sector\":1659744,\"length\":32,\"pid\":4,"
                          "\"tid\":44,\"process\":\"System\","
                          "\"file\":\"C:\\\\Users\\\\a \\\"b\\\",c.dat\","
                          "\"irp_flags\":131074,\"flags\":\"paging\",\"priority\":1}\n");
}

DM_TEST(json_unknowns_omitted_and_bad_utf8)
{
    struct dm_format_opts fo = fmt(DM_FMT_JSON, 0);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    ev.flags = DM_EV_HAS_PROCESS;
    ev.disk_name = "sda";
    /* A tab, a valid e-acute (C3 A9) and a lone continuation byte. */
    ev.process = "a\tb\xc3\xa9\x80";
    dm_format_event(buf, sizeof buf, &fo, 3, &ev);
    DM_ASSERT_STR_EQ(buf, "{\"seq\":3,\"time\":1.275943100,\"duration_ms\":25.821000,"
                          "\"disk\":\"sda\",\"request\":\"Read\",\"offset\":849788928,"
                          "\"bytes\":16384,\"sector\":1659744,\"length\":32,"
                          "\"process\":\"a\\u0009b\xc3\xa9\\ufffd\",\"flags\":\"paging\"}\n");
}

DM_TEST(long_file_never_overflows)
{
    struct dm_format_opts fo = fmt(DM_FMT_JSON, 1);
    struct dm_event ev = sample_read();
    char buf[64], file[DM_FILE_MAX];
    size_t n;

    memset(file, '"', sizeof file - 1);
    file[sizeof file - 1] = '\0';
    ev.file = file;
    n = dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    DM_ASSERT(n < sizeof buf);
    DM_ASSERT_EQ_U64(strlen(buf), n);
}

/* --- civil time and time-zone rules (output/tz.h) ------------------------------
 * Expected dates worked out by hand from the calendar; rules as the Windows
 * registry gives them for these zones (TIME_ZONE_INFORMATION). */

static struct dm_tz_date rule(int month, int dow, int nth, int hour)
{
    struct dm_tz_date d;

    memset(&d, 0, sizeof d);
    d.month = (uint16_t)month;
    d.day_of_week = (uint16_t)dow;
    d.day = (uint16_t)nth;
    d.hour = (uint16_t)hour;
    return d;
}

/* Seconds since 1970 of a UTC date, from the C library as a second opinion
 * would need timegm (not C11): count days by hand instead. */
static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
    static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int64_t days = 0;

    for (int yy = 1970; yy < y; yy++)
        days += (yy % 4 == 0 && (yy % 100 != 0 || yy % 400 == 0)) ? 366 : 365;
    days += cum[mo - 1] + d - 1;
    if (mo > 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        days++;
    return days * 86400 + h * 3600 + mi * 60 + s;
}

DM_TEST(civil_dates)
{
    struct dm_civil c;

    dm_civil_from_seconds(0, &c);
    DM_ASSERT(c.year == 1970 && c.month == 1 && c.day == 1 && c.hour == 0);
    dm_civil_from_seconds(utc(2000, 2, 29, 23, 59, 59), &c);
    DM_ASSERT(c.year == 2000 && c.month == 2 && c.day == 29 && c.hour == 23 &&
              c.minute == 59 && c.second == 59);
    dm_civil_from_seconds(-1, &c);
    DM_ASSERT(c.year == 1969 && c.month == 12 && c.day == 31 && c.second == 59);
    dm_civil_from_seconds(utc(2100, 3, 1, 0, 0, 0), &c); /* 2100: not a leap year */
    DM_ASSERT(c.year == 2100 && c.month == 3 && c.day == 1);
    DM_ASSERT_EQ_INT(utc(2000, 1, 1, 0, 0, 0), 946684800); /* the hand count itself */
}

/* Pacific time, as both sample traces record it: Bias 480, daylight from the
 * 2nd Sunday of March 02:00 to the 1st Sunday of November 02:00, -60. In
 * 2020: 8 March and 1 November. */
DM_TEST(tz_pacific_transitions)
{
    struct dm_time_zone tz;

    memset(&tz, 0, sizeof tz);
    tz.valid = 1;
    tz.bias = 480;
    tz.daylight_bias = -60;
    tz.daylight_date = rule(3, 0, 2, 2);
    tz.standard_date = rule(11, 0, 1, 2);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 1, 15, 12, 0, 0)), 480);
    /* 02:00 PST = 10:00 UTC */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 3, 8, 9, 59, 59)), 480);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 3, 8, 10, 0, 0)), 420);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 7, 29, 0, 7, 1)), 420);
    /* 02:00 PDT = 09:00 UTC */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 11, 1, 8, 59, 59)), 420);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 11, 1, 9, 0, 0)), 480);
    /* New Year's Eve UTC is still the old year in Pacific time. */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2021, 1, 1, 3, 0, 0)), 480);
}

/* UK time: the LAST Sunday (wDay 5) of March 01:00 to the last Sunday of
 * October 02:00. In 2021: 28 March (a month with 5 Sundays? no: 7, 14, 21,
 * 28: the 4th is the last) and 31 October (the 5th). */
DM_TEST(tz_last_weekday_rule)
{
    struct dm_time_zone tz;

    memset(&tz, 0, sizeof tz);
    tz.valid = 1;
    tz.daylight_bias = -60;
    tz.daylight_date = rule(3, 0, 5, 1);
    tz.standard_date = rule(10, 0, 5, 2);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2021, 3, 28, 0, 59, 59)), 0);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2021, 3, 28, 1, 0, 0)), -60);
    /* 02:00 BST = 01:00 UTC on 31 October */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2021, 10, 31, 0, 59, 59)), -60);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2021, 10, 31, 1, 0, 0)), 0);
}

/* Sydney: Bias -600, daylight from the 1st Sunday of October 02:00 to the
 * 1st Sunday of April 03:00 (across the new year). 2020: 5 April, 4 October. */
DM_TEST(tz_southern_and_none)
{
    struct dm_time_zone tz;

    memset(&tz, 0, sizeof tz);
    tz.valid = 1;
    tz.bias = -600;
    tz.daylight_bias = -60;
    tz.daylight_date = rule(10, 0, 1, 2);
    tz.standard_date = rule(4, 0, 1, 3);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 1, 15, 0, 0, 0)), -660);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 6, 15, 0, 0, 0)), -600);
    /* 03:00 AEDT on 5 April = 16:00 UTC on 4 April */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 4, 4, 15, 59, 59)), -660);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 4, 4, 16, 0, 0)), -600);
    /* 02:00 AEST on 4 October = 16:00 UTC on 3 October */
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 10, 3, 15, 59, 59)), -600);
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 10, 3, 16, 0, 0)), -660);
    /* No daylight time (wMonth 0): Bias + StandardBias always. */
    tz.standard_date.month = 0;
    tz.standard_bias = 30;
    DM_ASSERT_EQ_INT(dm_tz_bias_minutes(&tz, utc(2020, 1, 15, 0, 0, 0)), -570);
}

/* --clock with a trace's zone and --utc, in text, csv and json. */
DM_TEST(clock_zone_and_utc)
{
    struct dm_format_opts fo = fmt(DM_FMT_TEXT, 0);
    struct dm_event ev = sample_read();
    char line[DM_LINE_MAX];

    fo.clock = 1;
    /* 2020-07-29 00:07:00.6264569 UTC at time 0; the event 1.2759431 s later */
    fo.start_wall_ns = (uint64_t)utc(2020, 7, 29, 0, 7, 0) * 1000000000u + 626456900u;
    fo.tz.valid = 1;
    fo.tz.bias = 480;
    fo.tz.daylight_bias = -60;
    fo.tz.daylight_date = rule(3, 0, 2, 2);
    fo.tz.standard_date = rule(11, 0, 1, 2);
    dm_format_event(line, sizeof line, &fo, 1, &ev);
    DM_ASSERT(strncmp(line, "      1 17:07:01.902400 ", 24) == 0);
    fo.format = DM_FMT_CSV;
    dm_format_event(line, sizeof line, &fo, 1, &ev);
    DM_ASSERT(strncmp(line, "1,2020-07-28 17:07:01.902400,", 29) == 0);
    fo.utc = 1;
    dm_format_event(line, sizeof line, &fo, 1, &ev);
    DM_ASSERT(strncmp(line, "1,2020-07-29 00:07:01.902400,", 29) == 0);
    fo.format = DM_FMT_JSON;
    dm_format_event(line, sizeof line, &fo, 1, &ev);
    DM_ASSERT(strstr(line, "{\"seq\":1,\"time\":1.275943100,"
                           "\"time_utc\":\"2020-07-29T00:07:01.902400000Z\",") == line);
}

/* --- the fast writers against a slow reference ------------------------------
 * ref_line is an independent second writer of the three formats, built on
 * snprintf and byte loops the way docs/output.md describes the columns (widths,
 * rounding, quoting, escapes), sharing no code with format.c apart from the
 * calendar (output/tz.h, tested above). Random events with edge values go
 * through both; every byte must agree. */

struct ref {
    char *buf;
    size_t cap, len;
};

static void rput(struct ref *r, const char *s, size_t n)
{
    if (r->len + n < r->cap) {
        memcpy(r->buf + r->len, s, n);
        r->len += n;
        r->buf[r->len] = '\0';
    }
}

static void rputs(struct ref *r, const char *s)
{
    rput(r, s, strlen(s));
}

static void rprintf(struct ref *r, const char *fmt, ...) DM_PRINTF(2, 3);

static void rprintf(struct ref *r, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        rput(r, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* "s.ffffff": seconds rounded to the microsecond (the sum wraps near
 * UINT64_MAX as docs/output.md's rounding is done in 64 bits). */
static void ref_sec6(char *out, size_t cap, uint64_t ns)
{
    uint64_t us = (ns + 500) / 1000;

    snprintf(out, cap, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
}

static void ref_csv(struct ref *r, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        rputs(r, s);
        return;
    }
    rputs(r, "\"");
    for (; *s != '\0'; s++)
        rputs(r, *s == '"' ? "\"\"" : (char[2]){*s, '\0'});
    rputs(r, "\"");
}

/* RFC 8259 string; the UTF-8 rule of docs/output.md ("text"): lead bytes C2-DF, E0-EF,
 * F0-F4 with 1, 2, 3 continuation bytes pass, any other non-ASCII byte is
 * U+FFFD on its own. */
static void ref_json(struct ref *r, const char *prefix, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;

    rputs(r, "\"");
    rputs(r, prefix);
    while (*s != '\0') {
        int need = *s >= 0xC2 && *s <= 0xDF ? 1 : *s >= 0xE0 && *s <= 0xEF ? 2
                 : *s >= 0xF0 && *s <= 0xF4 ? 3 : -1;
        int ok = 1;

        if (*s == '"' || *s == '\\') {
            rprintf(r, "\\%c", *s);
            s++;
            continue;
        }
        if (*s < 0x20) {
            rprintf(r, "\\u%04x", *s);
            s++;
            continue;
        }
        if (*s < 0x80) {
            rput(r, (const char *)s, 1);
            s++;
            continue;
        }
        for (int i = 1; i <= need && ok; i++)
            ok = (s[i] & 0xC0) == 0x80;
        if (need < 0 || !ok) {
            rputs(r, "\\ufffd");
            s++;
        } else {
            rput(r, (const char *)s, (size_t)need + 1);
            s += need + 1;
        }
    }
    rputs(r, "\"");
}

/* A name as the text shows it (docs/output.md, "Names" under "text"): each character decoded
 * from UTF-8 to its code point (RFC 3629: shortest form, no surrogates, at
 * most U+10FFFF); code points below 0x20, 0x7F and 0x80-0x9F as \xNN of
 * the code point, other characters as they were, and each byte that does
 * not start a valid character as \xNN of the byte. */
static void ref_term(char *out, size_t cap, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    struct ref r = {out, cap, 0};

    out[0] = '\0';
    while (*s != '\0') {
        unsigned long cp = 0, min = 0;
        int n = *s < 0x80 ? 1 : (*s & 0xE0) == 0xC0 ? 2 : (*s & 0xF0) == 0xE0 ? 3
              : (*s & 0xF8) == 0xF0 ? 4 : 0;
        int ok = n > 0;

        if (n == 1)
            cp = *s;
        else if (n > 1)
            cp = *s & (0xFFu >> (n + 1));
        for (int i = 1; i < n && ok; i++) {
            ok = (s[i] & 0xC0) == 0x80;
            cp = cp << 6 | (s[i] & 0x3Fu);
        }
        min = n == 2 ? 0x80 : n == 3 ? 0x800 : n == 4 ? 0x10000 : 0;
        if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)))
            ok = 0;
        if (!ok) {
            rprintf(&r, "\\x%02x", *s);
            s++;
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            rprintf(&r, "\\x%02lx", cp);
            s += n;
        } else {
            rput(&r, (const char *)s, (size_t)n);
            s += n;
        }
    }
}

/* The wall clock of the event in the --clock/--utc zone, to the
 * microsecond: date_sep 0 for the text's time of day only. */
static void ref_clock(char *out, size_t cap, const struct dm_format_opts *fo,
                      const struct dm_event *ev, char date_sep)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    int64_t secs = (int64_t)(wall / 1000000000u);
    uint64_t us = (wall % 1000000000u + 500) / 1000;
    struct dm_civil c;

    if (us == 1000000) {
        secs++;
        us = 0;
    }
    if (fo->utc || fo->tz.valid) {
        dm_civil_from_seconds(secs - (fo->utc ? 0 : (int64_t)dm_tz_bias_minutes(&fo->tz, secs) * 60), &c);
    } else {
        time_t t = (time_t)secs;
        struct tm *tm = localtime(&t);

        if (tm == NULL) {
            snprintf(out, cap, "?");
            return;
        }
        c.year = tm->tm_year + 1900;
        c.month = tm->tm_mon + 1;
        c.day = tm->tm_mday;
        c.hour = tm->tm_hour;
        c.minute = tm->tm_min;
        c.second = tm->tm_sec;
    }
    if (date_sep == 0)
        snprintf(out, cap, "%02d:%02d:%02d.%06u", c.hour, c.minute, c.second, (unsigned)us);
    else
        snprintf(out, cap, "%04d-%02d-%02d%c%02d:%02d:%02d.%06u", c.year, c.month, c.day,
                 date_sep, c.hour, c.minute, c.second, (unsigned)us);
}

/* The request flags as docs/output.md lists them, bit 0 first, '|' between:
 * written out here rather than taken from dm_req_flag_names. */
static void ref_flags(struct ref *r, unsigned flags)
{
    static const char *const words[] = {
        "preflush", "fua", "sync", "meta", "readahead", "secure",
        "nocache", "paging", "sync_api", "associated", "buffered", "sync_paging",
    };
    const char *sep = "";

    for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++) {
        if (flags & (1u << i)) {
            rprintf(r, "%s%s", sep, words[i]);
            sep = "|";
        }
    }
}

static size_t ref_line(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    static const char *const req[] = {"Read", "Write", "Flush", "Discard"};
    struct ref r = {buf, cap, 0};
    const char *rq = ev->request < 4 ? req[ev->request] : "?";
    const char *process = (ev->flags & DM_EV_HAS_PROCESS) ? ev->process : "-";
    uint64_t sector = ev->byte_offset / 512;
    uint64_t length = ((uint64_t)ev->transfer_size + 511) / 512;
    char a[128], disk[64];
    const char *cut = (ev->flags & DM_EV_FILE_CUT) ? "..." : "";

    buf[0] = '\0';
    if (ev->disk_name[0] != '\0')
        snprintf(disk, sizeof disk, "%s", ev->disk_name);
    else
        snprintf(disk, sizeof disk, "%" PRIu32, ev->disk);
    if (fo->format == DM_FMT_TEXT) {
        static char term_disk[4 * sizeof disk], term_process[4 * DM_PROCESS_MAX];
        static char term_file[4 * DM_FILE_MAX];

        ref_term(term_disk, sizeof term_disk, disk);
        ref_term(term_process, sizeof term_process, process);
        ref_term(term_file, sizeof term_file, ev->file);
        rprintf(&r, "%7" PRIu64 " ", seq);
        if (fo->clock)
            ref_clock(a, sizeof a, fo, ev, 0);
        else
            ref_sec6(a, sizeof a, ev->time_ns);
        rprintf(&r, "%*s ", fo->clock ? 15 : 12, a);
        ref_sec6(a, sizeof a, ev->duration_ns);
        rprintf(&r, "%10s", a);
        if (fo->queue) {
            if (ev->flags & DM_EV_HAS_QUEUE)
                ref_sec6(a, sizeof a, ev->queue_ns);
            else
                snprintf(a, sizeof a, "-");
            rprintf(&r, " %10s", a);
        }
        rprintf(&r, " %-8s %-7s %12" PRIu64 " %6" PRIu64 " ", term_disk, rq, sector,
                length);
        if (ev->flags & DM_EV_HAS_PID)
            rprintf(&r, "%7" PRIu32 " ", ev->pid);
        else
            rprintf(&r, "%7s ", "-");
        if (fo->show_file && (ev->flags & DM_EV_HAS_FILE)) {
            rprintf(&r, "%-16s %s", term_process, cut);
            rputs(&r, term_file);
        } else {
            rputs(&r, term_process);
        }
        if (ev->req_flags != 0) {
            rputs(&r, " [");
            ref_flags(&r, ev->req_flags);
            rputs(&r, "]");
        }
        rputs(&r, "\n");
    } else if (fo->format == DM_FMT_CSV) {
        rprintf(&r, "%" PRIu64 ",", seq);
        if (fo->clock)
            ref_clock(a, sizeof a, fo, ev, ' ');
        else
            snprintf(a, sizeof a, "%" PRIu64 ".%09" PRIu64, ev->time_ns / 1000000000u,
                     ev->time_ns % 1000000000u);
        rprintf(&r, "%s,%" PRIu64 ".%09" PRIu64, a, ev->duration_ns / 1000000000u,
                ev->duration_ns % 1000000000u);
        if (fo->queue) {
            rputs(&r, ",");
            if (ev->flags & DM_EV_HAS_QUEUE)
                rprintf(&r, "%" PRIu64 ".%09" PRIu64, ev->queue_ns / 1000000000u,
                        ev->queue_ns % 1000000000u);
        }
        rputs(&r, ",");
        ref_csv(&r, disk);
        rprintf(&r, ",%s,%" PRIu64 ",%" PRIu64 ",", rq, sector, length);
        if (ev->flags & DM_EV_HAS_PID)
            rprintf(&r, "%" PRIu32, ev->pid);
        rputs(&r, ",");
        if (ev->flags & DM_EV_HAS_TID)
            rprintf(&r, "%" PRIu32, ev->tid);
        rputs(&r, ",");
        if (ev->flags & DM_EV_HAS_PROCESS)
            ref_csv(&r, ev->process);
        rputs(&r, ",");
        if (ev->flags & DM_EV_HAS_FILE) {
            static char file[DM_FILE_MAX + 8];

            snprintf(file, sizeof file, "%s%s", cut, ev->file);
            ref_csv(&r, file);
        }
        rprintf(&r, ",%" PRIu64 ",%" PRIu32 ",", ev->byte_offset, ev->transfer_size);
        ref_flags(&r, ev->req_flags);
        rputs(&r, ",");
        if (ev->flags & DM_EV_HAS_PRIORITY)
            rprintf(&r, "%u", (unsigned)ev->priority);
        rputs(&r, ",");
        ref_csv(&r, ev->partition);
        rputs(&r, ",");
        ref_csv(&r, ev->cgroup);
        rputs(&r, "\r\n");
    } else {
        rprintf(&r, "{\"seq\":%" PRIu64 ",\"time\":%" PRIu64 ".%09" PRIu64, seq,
                ev->time_ns / 1000000000u, ev->time_ns % 1000000000u);
        if (fo->utc) {
            uint64_t wall = fo->start_wall_ns + ev->time_ns;
            struct dm_civil c;

            dm_civil_from_seconds((int64_t)(wall / 1000000000u), &c);
            rprintf(&r, ",\"time_utc\":\"%04d-%02d-%02dT%02d:%02d:%02d.%09" PRIu64 "Z\"",
                    c.year, c.month, c.day, c.hour, c.minute, c.second,
                    wall % 1000000000u);
        }
        rprintf(&r, ",\"duration_ms\":%" PRIu64 ".%06" PRIu64, ev->duration_ns / 1000000u,
                ev->duration_ns % 1000000u);
        if (fo->queue && (ev->flags & DM_EV_HAS_QUEUE))
            rprintf(&r, ",\"queue_ms\":%" PRIu64 ".%06" PRIu64, ev->queue_ns / 1000000u,
                    ev->queue_ns % 1000000u);
        rputs(&r, ",\"disk\":");
        if (ev->disk_name[0] != '\0')
            ref_json(&r, "", ev->disk_name);
        else
            rprintf(&r, "%" PRIu32, ev->disk);
        rprintf(&r, ",\"request\":\"%s\",\"offset\":%" PRIu64 ",\"bytes\":%" PRIu32
                    ",\"sector\":%" PRIu64 ",\"length\":%" PRIu64,
                rq, ev->byte_offset, ev->transfer_size, sector, length);
        if (ev->flags & DM_EV_HAS_PID)
            rprintf(&r, ",\"pid\":%" PRIu32, ev->pid);
        if (ev->flags & DM_EV_HAS_TID)
            rprintf(&r, ",\"tid\":%" PRIu32, ev->tid);
        if (ev->flags & DM_EV_HAS_PROCESS) {
            rputs(&r, ",\"process\":");
            ref_json(&r, "", ev->process);
        }
        if (ev->flags & DM_EV_HAS_FILE) {
            rputs(&r, ",\"file\":");
            ref_json(&r, cut, ev->file);
        }
        if (ev->flags & DM_EV_HAS_IRP_FLAGS)
            rprintf(&r, ",\"irp_flags\":%" PRIu32, ev->irp_flags);
        rputs(&r, ",\"flags\":\"");
        ref_flags(&r, ev->req_flags);
        rputs(&r, "\"");
        if (ev->flags & DM_EV_HAS_PRIORITY)
            rprintf(&r, ",\"priority\":%u", (unsigned)ev->priority);
        if (ev->partition[0] != '\0') {
            rputs(&r, ",\"partition\":");
            ref_json(&r, "", ev->partition);
        }
        if (ev->cgroup[0] != '\0') {
            rputs(&r, ",\"cgroup\":");
            ref_json(&r, "", ev->cgroup);
        }
        rputs(&r, "}\n");
    }
    return r.len;
}

/* xorshift64*: the same events on every run and OS. */
static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(0x2545F4914F6CDD1D);
}

/* A value near a unit boundary of the columns, or anything at all. */
static uint64_t edge_u64(void)
{
    static const uint64_t edges[] = {
        0, 1, 9, 10, 99, 100, 499, 500, 501, 999, 1000, 999499, 999500, 999999,
        1000000, 999999499, 999999500, 999999999, 1000000000, 1000000001,
        UINT64_C(4294967295), UINT64_C(4294967296), UINT64_C(99999999),
        UINT64_C(100000000), UINT64_C(9999999999999999), UINT64_C(10000000000000000),
        UINT64_C(99999999999999999), UINT64_C(9999999999999999999),
        UINT64_C(10000000000000000000), UINT64_MAX - 500, UINT64_MAX - 499, UINT64_MAX,
    };
    uint64_t pick = rnd() % 4;

    if (pick == 0)
        return edges[rnd() % (sizeof edges / sizeof edges[0])];
    if (pick == 1)
        return rnd() % 10000000000u; /* plausible times and durations */
    if (pick == 2)
        return rnd() >> (rnd() % 64);
    return rnd();
}

static uint32_t edge_u32(void)
{
    static const uint32_t edges[] = {0, 1, 511, 512, 513, 9999, 10000, 99999999,
                                     100000000, UINT32_MAX - 511, UINT32_MAX};

    if (rnd() % 2)
        return edges[rnd() % (sizeof edges / sizeof edges[0])];
    return (uint32_t)(rnd() >> (rnd() % 33));
}

/* A name of up to max bytes (no NUL inside) from pieces that matter to one
 * format or another: CSV's specials, JSON's escapes, valid and invalid
 * UTF-8, path separators, and long plain runs. */
static void random_name(char *out, size_t max)
{
    static const char *const pieces[] = {
        "a", "Bench", "\\", "\\Device\\HarddiskVolume2", ",", "\"", "\r", "\n", "\t",
        "\x01", "\x1f", " ", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        "\x80", "\xc0\xaf", "\xff", "\xed\xa0\x80", "\xc3", "\xe2\x82", "0123456789abcdef",
        "f0000221.dat", "/", "\xf5\x80\x80\x80", "\xc2\x85", "\xc2\x9b", "\xc2\xa0",
        "\x1b[31m", "\xe0\x80\xaf", "\xf4\x90\x80\x80", "\x9b",
    };
    size_t want = (size_t)(rnd() % 4 == 0 ? max : rnd() % (max + 1)), len = 0;

    while (len < want) {
        const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
        size_t n = strlen(p);

        if (len + n > want)
            n = want - len;
        memcpy(out + len, p, n);
        len += n;
    }
    out[len] = '\0';
}

/* The names of the events below live in the test's own storage, and only
 * this function hands them to an event (the event's fixed arrays take a
 * copy; were the names pointers, it would point them there). */
static void name_event(struct dm_event *ev, const char *disk, const char *process,
                       const char *file)
{
    /* Borrowed, as a source's are (diskmon.h): the callers' storage. */
    ev->disk_name = disk;
    ev->process = process;
    ev->file = file;
}

/* Random names, each up to the longest an event carries. */
static void set_names(struct dm_event *ev, int with_disk_name)
{
    static char disk[DM_DISK_NAME_MAX], process[DM_PROCESS_MAX], file[DM_FILE_MAX];
    static char partition[DM_PARTITION_MAX], cgroup[DM_CGROUP_MAX];

    disk[0] = '\0';
    if (with_disk_name)
        random_name(disk, sizeof disk - 1);
    random_name(process, sizeof process - 1);
    random_name(file, sizeof file - 1);
    random_name(partition, sizeof partition - 1);
    random_name(cgroup, sizeof cgroup - 1);
    name_event(ev, disk, process, file);
    ev->partition = partition;
    ev->cgroup = cgroup;
}

static struct dm_event random_event(uint64_t *time_ns)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    /* Mostly rising times (as a capture has them) so the clock cache hits
     * and misses; now and then any time at all. */
    *time_ns += rnd() % 3 == 0 ? rnd() % 2000000000u : rnd() % 1000;
    ev.time_ns = rnd() % 16 == 0 ? edge_u64() : *time_ns;
    ev.duration_ns = edge_u64();
    ev.queue_ns = edge_u64();
    ev.byte_offset = edge_u64();
    ev.irp = rnd();
    ev.transfer_size = edge_u32();
    ev.disk = edge_u32();
    ev.irp_flags = edge_u32();
    ev.pid = edge_u32();
    ev.tid = edge_u32();
    ev.flags = (uint16_t)(rnd() & 0xff);
    ev.req_flags = (uint16_t)(rnd() & 0xfff);
    ev.priority = (uint8_t)(rnd() % 8);
    ev.request = (uint8_t)(rnd() % 6);
    set_names(&ev, rnd() % 2 == 0);
    return ev;
}

/* Every option combination a format has, a few thousand events each:
 * dm_format_event, and dm_format_event_fit with a buffer of exactly its
 * bound, guarded, so a store past the bound shows. */
DM_TEST(fast_writers_match_reference)
{
    static char want[16384], got[16384];
    struct dm_clock_cache cache;
    int combos = 0;

    for (int format = DM_FMT_TEXT; format <= DM_FMT_JSON; format++) {
        for (int opts = 0; opts < 32; opts++) {
            struct dm_format_opts fo;
            uint64_t t = 0;

            memset(&fo, 0, sizeof fo);
            memset(&cache, 0, sizeof cache);
            fo.format = (enum dm_format)format;
            fo.clock = opts & 1;
            fo.utc = (opts >> 1) & 1;
            fo.queue = (opts >> 2) & 1;
            fo.show_file = (opts >> 3) & 1;
            fo.clock_cache = (opts >> 4) & 1 ? &cache : NULL;
            if (!fo.utc && rnd() % 2) {
                fo.tz.valid = 1; /* Pacific time, as test clock_zone_and_utc */
                fo.tz.bias = 480;
                fo.tz.daylight_bias = -60;
                fo.tz.daylight_date = rule(3, 0, 2, 2);
                fo.tz.standard_date = rule(11, 0, 1, 2);
            }
            fo.start_wall_ns = (uint64_t)utc(2020, 3, 8, 9, 59, 50) * 1000000000u;
            combos++;
            for (int i = 0; i < 2000; i++) {
                struct dm_event ev = random_event(&t);
                uint64_t seq = i % 7 == 0 ? edge_u64() : (uint64_t)i + 1;
                size_t wn = ref_line(want, sizeof want, &fo, seq, &ev), need = 0, n;
                char *guarded;

                n = dm_format_event(got, sizeof got, &fo, seq, &ev);
                if (n != wn || memcmp(got, want, wn + 1) != 0) {
                    dmt_fail_at(__FILE__, __LINE__,
                                "format %d opts %d event %d:\n want %s\n got  %s", format,
                                opts, i, want, got);
                    return;
                }
                DM_ASSERT_EQ_U64(dm_format_event_fit(got, 10, &fo, seq, &ev, &need), 0);
                DM_ASSERT(need > wn && need < sizeof got);
                guarded = malloc(need + 64);
                DM_ASSERT(guarded != NULL);
                memset(guarded, 0x5a, need + 64);
                n = dm_format_event_fit(guarded, need, &fo, seq, &ev, &need);
                DM_ASSERT_EQ_U64(n, wn);
                DM_ASSERT(memcmp(guarded, want, wn + 1) == 0);
                for (size_t g = need; g < need + 64; g++)
                    DM_ASSERT_EQ_INT(guarded[g], 0x5a);
                free(guarded);
            }
        }
    }
    DM_ASSERT_EQ_INT(combos, 96);
}

/* A line cut by a small buffer is the reference's beginning, NUL-ended. */
DM_TEST(cut_lines_are_prefixes)
{
    static char want[16384];
    char got[300];
    uint64_t t = 0;

    for (int i = 0; i < 3000; i++) {
        struct dm_format_opts fo = fmt((enum dm_format)(i % 3), 1);
        struct dm_event ev = random_event(&t);
        size_t cap = 1 + (size_t)(rnd() % sizeof got);
        size_t wn = ref_line(want, sizeof want, &fo, 1, &ev);
        size_t n = dm_format_event(got, cap, &fo, 1, &ev);

        DM_ASSERT_EQ_U64(n, wn < cap - 1 ? wn : cap - 1);
        DM_ASSERT(memcmp(got, want, n) == 0 && got[n] == '\0');
    }
}

/* --top's fields: the same escapes as the lines, cut when they do not fit. */
DM_TEST(string_fields_match_reference)
{
    static char want[4096], got[4096];

    for (int i = 0; i < 3000; i++) {
        char name[DM_FILE_MAX];
        struct ref r = {want, sizeof want, 0};
        size_t cap = i % 2 ? sizeof got : 1 + (size_t)(rnd() % 64), n;

        random_name(name, sizeof name - 1);
        want[0] = '\0';
        if (i % 4 < 2)
            ref_json(&r, "", name);
        else
            ref_csv(&r, name);
        n = i % 4 < 2 ? dm_escape_json_string(got, cap, name)
                      : dm_escape_csv_string(got, cap, name);
        DM_ASSERT_EQ_U64(n, r.len < cap - 1 ? r.len : cap - 1);
        DM_ASSERT(memcmp(got, want, n) == 0 && got[n] == '\0');
    }
}

/* Names for a terminal (dm_escape_term_string) against ref_term, whole and
 * cut by a small buffer: a cut keeps the beginning, ends after a whole
 * character, and leaves no raw control byte. */
DM_TEST(term_names_match_reference)
{
    static char want[4 * DM_FILE_MAX + 8], got[4 * DM_FILE_MAX + 8];

    for (int i = 0; i < 3000; i++) {
        char name[DM_FILE_MAX];
        size_t cap = i % 2 ? sizeof got : 1 + (size_t)(rnd() % 64), n;

        random_name(name, sizeof name - 1);
        ref_term(want, sizeof want, name);
        n = dm_escape_term_string(got, cap, name);
        DM_ASSERT(n <= strlen(want) && n < cap && got[n] == '\0');
        DM_ASSERT(memcmp(got, want, n) == 0);
        if (strlen(want) < cap)
            DM_ASSERT_EQ_U64(n, strlen(want));
        else
            DM_ASSERT(((unsigned char)want[n] & 0xC0) != 0x80);
        for (size_t k = 0; k < n; k++)
            DM_ASSERT((unsigned char)got[k] >= 0x20 && (unsigned char)got[k] != 0x7F);
    }
    DM_ASSERT_EQ_U64(dm_escape_term_string(got, sizeof got, "a\x1b[2J\nb\xc2\x85\xc2\xa0\x9b\\"),
                     strlen("a\\x1b[2J\\x0ab\\x85\xc2\xa0\\x9b\\"));
    DM_ASSERT_STR_EQ(got, "a\\x1b[2J\\x0ab\\x85\xc2\xa0\\x9b\\");
}

/* The widest line: every number at UINT64_MAX/UINT32_MAX, every flag, every
 * name at its longest and all escapes (control bytes: 6 bytes each in
 * json), the clock's widest fields. */
DM_TEST(widest_line)
{
    static char want[16384], got[16384];

    static char disk[DM_DISK_NAME_MAX], process[DM_PROCESS_MAX], file[DM_FILE_MAX];
    static char partition[DM_PARTITION_MAX], cgroup[DM_CGROUP_MAX];

    memset(disk, '\x01', sizeof disk - 1);
    memset(process, '\x01', sizeof process - 1);
    memset(file, '\x01', sizeof file - 1);
    memset(partition, '\x01', sizeof partition - 1);
    memset(cgroup, '\x01', sizeof cgroup - 1);
    for (int format = DM_FMT_TEXT; format <= DM_FMT_JSON; format++) {
        struct dm_format_opts fo = fmt((enum dm_format)format, 1);
        struct dm_event ev;
        size_t need = 0, wn, n;

        memset(&ev, 0, sizeof ev);
        ev.partition = ev.cgroup = "";
        ev.time_ns = ev.duration_ns = ev.queue_ns = ev.byte_offset = UINT64_MAX;
        ev.transfer_size = ev.disk = ev.irp_flags = ev.pid = ev.tid = UINT32_MAX;
        ev.flags = 0xff;
        ev.req_flags = 0xfff;
        ev.priority = 7;
        ev.request = DM_REQ_DISCARD;
        name_event(&ev, disk, process, file);
        ev.partition = partition;
        ev.cgroup = cgroup;
        fo.queue = 1;
        fo.utc = 1;
        fo.clock = 1;
        fo.start_wall_ns = UINT64_MAX;
        wn = ref_line(want, sizeof want, &fo, UINT64_MAX, &ev);
        n = dm_format_event_fit(got, sizeof got, &fo, UINT64_MAX, &ev, &need);
        DM_ASSERT_EQ_U64(n, wn);
        DM_ASSERT(memcmp(got, want, wn + 1) == 0);
    }
}

/* format.c keeps its own padded copy of the request words: the same as
 * dm_request_names (the summary's), in every format. */
DM_TEST(request_words_are_dm_request_names)
{
    for (int r = 0; r < DM_REQ_COUNT; r++) {
        struct dm_format_opts fo = fmt(DM_FMT_CSV, 0);
        struct dm_event ev = sample_read();
        char buf[DM_LINE_MAX], want[64];

        ev.request = (uint8_t)r;
        dm_format_event(buf, sizeof buf, &fo, 1, &ev);
        snprintf(want, sizeof want, ",0,%s,", dm_request_names[r]);
        DM_ASSERT(strstr(buf, want) != NULL);
        fo.format = DM_FMT_JSON;
        dm_format_event(buf, sizeof buf, &fo, 1, &ev);
        snprintf(want, sizeof want, "\"request\":\"%s\"", dm_request_names[r]);
        DM_ASSERT(strstr(buf, want) != NULL);
        fo.format = DM_FMT_TEXT;
        dm_format_event(buf, sizeof buf, &fo, 1, &ev);
        snprintf(want, sizeof want, " 0        %-7s ", dm_request_names[r]);
        DM_ASSERT(strstr(buf, want) != NULL);
    }
}

const struct dmt_case dm_suite_format[] = {
    {"request_words_are_dm_request_names", request_words_are_dm_request_names},
    {"text_header_and_row", text_header_and_row},
    {"text_unknowns_and_rounding", text_unknowns_and_rounding},
    {"text_queue_column", text_queue_column},
    {"csv_rfc4180", csv_rfc4180},
    {"json_keys_and_escapes", json_keys_and_escapes},
    {"json_unknowns_omitted_and_bad_utf8", json_unknowns_omitted_and_bad_utf8},
    {"long_file_never_overflows", long_file_never_overflows},
    {"civil_dates", civil_dates},
    {"tz_pacific_transitions", tz_pacific_transitions},
    {"tz_last_weekday_rule", tz_last_weekday_rule},
    {"tz_southern_and_none", tz_southern_and_none},
    {"clock_zone_and_utc", clock_zone_and_utc},
    {"fast_writers_match_reference", fast_writers_match_reference},
    {"cut_lines_are_prefixes", cut_lines_are_prefixes},
    {"string_fields_match_reference", string_fields_match_reference},
    {"term_names_match_reference", term_names_match_reference},
    {"widest_line", widest_line},
    {NULL, NULL},
};
