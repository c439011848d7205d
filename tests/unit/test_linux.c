/*
 * test_linux.c - the Linux live source's pure parts: the tracepoint format
 * parser, the perf record decoder (good, short, odd and wrapped records),
 * rwbs classification and the start/completion pairing table. No root is
 * needed, except by the one case that reads the running kernel's formats.
 *
 * Expected offsets and sizes come from docs/linux.md §2 (the 6.18
 * formats); expected rwbs meanings from blk_fill_rwbs as described there.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskmon.h"
#include "dmtest.h"
#include "linux/block_decode.h"
#include "linux/perf_ring.h"
#include "linux/pairing.h"
#include "linux/saved_tgids.h"
#include "linux/tracefs.h"
#include "platform/platform.h"

/* The block_io_start format file of Linux 6.18 (docs/linux.md §2). */
static const char fmt_io_start[] =
    "name: block_io_start\n"
    "ID: 2102\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n"
    "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n"
    "\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n"
    "\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"%d,%d %s %u (%s) %llu + %u %s,%u,%u [%s]\", "
    "((unsigned int) ((REC->dev) >> 20)), REC->comm\n";

/* block_rq_complete on 6.18: no bytes, no comm, error at 28, cmd at 44. */
static const char fmt_rq_complete[] =
    "name: block_rq_complete\n"
    "ID: 2107\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
    "\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n"
    "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n"
    "\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;\n"
    "\n"
    "print fmt: \"%d,%d %s (%s) %llu + %u %s,%u,%u [%d]\", REC->error\n";

#define ID_IO_START 2102
#define ID_RQ_COMPLETE 2107

/* ---- format parser ---------------------------------------------------------- */

DM_TEST(format_io_start_618)
{
    struct dm_tp_format fmt;
    const struct dm_tp_field *f;
    char err[256];

    DM_ASSERT_EQ_INT(dm_tp_format_parse(fmt_io_start, sizeof fmt_io_start - 1, &fmt,
                                        err, sizeof err), 0);
    DM_ASSERT_STR_EQ(fmt.name, "block_io_start");
    DM_ASSERT_EQ_INT(fmt.id, 2102);
    DM_ASSERT_EQ_INT(fmt.n_fields, 12);
    f = dm_tp_format_field(&fmt, "common_pid");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 4);
    DM_ASSERT_EQ_INT(f->is_signed, 1);
    f = dm_tp_format_field(&fmt, "dev");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 8);
    DM_ASSERT_EQ_INT(f->size, 4);
    f = dm_tp_format_field(&fmt, "sector");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 16);
    DM_ASSERT_EQ_INT(f->size, 8);
    f = dm_tp_format_field(&fmt, "nr_sector");
    DM_ASSERT(f != NULL && f->offset == 24);
    f = dm_tp_format_field(&fmt, "bytes");
    DM_ASSERT(f != NULL && f->offset == 28);
    f = dm_tp_format_field(&fmt, "ioprio");
    DM_ASSERT(f != NULL && f->offset == 32 && f->size == 2);
    f = dm_tp_format_field(&fmt, "rwbs");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 34);
    DM_ASSERT_EQ_INT(f->size, 10);
    DM_ASSERT_EQ_INT(f->is_array, 1);
    f = dm_tp_format_field(&fmt, "comm");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 44);
    DM_ASSERT_EQ_INT(f->size, 16);
    f = dm_tp_format_field(&fmt, "cmd");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(f->offset, 60);
    DM_ASSERT_EQ_INT(f->is_data_loc, 1);
    DM_ASSERT_EQ_INT(f->is_array, 0);
    DM_ASSERT(dm_tp_format_field(&fmt, "error") == NULL);
}

