/*
 * test_format.c - byte-exact lines of the text, CSV and JSON formats. The
 * expected strings are written from the column specification in README.md
 * (widths, units, rounding), not captured from the program.
 */
#include "core/format.h"
#include "core/tz.h"
#include "dmtest.h"

/* A Read like the first one of the Windows 8 sample: 16 KiB at byte
 * 849,788,928 (sector 1,659,744), 25.821 ms, by System (pid 4). */
static struct dm_event sample_read(void)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
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
               DM_EV_HAS_IRP_FLAGS;
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
                          "    32       4 System           C:\\Users\\a \"b\",c.dat\n");
}

DM_TEST(text_unknowns_and_rounding)
{
    struct dm_format_opts fo = fmt(DM_FMT_TEXT, 0);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    ev.flags = 0;                     /* no pid, no process */
    ev.request = DM_REQ_FLUSH;
    ev.byte_offset = 0;
    ev.transfer_size = 513;           /* 513 bytes round up to 2 sectors */
    ev.time_ns = 999999500;           /* rounds up to 1.000000 */
    ev.duration_ns = 499;             /* rounds down to 0.000000 */
    ev.disk_name = "nvme0n1";
    dm_format_event(buf, sizeof buf, &fo, 12345678, &ev);
    DM_ASSERT_STR_EQ(buf, "12345678     1.000000   0.000000 nvme0n1  Flush              0 "
                          "     2       - -\n");
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
                          "     1659744     32       4 System\n");
}

DM_TEST(csv_rfc4180)
{
    struct dm_format_opts fo = fmt(DM_FMT_CSV, 1);
    struct dm_event ev = sample_read();
    char buf[DM_LINE_MAX];

    dm_format_header(buf, sizeof buf, &fo);
    DM_ASSERT_STR_EQ(buf, "seq,time,duration,disk,request,sector,length,pid,tid,process,"
                          "file,offset,bytes\r\n");
    dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    /* The file name holds a quote and a comma: quoted, quote doubled. */
    DM_ASSERT_STR_EQ(buf, "1,1.275943100,0.025821000,0,Read,1659744,32,4,44,System,"
                          "\"C:\\Users\\a \"\"b\"\",c.dat\",849788928,16384\r\n");
    ev.flags = 0;
    dm_format_event(buf, sizeof buf, &fo, 2, &ev);
    DM_ASSERT_STR_EQ(buf, "2,1.275943100,0.025821000,0,Read,1659744,32,,,,,849788928,16384\r\n");
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
                          "\"irp_flags\":131074}\n");
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
                          "\"process\":\"a\\u0009b\xc3\xa9\\ufffd\"}\n");
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

/* --- civil time and time-zone rules (core/tz.h) ------------------------------
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

const struct dmt_case dm_suite_format[] = {
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
    {NULL, NULL},
};
