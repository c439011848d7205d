/*
 * test_format.c - byte-exact lines of the text, CSV and JSON formats. The
 * expected strings are written from the column specification in README.md
 * (widths, units, rounding), not captured from the program.
 */
#include "core/format.h"
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
    strcpy(ev.process, "System");
    strcpy(ev.file, "C:\\Users\\a \"b\",c.dat");
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
    strcpy(ev.disk_name, "nvme0n1");
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
    strcpy(ev.disk_name, "sda");
    /* A tab, a valid e-acute (C3 A9) and a lone continuation byte. */
    strcpy(ev.process, "a\tb\xc3\xa9\x80");
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
    char buf[64];
    size_t n;

    memset(ev.file, '"', sizeof ev.file - 1);
    ev.file[sizeof ev.file - 1] = '\0';
    n = dm_format_event(buf, sizeof buf, &fo, 1, &ev);
    DM_ASSERT(n < sizeof buf);
    DM_ASSERT_EQ_U64(strlen(buf), n);
}

const struct dmt_case dm_suite_format[] = {
    {"text_header_and_row", text_header_and_row},
    {"text_unknowns_and_rounding", text_unknowns_and_rounding},
    {"text_queue_column", text_queue_column},
    {"csv_rfc4180", csv_rfc4180},
    {"json_keys_and_escapes", json_keys_and_escapes},
    {"json_unknowns_omitted_and_bad_utf8", json_unknowns_omitted_and_bad_utf8},
    {"long_file_never_overflows", long_file_never_overflows},
    {NULL, NULL},
};