DM_TEST(format_rq_complete_618)
{
    struct dm_tp_format fmt;
    const struct dm_tp_field *f;
    char err[256];

    DM_ASSERT_EQ_INT(dm_tp_format_parse(fmt_rq_complete, sizeof fmt_rq_complete - 1,
                                        &fmt, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(fmt.id, 2107);
    f = dm_tp_format_field(&fmt, "error");
    DM_ASSERT(f != NULL && f->offset == 28 && f->is_signed == 1);
    f = dm_tp_format_field(&fmt, "cmd");
    DM_ASSERT(f != NULL && f->offset == 44);
    DM_ASSERT(dm_tp_format_field(&fmt, "bytes") == NULL);
    DM_ASSERT(dm_tp_format_field(&fmt, "comm") == NULL);
}

/* Text that is not NUL-terminated is parsed only up to len. */
DM_TEST(format_respects_length)
{
    struct dm_tp_format fmt;
    char err[256];
    const char *text = "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
                       "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n";
    size_t first_line = strlen("\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n");

    DM_ASSERT_EQ_INT(dm_tp_format_parse(text, first_line, &fmt, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(fmt.n_fields, 1);
    DM_ASSERT(dm_tp_format_field(&fmt, "sector") == NULL);
}

DM_TEST(format_malformed)
{
    static const char *const bad[] = {
        "\tfield:dev_t dev;\tsize:4;\tsigned:0;\n",              /* no offset */
        "\tfield:dev_t dev;\toffset:8;\tsigned:0;\n",            /* no size */
        "\tfield:dev_t dev;\toffset:x8;\tsize:4;\tsigned:0;\n",  /* not a number */
        "\tfield:dev_t dev;\toffset:8;\tsize:;\tsigned:0;\n",    /* empty number */
        "\tfield:dev_t dev\toffset:8\tsize:4\tsigned:0\n",       /* no semicolons */
        "\tfield:dev_t dev;\toffset:4294967295;\tsize:4;\tsigned:0;\n", /* overflow */
        "\tfield:dev_t dev;\toffset:99999999999;\tsize:4;\tsigned:0;\n",
        "\tfield:dev_t dev;\toffset:8;\tsize:0;\tsigned:0;\n",   /* empty field */
        "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:2;\n",   /* signed is 0/1 */
        "\tfield:;\toffset:8;\tsize:4;\tsigned:0;\n",            /* no name */
        "\tfield:char x[10;\toffset:8;\tsize:4;\tsigned:0;\n",   /* no name */
        "\tfield:int "
        "a_name_that_is_much_too_long_for_the_field_name_buffer_of_64_bytes;"
        "\toffset:8;\tsize:4;\tsigned:0;\n",
        "name: block_io_start\nID: 12\nformat:\n",              /* no fields */
        "ID: twelve\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n",
        "",
    };
    struct dm_tp_format fmt;
    char err[256];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (dm_tp_format_parse(bad[i], strlen(bad[i]), &fmt, err, sizeof err) !=
            DM_ECORRUPT) {
            dmt_fail_at(__FILE__, __LINE__, "case %zu was accepted: %s", i, bad[i]);
            return;
        }
        DM_ASSERT(err[0] != '\0');
    }
    /* The message names the line. */
    {
        const char *t = "name: x\n\n\tfield:int a;\toffset:1;\n";

        DM_ASSERT_EQ_INT(dm_tp_format_parse(t, strlen(t), &fmt, err, sizeof err),
                         DM_ECORRUPT);
    }
    DM_ASSERT(strstr(err, "line 3") != NULL);
}

DM_TEST(format_too_many_fields)
{
    char *text = malloc(64 * 64);
    struct dm_tp_format fmt;
    char err[256];
    size_t len = 0;

    DM_ASSERT(text != NULL);
    for (int i = 0; i < DM_TP_MAX_FIELDS + 1; i++)
        len += (size_t)snprintf(text + len, 64 * 64 - len,
                                "\tfield:int f%d;\toffset:%d;\tsize:4;\tsigned:1;\n",
                                i, i * 4);
    DM_ASSERT_EQ_INT(dm_tp_format_parse(text, len, &fmt, err, sizeof err), DM_ECORRUPT);
    free(text);
}

/* ---- decoder ----------------------------------------------------------------- */

static int make_decoder(struct dm_blk_decoder *d)
{
    struct dm_tp_format fmt;
    char err[256];

    memset(d, 0, sizeof *d);
    if (dm_tp_format_parse(fmt_io_start, sizeof fmt_io_start - 1, &fmt, err, sizeof err) ||
        dm_blk_decoder_add(d, DM_BLK_IO_START, ID_IO_START, &fmt, err, sizeof err))
        return 0;
    if (dm_tp_format_parse(fmt_rq_complete, sizeof fmt_rq_complete - 1, &fmt, err,
                           sizeof err) ||
        dm_blk_decoder_add(d, DM_BLK_RQ_COMPLETE, ID_RQ_COMPLETE, &fmt, err, sizeof err))
        return 0;
    return 1;
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/*
 * A PERF_RECORD_SAMPLE for TID|TIME|CPU|RAW as perf_event_open(2) lays it
 * out (header 8, pid/tid 8, time 8, cpu 8, raw size 4, raw), with a
 * block_io_start raw part laid out as docs/linux.md §2 gives it. Returns
 * the record size (raw padded so the record is a multiple of 8).
 */
static size_t make_io_start(uint8_t *rec, uint32_t raw_size)
{
    uint8_t *raw = rec + 36;
    size_t size = (36 + raw_size + 7) & ~(size_t)7;

    memset(rec, 0, size);
    put32(rec, PERF_RECORD_SAMPLE);
    put16(rec + 6, (uint16_t)size);
    put32(rec + 8, 4242);                 /* pid */
    put32(rec + 12, 4243);                /* tid */
    put64(rec + 16, 123456789012ull);     /* time */
    put32(rec + 24, 1);                   /* cpu */
    put32(rec + 32, raw_size);
    put16(raw + 0, ID_IO_START);          /* common_type */
    put32(raw + 4, 4243);                 /* common_pid */
    put32(raw + 8, (7u << 20) | 3);       /* dev 7:3 */
    put64(raw + 16, 2048);                /* sector */
    put32(raw + 24, 16);                  /* nr_sector */
    put32(raw + 28, 8192);                /* bytes */
    memcpy(raw + 34, "WS", 3);            /* rwbs */
    memcpy(raw + 44, "dm_dio", 7);        /* comm */
    return size;
}

DM_TEST(decode_io_start)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t rec[256];
    uint64_t lost = 0;
    size_t n;

    DM_ASSERT(make_decoder(&d));
    n = make_io_start(rec, 68);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_PERF_REC_SAMPLE);
    DM_ASSERT_EQ_INT(s.kind, DM_BLK_IO_START);
    DM_ASSERT_EQ_INT(s.pid, 4242);
    DM_ASSERT_EQ_INT(s.tid, 4243);
    DM_ASSERT_EQ_U64(s.time_ns, 123456789012ull);
    DM_ASSERT_EQ_INT(s.cpu, 1);
    DM_ASSERT_EQ_INT(s.dev, (7u << 20) | 3);
    DM_ASSERT_EQ_U64(s.sector, 2048);
    DM_ASSERT_EQ_INT(s.nr_sector, 16);
    DM_ASSERT_EQ_INT(s.has_bytes, 1);
    DM_ASSERT_EQ_INT(s.bytes, 8192);
    DM_ASSERT_STR_EQ(s.rwbs, "WS");
    DM_ASSERT_EQ_INT(s.request, DM_REQ_WRITE);
    DM_ASSERT_EQ_INT(s.has_comm, 1);
    DM_ASSERT_STR_EQ(s.comm, "dm_dio");
    DM_ASSERT_EQ_U64(lost, 0);
}

DM_TEST(decode_rq_complete)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t rec[128];
    uint64_t lost = 0;
    uint8_t *raw = rec + 36;

    DM_ASSERT(make_decoder(&d));
    memset(rec, 0, sizeof rec);
    put32(rec, PERF_RECORD_SAMPLE);
    put16(rec + 6, 88);
    put32(rec + 32, 52);                  /* 44 + 4 cmd + 4 data */
    put16(raw, ID_RQ_COMPLETE);
    put32(raw + 8, (8u << 20) | 0);
    put64(raw + 16, 999);
    put32(raw + 24, 8);
    put32(raw + 28, (uint32_t)-5);        /* error -EIO */
    memcpy(raw + 34, "R", 2);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 88, &s, &lost), DM_PERF_REC_SAMPLE);
    DM_ASSERT_EQ_INT(s.kind, DM_BLK_RQ_COMPLETE);
    DM_ASSERT_EQ_INT(s.dev, 8u << 20);
    DM_ASSERT_EQ_U64(s.sector, 999);
    DM_ASSERT_EQ_INT(s.has_bytes, 0);
    DM_ASSERT_EQ_INT(s.has_comm, 0);
    DM_ASSERT_STR_EQ(s.comm, "");
    DM_ASSERT_EQ_INT(s.request, DM_REQ_READ);
}

DM_TEST(decode_short_samples)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t rec[256];
    uint64_t lost = 0;
    size_t n;

    DM_ASSERT(make_decoder(&d));
    /* Raw part shorter than the last field the layout needs (comm ends at
     * 60). */
    n = make_io_start(rec, 59);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_ECORRUPT);
    /* Exactly long enough is fine. */
    n = make_io_start(rec, 60);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_PERF_REC_SAMPLE);
    /* raw_size says more than the record holds. */
    n = make_io_start(rec, 68);
    put32(rec + 32, 200);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_ECORRUPT);
    /* Record too short for the fixed sample fields. */
    put16(rec + 6, 32);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 32, &s, &lost), DM_ECORRUPT);
    /* Header size disagrees with the length given. */
    n = make_io_start(rec, 68);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n - 8, &s, &lost), DM_ECORRUPT);
    /* Shorter than a header. */
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 4, &s, &lost), DM_ECORRUPT);
    /* raw_size too small to hold common_type. */
    n = make_io_start(rec, 68);
    put32(rec + 32, 1);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_ECORRUPT);
}

DM_TEST(decode_odd_samples)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t rec[256];
    uint64_t lost = 0;
    size_t n;

    DM_ASSERT(make_decoder(&d));
    /* An id that is none of the opened tracepoints. */
    n = make_io_start(rec, 68);
    put16(rec + 36, 9999);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_ECORRUPT);
    /* rwbs filling its 10 bytes and comm its 16 with no NUL: both end at
     * the field, nothing of the neighbouring bytes leaks in. */
    n = make_io_start(rec, 68);
    memcpy(rec + 36 + 34, "RAAAAAAAAA", 10);
    memcpy(rec + 36 + 44, "0123456789abcdef", 16);
    memcpy(rec + 36 + 60, "XYZW", 4);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_PERF_REC_SAMPLE);
    DM_ASSERT_STR_EQ(s.rwbs, "RAAAAAAAAA");
    DM_ASSERT_STR_EQ(s.comm, "0123456789abcdef");
    DM_ASSERT_EQ_INT(s.request, DM_REQ_READ);
    /* An empty rwbs is an op diskmon does not show. */
    n = make_io_start(rec, 68);
    memset(rec + 36 + 34, 0, 10);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, n, &s, &lost), DM_PERF_REC_SAMPLE);
    DM_ASSERT_EQ_INT(s.request, DM_BLK_REQ_OTHER);
}

DM_TEST(decode_lost_and_other_records)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t rec[32];
    uint64_t lost = 5;

    DM_ASSERT(make_decoder(&d));
    /* PERF_RECORD_LOST: header, u64 id, u64 lost. */
    memset(rec, 0, sizeof rec);
    put32(rec, PERF_RECORD_LOST);
    put16(rec + 6, 24);
    put64(rec + 8, 77);
    put64(rec + 16, 1000);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 24, &s, &lost), DM_PERF_REC_LOST);
    DM_ASSERT_EQ_U64(lost, 1005);
    put16(rec + 6, 16);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 16, &s, &lost), DM_ECORRUPT);
    /* PERF_RECORD_LOST_SAMPLES: header, u64 lost. */
    memset(rec, 0, sizeof rec);
    put32(rec, PERF_RECORD_LOST_SAMPLES);
    put16(rec + 6, 16);
    put64(rec + 8, 3);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 16, &s, &lost), DM_PERF_REC_LOST);
    DM_ASSERT_EQ_U64(lost, 1008);
    put16(rec + 6, 8);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 8, &s, &lost), DM_ECORRUPT);
    /* Anything else (here PERF_RECORD_THROTTLE) is skipped. */
    memset(rec, 0, sizeof rec);
    put32(rec, PERF_RECORD_THROTTLE);
    put16(rec + 6, 24);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, rec, 24, &s, &lost), DM_PERF_REC_SKIP);
    DM_ASSERT_EQ_U64(lost, 1008);
}

/* A decoder refuses formats whose fields are missing or of another type. */
DM_TEST(decoder_rejects_odd_formats)
{
    struct dm_blk_decoder d;
    struct dm_tp_format fmt;
    char err[256];
    const char *no_dev = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                         "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
                         "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
                         "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n";
    const char *wide_dev = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                           "\tfield:u64 dev;\toffset:8;\tsize:8;\tsigned:0;\n"
                           "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
                           "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
                           "\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n";
    const char *rwbs_scalar = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                              "\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n"
                              "\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n"
                              "\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n"
                              "\tfield:int rwbs;\toffset:28;\tsize:4;\tsigned:0;\n";

    memset(&d, 0, sizeof d);
    DM_ASSERT_EQ_INT(dm_tp_format_parse(no_dev, strlen(no_dev), &fmt, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(dm_blk_decoder_add(&d, DM_BLK_IO_START, 1, &fmt, err, sizeof err),
                     DM_EUNSUPPORTED);
    DM_ASSERT(strstr(err, "dev") != NULL);
    DM_ASSERT_EQ_INT(dm_tp_format_parse(wide_dev, strlen(wide_dev), &fmt, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(dm_blk_decoder_add(&d, DM_BLK_IO_START, 1, &fmt, err, sizeof err),
                     DM_EUNSUPPORTED);
    DM_ASSERT_EQ_INT(dm_tp_format_parse(rwbs_scalar, strlen(rwbs_scalar), &fmt, err,
                                        sizeof err), 0);
    DM_ASSERT_EQ_INT(dm_blk_decoder_add(&d, DM_BLK_IO_START, 1, &fmt, err, sizeof err),
                     DM_EUNSUPPORTED);
}

DM_TEST(classify_rwbs)
{
    static const struct {
        const char *rwbs;
        uint32_t nr_sector;
        char op;
        int preflush;
        int request;
    } cases[] = {
        {"R", 8, 'R', 0, DM_REQ_READ},
        {"RA", 8, 'R', 0, DM_REQ_READ},       /* readahead */
        {"RM", 8, 'R', 0, DM_REQ_READ},       /* meta */
        {"W", 8, 'W', 0, DM_REQ_WRITE},
        {"WS", 16, 'W', 0, DM_REQ_WRITE},
        {"WFS", 8, 'W', 0, DM_REQ_WRITE},     /* FUA write */
        {"FWS", 0, 'W', 1, DM_REQ_FLUSH},     /* empty preflush: a flush */
        {"FWS", 8, 'W', 1, DM_REQ_WRITE},     /* preflush + data */
        {"FWFS", 8, 'W', 1, DM_REQ_WRITE},    /* preflush + FUA */
        {"F", 0, 'F', 0, DM_REQ_FLUSH},       /* flush op */
        {"FF", 0, 'F', 1, DM_REQ_FLUSH},
        {"FS", 0, 'F', 0, DM_REQ_FLUSH},      /* flush op, sync flag */
        {"D", 128, 'D', 0, DM_REQ_DISCARD},
        {"DS", 128, 'D', 0, DM_REQ_DISCARD},
        {"DE", 128, 'D', 0, DM_REQ_DISCARD},  /* secure erase */
        {"N", 0, 'N', 0, DM_BLK_REQ_OTHER},
        {"", 0, '?', 0, DM_BLK_REQ_OTHER},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char op;
        uint8_t preflush, request;

        dm_blk_classify(cases[i].rwbs, cases[i].nr_sector, &op, &preflush, &request);
        if (op != cases[i].op || preflush != cases[i].preflush ||
            request != cases[i].request) {
            dmt_fail_at(__FILE__, __LINE__, "rwbs \"%s\" nr %u: op %c preflush %d "
                        "request %d", cases[i].rwbs, (unsigned)cases[i].nr_sector,
                        op, preflush, request);
            return;
        }
    }
}

/* The flag letters as blk_fill_rwbs (kernel/trace/blktrace.c) writes them,
 * and the rwbs classes docs/linux.md §7 saw under an fsync load. */
DM_TEST(rwbs_flags)
{
    static const struct {
        const char *rwbs;
        unsigned flags;
    } cases[] = {
        {"R", 0},
        {"RA", DM_RQ_READAHEAD},
        {"RAM", DM_RQ_READAHEAD | DM_RQ_META},
        {"RM", DM_RQ_META},
        {"WS", DM_RQ_SYNC},
        {"WSM", DM_RQ_SYNC | DM_RQ_META},
        {"WFS", DM_RQ_FUA | DM_RQ_SYNC},
        {"FWS", DM_RQ_PREFLUSH | DM_RQ_SYNC},
        {"FWFSM", DM_RQ_PREFLUSH | DM_RQ_FUA | DM_RQ_SYNC | DM_RQ_META},
        {"FF", DM_RQ_PREFLUSH},           /* the flush machinery's flush */
        {"F", 0},                         /* a flush op, no preflush bit */
        {"FS", DM_RQ_SYNC},
        {"DE", DM_RQ_SECURE},
        {"DES", DM_RQ_SECURE | DM_RQ_SYNC},
        {"D", 0},
        {"N", 0},
        {"", 0},
        {"F", 0},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned got = dm_blk_rwbs_flags(cases[i].rwbs);

        if (got != cases[i].flags) {
            dmt_fail_at(__FILE__, __LINE__, "rwbs \"%s\": flags 0x%x, want 0x%x",
                        cases[i].rwbs, got, cases[i].flags);
            return;
        }
    }
}

/* ---- the perf ring ---------------------------------------------------------- */

DM_TEST(ring_contiguous_and_wrapped)
{
    struct dm_blk_decoder d;
    struct dm_blk_sample s;
    uint8_t data[256], rec[128], *scratch = malloc(DM_PERF_RECORD_MAX);
    const uint8_t *got;
    size_t n, len;
    uint64_t lost = 0;

    DM_ASSERT(scratch != NULL);
    DM_ASSERT(make_decoder(&d));
    n = make_io_start(rec, 68); /* 104 bytes */
    DM_ASSERT_EQ_U64(n, 104);

    /* Contiguous at position 16 (tail 16 + 256 * 3: positions only grow). */
    memset(data, 0xEE, sizeof data);
    memcpy(data + 16, rec, n);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 784, 784 + n, scratch, &got, &len), 1);
    DM_ASSERT(got == data + 16);
    DM_ASSERT_EQ_U64(len, n);

    /* Wrapping: starts at 200, 56 bytes there and 48 at the beginning. */
    memset(data, 0xEE, sizeof data);
    memcpy(data + 200, rec, 56);
    memcpy(data, rec + 56, n - 56);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 200, 200 + n, scratch, &got, &len), 1);
    DM_ASSERT(got == scratch);
    DM_ASSERT_EQ_U64(len, n);
    DM_ASSERT_MEM_EQ(got, rec, n);
    DM_ASSERT_EQ_INT(dm_perf_decode(&d, got, len, &s, &lost), DM_PERF_REC_SAMPLE);
    DM_ASSERT_STR_EQ(s.comm, "dm_dio");
    DM_ASSERT_EQ_U64(s.sector, 2048);

    /* The header itself split: 4 bytes at the end, 4 at the start. */
    memset(data, 0xEE, sizeof data);
    memcpy(data + 252, rec, 4);
    memcpy(data, rec + 4, n - 4);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 252, 252 + n, scratch, &got, &len), 1);
    DM_ASSERT_EQ_U64(len, n);
    DM_ASSERT_MEM_EQ(got, rec, n);
    free(scratch);
}

DM_TEST(ring_bad_positions)
{
    uint8_t data[256], *scratch = malloc(DM_PERF_RECORD_MAX);
    const uint8_t *got;
    size_t len;

    DM_ASSERT(scratch != NULL);
    memset(data, 0, sizeof data);
    /* Empty. */
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 64, 64, scratch, &got, &len), 0);
    /* Less than a header available. */
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 4, scratch, &got, &len), DM_ECORRUPT);
    /* More available than the ring holds. */
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 512, scratch, &got, &len), DM_ECORRUPT);
    /* A header of size 0 (would loop forever) and 4 (shorter than itself). */
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 64, scratch, &got, &len), DM_ECORRUPT);
    put16(data + 6, 4);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 64, scratch, &got, &len), DM_ECORRUPT);
    /* A record larger than what the kernel published. */
    put16(data + 6, 72);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 64, scratch, &got, &len), DM_ECORRUPT);
    put16(data + 6, 64);
    DM_ASSERT_EQ_INT(dm_perf_ring_next(data, 256, 0, 64, scratch, &got, &len), 1);
    free(scratch);
}

/* ---- pairing ------------------------------------------------------------------ */

#define SEC 1000000000ull

static struct dm_pair_entry start_at(uint32_t dev, uint64_t sector, uint64_t t,
                                     uint32_t pid)
{
    struct dm_pair_entry e;

    memset(&e, 0, sizeof e);
    e.dev = dev;
    e.sector = sector;
    e.time_ns = t;
    e.pid = pid;
    e.tid = pid + 1;
    e.nr_sector = 8;
    e.request = DM_REQ_READ;
    e.has_comm = 1;
    memcpy(e.comm, "fio", 4);
    return e;
}

static struct dm_pair_entry done_at(uint32_t dev, uint64_t sector, uint64_t t,
                                    uint32_t nr)
{
    struct dm_pair_entry e;

    memset(&e, 0, sizeof e);
    e.dev = dev;
    e.sector = sector;
    e.time_ns = t;
    e.nr_sector = nr;
    return e;
}

DM_TEST(pair_start_then_done)
{
    struct dm_pairing p;
    struct dm_pair_entry s = start_at(7u << 20, 100, 1000, 55), d = done_at(7u << 20, 100, 5000, 16);
    struct dm_pair_entry out;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &s, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(p.used, 1);
    /* Another device's completion at the same sector is not ours. */
    d.dev = 8u << 20;
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &d, 0, &out), DM_PAIR_IGNORED);
    d.dev = 7u << 20;
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &d, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_U64(out.time_ns, 1000);
    DM_ASSERT_EQ_INT(out.pid, 55);
    DM_ASSERT_EQ_INT(out.tid, 56);
    DM_ASSERT_STR_EQ(out.comm, "fio");
    DM_ASSERT_EQ_INT(p.used, 0);
    DM_ASSERT_EQ_U64(p.counts.matched, 1);
    dm_pairing_free(&p);
}

DM_TEST(pair_done_then_start)
{
    struct dm_pairing p;
    struct dm_pair_entry s = start_at(1, 100, 1000, 55), d = done_at(1, 100, 5000, 16);
    struct dm_pair_entry out;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &d, 1, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &s, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_U64(out.time_ns, 5000);
    DM_ASSERT_EQ_INT(out.nr_sector, 16);
    DM_ASSERT_EQ_INT(p.used, 0);
    /* A parked completion never pairs with a start that came after it. */
    d.time_ns = 900;
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &d, 1, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &s, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(p.used, 2);
    /* ...nor a completion with a start later than itself. */
    d.time_ns = 950;
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &d, 0, &out), DM_PAIR_IGNORED);
    dm_pairing_free(&p);
}

DM_TEST(pair_duplicates_oldest_first)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    /* Two flushes at sector 0 of one device, in flight together. */
    e = start_at(1, 0, 100, 10);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    e = start_at(1, 0, 200, 20);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    e = done_at(1, 0, 300, 0);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 10);
    e = done_at(1, 0, 400, 0);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 20);
    /* Completions first, then starts: each start takes the oldest
     * completion not earlier than itself. */
    e = done_at(1, 0, 1300, 1);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_STORED);
    e = done_at(1, 0, 1100, 2);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_STORED);
    e = start_at(1, 0, 1000, 30);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_U64(out.time_ns, 1100);
    e = start_at(1, 0, 1200, 40);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_U64(out.time_ns, 1300);
    DM_ASSERT_EQ_INT(p.used, 0);
    dm_pairing_free(&p);
}

/* A start whose completion the kernel dropped must not take the next
 * request's completion: the fresh start is chosen. */
DM_TEST(pair_skips_stale_start)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    e = start_at(1, 8, 1 * SEC, 1);                 /* completion lost */
    dm_pairing_start(&p, &e, &out);
    e = start_at(1, 8, 3 * SEC, 2);
    dm_pairing_start(&p, &e, &out);
    e = done_at(1, 8, 3 * SEC + 50000, 8);          /* 50 us later */
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 2);
    /* When every open start is old, the oldest is taken (a slow device). */
    e = start_at(1, 8, 4 * SEC, 3);
    dm_pairing_start(&p, &e, &out);
    e = done_at(1, 8, 5 * SEC, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 1);
    dm_pairing_free(&p);
}

DM_TEST(pair_drops_duplicate_start)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    e = start_at(1, 8, 1000, 1);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_IGNORED);
    DM_ASSERT_EQ_U64(p.counts.duplicates, 1);
    /* Same key and time but another thread: a real second request. */
    e.tid = 99;
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_INT(p.used, 2);
    dm_pairing_free(&p);
}

DM_TEST(pair_expiry)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    p.grace_until_ns = 10 * SEC;
    /* A start whose completion never comes: expired after the start TTL
     * (30 s), not before. */
    e = start_at(1, 8, 1 * SEC, 1);
    dm_pairing_start(&p, &e, &out);
    /* A completion within the grace period: maybe started before the
     * capture. */
    e = done_at(1, 16, 5 * SEC, 8);
    dm_pairing_done(&p, &e, 1, &out);
    /* Completions after it: unmatched; one quiet. */
    e = done_at(1, 24, 20 * SEC, 8);
    dm_pairing_done(&p, &e, 1, &out);
    e = done_at(1, 32, 20 * SEC, 0);
    e.quiet = 1;
    dm_pairing_done(&p, &e, 1, &out);
    DM_ASSERT_EQ_INT(p.used, 4);

    dm_pairing_expire(&p, 6 * SEC);       /* the 5 s completion is 1 s old */
    DM_ASSERT_EQ_INT(p.used, 4);
    dm_pairing_expire(&p, 8 * SEC);       /* now 3 s old: > 2 s TTL */
    DM_ASSERT_EQ_INT(p.used, 3);
    DM_ASSERT_EQ_U64(p.counts.early_dones, 1);
    dm_pairing_expire(&p, 23 * SEC);
    DM_ASSERT_EQ_INT(p.used, 1);
    DM_ASSERT_EQ_U64(p.counts.expired_dones, 1);
    DM_ASSERT_EQ_U64(p.counts.quiet_dones, 1);
    DM_ASSERT_EQ_U64(p.counts.expired_starts, 0);
    dm_pairing_expire(&p, 30 * SEC);      /* start 29 s old */
    DM_ASSERT_EQ_INT(p.used, 1);
    dm_pairing_expire(&p, 32 * SEC);
    DM_ASSERT_EQ_INT(p.used, 0);
    DM_ASSERT_EQ_U64(p.counts.expired_starts, 1);
    dm_pairing_free(&p);
}

DM_TEST(pair_finish_counts_in_flight)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    p.grace_until_ns = 0;
    e = start_at(1, 8, 100, 1);
    dm_pairing_start(&p, &e, &out);
    e = start_at(1, 16, 100, 1);
    dm_pairing_start(&p, &e, &out);
    e = done_at(1, 24, 200, 8);
    dm_pairing_done(&p, &e, 1, &out);
    dm_pairing_finish(&p);
    DM_ASSERT_EQ_INT(p.used, 0);
    DM_ASSERT_EQ_U64(p.counts.in_flight, 2);
    DM_ASSERT_EQ_U64(p.counts.expired_dones, 1);
    DM_ASSERT_EQ_U64(p.counts.expired_starts, 0);
    /* The table is usable again. */
    e = start_at(1, 8, 300, 1);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    e = done_at(1, 8, 400, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    dm_pairing_free(&p);
}

DM_TEST(pair_queue_split)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    e = start_at(1, 64, 1000, 1);
    dm_pairing_start(&p, &e, &out);
    e = start_at(1, 64, 1100, 2);
    dm_pairing_start(&p, &e, &out);
    /* An issue before any start has nothing to annotate. */
    DM_ASSERT_EQ_INT(dm_pairing_issue(&p, 1, 64, 900), 0);
    /* Two dispatches: the oldest unissued start takes each. */
    DM_ASSERT_EQ_INT(dm_pairing_issue(&p, 1, 64, 1500), 1);
    DM_ASSERT_EQ_INT(dm_pairing_issue(&p, 1, 64, 1600), 1);
    /* A requeued request dispatched again: the newest start's issue moves. */
    DM_ASSERT_EQ_INT(dm_pairing_issue(&p, 1, 64, 1700), 1);
    e = done_at(1, 64, 2000, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 1);
    DM_ASSERT_EQ_U64(out.issue_ns, 1500);
    e = done_at(1, 64, 2100, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_INT(out.pid, 2);
    DM_ASSERT_EQ_U64(out.issue_ns, 1700);
    dm_pairing_free(&p);
}

DM_TEST(pair_merges)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 64), 0);
    /* Request B (sector 108) merged into A (100 + 8): B never completes. */
    e = start_at(1, 100, 1000, 1);
    dm_pairing_start(&p, &e, &out);
    e = start_at(1, 108, 1010, 1);
    dm_pairing_start(&p, &e, &out);
    DM_ASSERT_EQ_INT(dm_pairing_merge(&p, 1, 108, 1020), 1);
    DM_ASSERT_EQ_U64(p.counts.merged, 1);
    DM_ASSERT_EQ_INT(p.used, 1);
    /* A bio [92, 100) joins A at the front: A now starts at 92. */
    DM_ASSERT_EQ_INT(dm_pairing_move(&p, 1, 100, 92, 1030), 1);
    e = done_at(1, 100, 2000, 24);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 0, &out), DM_PAIR_IGNORED);
    e = done_at(1, 92, 2000, 24);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    DM_ASSERT_EQ_U64(out.time_ns, 1000);
    DM_ASSERT_EQ_INT(out.nr_sector, 16);
    DM_ASSERT_EQ_INT(dm_pairing_merge(&p, 1, 500, 3000), 0);
    DM_ASSERT_EQ_INT(dm_pairing_move(&p, 1, 500, 400, 3000), 0);
    dm_pairing_free(&p);
}

DM_TEST(pair_table_full)
{
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    /* 16 slots: at most 12 entries. */
    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 16), 0);
    for (uint64_t i = 0; i < 12; i++) {
        e = start_at(1, i * 8, 10 * SEC, 1);
        DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    }
    e = start_at(1, 1000, 10 * SEC + 1, 1);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_FULL);
    e = done_at(1, 2000, 10 * SEC + 1, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_FULL);
    DM_ASSERT_EQ_U64(p.counts.full, 2);
    /* Completions of stored starts still pair. */
    e = done_at(1, 0, 10 * SEC + 2, 8);
    DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 1, &out), DM_PAIR_MATCHED);
    /* A full table makes room by expiring entries older than 1 s. */
    e = start_at(1, 8000, 10 * SEC + 3, 1);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    e = start_at(1, 9000, 12 * SEC, 1);
    DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
    DM_ASSERT_EQ_U64(p.counts.expired_starts, 12);
    DM_ASSERT_EQ_INT(p.used, 1);
    dm_pairing_free(&p);
}

/* Many keys in a small table, so runs collide and wrap: every completion
 * finds its own start whatever the order of removal (backward-shift
 * deletion keeps every run intact). */
DM_TEST(pair_many_keys)
{
    enum { N = 700 };
    static uint64_t sectors[N];
    static int order[N];
    struct dm_pairing p;
    struct dm_pair_entry out, e;
    uint32_t x = 12345;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 1024), 0);
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        /* Few distinct sectors, several devices: duplicates and clusters. */
        sectors[i] = (uint64_t)((x >> 8) % 97) * 8;
        e = start_at(1 + (uint32_t)(i % 3), sectors[i], 1000 + (uint64_t)i, (uint32_t)i);
        DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
        order[i] = i;
    }
    DM_ASSERT_EQ_INT(p.used, N);
    for (int i = N - 1; i > 0; i--) {
        int j, t;

        x = x * 1103515245u + 12345u;
        j = (int)((x >> 8) % (uint32_t)(i + 1));
        t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < N; k++) {
        int i = order[k];

        /* Completion time = start time: pairs with the oldest start of the
         * key not later than it, which for equal keys is the same or an
         * older one; so check the key and count instead of the pid. */
        e = done_at(1 + (uint32_t)(i % 3), sectors[i], 1000 + N, 8);
        DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 0, &out), DM_PAIR_MATCHED);
        DM_ASSERT_EQ_U64(out.sector, sectors[i]);
        DM_ASSERT_EQ_INT(out.dev, 1 + (uint32_t)(i % 3));
    }
    DM_ASSERT_EQ_INT(p.used, 0);
    for (uint32_t i = 0; i <= p.mask; i++)
        DM_ASSERT_EQ_INT(p.slots[i].state, DM_PAIR_EMPTY);
    dm_pairing_free(&p);
}

/* The table starts small, doubles at half full up to the size asked for,
 * keeps every entry findable across each move, and halves again at an
 * expiry pass that leaves it nearly empty. */
DM_TEST(pair_table_grows_and_shrinks)
{
    enum { N = 3000 };
    struct dm_pairing p;
    struct dm_pair_entry out, e;

    DM_ASSERT_EQ_INT(dm_pairing_init(&p, 8192), 0);
    DM_ASSERT(p.mask + 1 < 8192);
    for (uint64_t i = 0; i < N; i++) {
        e = start_at(1, i * 8, 10 * SEC + i, (uint32_t)i);
        DM_ASSERT_EQ_INT(dm_pairing_start(&p, &e, &out), DM_PAIR_STORED);
        /* Never more than half full below the size asked for. */
        DM_ASSERT(p.used <= (p.mask + 1) / 2);
    }
    /* 3000 entries at most half full: 8192 slots, the size asked for. */
    DM_ASSERT_EQ_U64(p.mask + 1, 8192);
    /* Complete all but 10 (every 300th start stays open). */
    for (uint64_t i = 0; i < N; i++) {
        if (i % 300 == 0)
            continue;
        e = done_at(1, i * 8, 11 * SEC, 8);
        DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 0, &out), DM_PAIR_MATCHED);
        DM_ASSERT_EQ_INT(out.pid, (uint32_t)i);
    }
    DM_ASSERT_EQ_INT(p.used, 10);
    /* Nothing is old enough to expire; the table shrinks all the same. */
    dm_pairing_expire(&p, 12 * SEC);
    DM_ASSERT_EQ_INT(p.used, 10);
    DM_ASSERT(p.mask + 1 <= 256);
    for (uint64_t i = 0; i < N; i += 300) {
        e = done_at(1, i * 8, 12 * SEC, 8);
        DM_ASSERT_EQ_INT(dm_pairing_done(&p, &e, 0, &out), DM_PAIR_MATCHED);
        DM_ASSERT_EQ_INT(out.pid, (uint32_t)i);
    }
    DM_ASSERT_EQ_INT(p.used, 0);
    DM_ASSERT_EQ_U64(p.counts.full, 0);
    dm_pairing_free(&p);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* One snapshot serves events older than it by the margin; an event younger
 * than that reads the file again, and sees what the kernel added. */
DM_TEST(saved_tgids_snapshot)
{
    char path[] = "/tmp/dm_saved_tgids_XXXXXX";
    struct dm_saved_tgids s;
    uint64_t t;
    int fd = mkstemp(path);

    DM_ASSERT(fd >= 0);
    close(fd);
    memset(&s, 0, sizeof s);
    DM_ASSERT_EQ_INT(write_file(path, "100 90\n101 90\n"), 0);
    t = dm_monotonic_ns();
    /* An event 1 s ago: read once, then served from the snapshot. */
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 101, t - 1000000000ull), 90);
    DM_ASSERT_EQ_U64(s.reads, 1);
    /* The snapshot stopped at 101's line: a higher pid reads on in the
     * same file, which then has what the kernel added (newer still). */
    DM_ASSERT_EQ_INT(write_file(path, "100 90\n101 90\n102 95\n"), 0);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 100, t - 1000000000ull), 90);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 102, t - 1000000000ull), 95);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 103, t - 1000000000ull), 0);
    DM_ASSERT_EQ_U64(s.reads, 1);
    /* An event after the snapshot: read again from the start. */
    DM_ASSERT_EQ_INT(write_file(path, "100 90\n101 90\n102 96\n"), 0);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 102, dm_monotonic_ns()), 96);
    DM_ASSERT_EQ_U64(s.reads, 2);
    unlink(path);
    /* Unreadable: 0, the thread keeps its own id. */
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 102, dm_monotonic_ns()), 0);
    dm_saved_tgids_free(&s);
}

/* A map of 20,000 entries (pid 2k + 1 -> tgid k, the kernel's format):
 * a low pid is answered from the first reads of the file, not the whole of
 * it; every pid, across the reads' boundaries (lines cut in two), gets the
 * tgid written for it, and a pid between entries none. */
DM_TEST(saved_tgids_read_as_far_as_asked)
{
    char path[] = "/tmp/dm_saved_tgids_XXXXXX";
    struct dm_saved_tgids s;
    uint64_t old = dm_monotonic_ns() - 1000000000ull;
    int fd = mkstemp(path), bad = 0;
    long size;
    FILE *f;

    DM_ASSERT(fd >= 0);
    f = fdopen(fd, "w");
    DM_ASSERT(f != NULL);
    for (uint32_t k = 1; k <= 20000; k++)
        fprintf(f, "%u %u\n", 2 * k + 1, k);
    size = ftell(f);
    DM_ASSERT_EQ_INT(fclose(f), 0);
    memset(&s, 0, sizeof s);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 3, old), 1);
    DM_ASSERT(s.len > 0 && s.len < (size_t)size / 8);
    for (uint32_t k = 1; k <= 20000; k++) {
        bad += dm_saved_tgid(&s, path, 2 * k + 1, old) != k;
        bad += dm_saved_tgid(&s, path, 2 * k, old) != 0;
    }
    DM_ASSERT_EQ_INT(bad, 0);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 40002, old), 0);
    DM_ASSERT_EQ_U64(s.len, (uint64_t)size);
    DM_ASSERT_EQ_U64(s.reads, 1);
    unlink(path);
    dm_saved_tgids_free(&s);
}

/* Lines as the kernel prints them, one malformed (skipped, the others
 * still found), the last without its newline. */
DM_TEST(saved_tgids_malformed_line)
{
    char path[] = "/tmp/dm_saved_tgids_XXXXXX";
    struct dm_saved_tgids s;
    uint64_t old = dm_monotonic_ns() - 1000000000ull;
    int fd = mkstemp(path);

    DM_ASSERT(fd >= 0);
    close(fd);
    DM_ASSERT_EQ_INT(write_file(path, "7 7\n12 12\nbad line\n300 12\n301 12\n65536 4"), 0);
    memset(&s, 0, sizeof s);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 65536, old), 4);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 7, old), 7);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 12, old), 12);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 300, old), 12);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 301, old), 12);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 8, old), 0);
    DM_ASSERT_EQ_INT(dm_saved_tgid(&s, path, 65537, old), 0);
    unlink(path);
    dm_saved_tgids_free(&s);
}

/* ---- the running kernel (root) ----------------------------------------------- */

/* The running kernel's saved_tgids: every entry fscanf reads from the
 * file (the reference) is found by the snapshot's search with the same
 * tgid, bar the few the kernel may replace between the two reads. */
DM_TEST(live_saved_tgids_match_fscanf)
{
    char dir[128], err[512], path[160];
    struct dm_saved_tgids s;
    unsigned pid, tgid, n = 0, bad = 0;
    uint64_t old = dm_monotonic_ns() - 1000000000ull;
    FILE *f;

    DM_REQUIRE(geteuid() == 0, "needs root to read tracefs");
    DM_ASSERT_EQ_INT(dm_tracefs_locate(dir, sizeof dir, 1, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/saved_tgids", dir);
    f = fopen(path, "r");
    DM_REQUIRE(f != NULL, "no saved_tgids in this kernel");
    memset(&s, 0, sizeof s);
    while (fscanf(f, "%u %u", &pid, &tgid) == 2) {
        n++;
        bad += dm_saved_tgid(&s, path, pid, old) != tgid;
    }
    fclose(f);
    DM_REQUIRE(n > 0, "saved_tgids is empty (nothing traced with record-tgid yet)");
    DM_ASSERT(bad <= n / 100);
    dm_saved_tgids_free(&s);
}

DM_TEST(live_formats_decode)
{
    static const char *const events[] = {"block_rq_issue", "block_rq_complete"};
    char dir[128], err[512];
    struct dm_blk_decoder d;
    struct dm_tp_format fmt;

    DM_REQUIRE(geteuid() == 0, "needs root to read (and maybe mount) tracefs");
    DM_ASSERT_EQ_INT(dm_tracefs_locate(dir, sizeof dir, 1, err, sizeof err), 0);
    memset(&d, 0, sizeof d);
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        uint32_t id = 0;

        DM_ASSERT_EQ_INT(dm_tracefs_read_id(dir, events[i], &id, err, sizeof err), 0);
        DM_ASSERT_EQ_INT(dm_tracefs_read_format(dir, events[i], &fmt, err, sizeof err), 0);
        /* The id file and the format's ID line agree. */
        DM_ASSERT_EQ_INT(fmt.id, id);
        DM_ASSERT_STR_EQ(fmt.name, events[i]);
        DM_ASSERT_EQ_INT(dm_blk_decoder_add(&d, i == 0 ? DM_BLK_RQ_ISSUE
                                                       : DM_BLK_RQ_COMPLETE,
                                            id, &fmt, err, sizeof err), 0);
    }
    DM_ASSERT(!dm_tracefs_has_event(dir, "no_such_event"));
    {
        uint32_t id;

        DM_ASSERT_EQ_INT(dm_tracefs_read_id(dir, "no_such_event", &id, err, sizeof err),
                         DM_ENOTFOUND);
    }
}

const struct dmt_case dm_suite_linux[] = {
    {"format_io_start_618", format_io_start_618},
    {"format_rq_complete_618", format_rq_complete_618},
    {"format_respects_length", format_respects_length},
    {"format_malformed", format_malformed},
    {"format_too_many_fields", format_too_many_fields},
    {"decode_io_start", decode_io_start},
    {"decode_rq_complete", decode_rq_complete},
    {"decode_short_samples", decode_short_samples},
    {"decode_odd_samples", decode_odd_samples},
    {"decode_lost_and_other_records", decode_lost_and_other_records},
    {"decoder_rejects_odd_formats", decoder_rejects_odd_formats},
    {"classify_rwbs", classify_rwbs},
    {"rwbs_flags", rwbs_flags},
    {"ring_contiguous_and_wrapped", ring_contiguous_and_wrapped},
    {"ring_bad_positions", ring_bad_positions},
    {"pair_start_then_done", pair_start_then_done},
    {"pair_done_then_start", pair_done_then_start},
    {"pair_duplicates_oldest_first", pair_duplicates_oldest_first},
    {"pair_skips_stale_start", pair_skips_stale_start},
    {"pair_drops_duplicate_start", pair_drops_duplicate_start},
    {"pair_expiry", pair_expiry},
    {"pair_finish_counts_in_flight", pair_finish_counts_in_flight},
    {"pair_queue_split", pair_queue_split},
    {"pair_merges", pair_merges},
    {"pair_table_full", pair_table_full},
    {"pair_many_keys", pair_many_keys},
    {"pair_table_grows_and_shrinks", pair_table_grows_and_shrinks},
    {"saved_tgids_snapshot", saved_tgids_snapshot},
    {"saved_tgids_read_as_far_as_asked", saved_tgids_read_as_far_as_asked},
    {"saved_tgids_malformed_line", saved_tgids_malformed_line},
    {"live_saved_tgids_match_fscanf", live_saved_tgids_match_fscanf},
    {"live_formats_decode", live_formats_decode},
    {NULL, NULL},
};
