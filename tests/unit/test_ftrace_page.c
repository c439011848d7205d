/*
 * test_ftrace_page.c - the tracefs sub-buffer parser (ftrace_page.h).
 *
 * Real sub-buffers captured from kernel 6.18 (tests/data/ftrace_p4k_* and
 * ftrace_p8k_*, 4 and 8 KiB sub-buffers, and ftrace_gap_*, whose pages hold
 * time extends; tests/tools/capture_pages.sh made them) are parsed and decoded, and every record is checked against
 * the kernel's own text rendering of the same events (the instance's
 * `trace` file, saved beside them): CPU, time, pid, event, device, rwbs,
 * sector and length, in order. Hand-made pages cover each corner of the
 * format the real ones may not hold, with the layout from the kernel's
 * description (events/header_page, events/header_event; the entry types
 * as ring_buffer.h documents them), and nonsense pages must be skipped and
 * counted, never read past (each page sits in a buffer of exactly its size,
 * so ASan would catch a read beyond it).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "dmtest.h"
#include "linux/block_decode.h"
#include "linux/ftrace_page.h"
#include "linux/ftrace_ring.h"
#include "linux/tracefs.h"

#define DATA_DIR DM_SOURCE_DIR "/tests/data/"

/* A whole file, NUL-terminated; NULL if it cannot be read. */
static char *slurp(const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof path, "%s%s", DATA_DIR, name);
    f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

static int real_layout(struct dm_ftrace_layout *l, uint32_t subbuf)
{
    size_t np = 0, ne = 0;
    char *page = slurp("ftrace_header_page", &np), *event = slurp("ftrace_header_event", &ne);
    char err[256];
    int rc = page && event ? dm_ftrace_layout_parse(page, np, event, ne, subbuf, l, err,
                                                    sizeof err)
                           : -1;

    free(page);
    free(event);
    return rc;
}

DM_TEST(layout_from_kernel_headers)
{
    struct dm_ftrace_layout l;

    DM_ASSERT_EQ_INT(real_layout(&l, 0), 0);
    /* docs/linux.md §4: u64 timestamp @0, local_t commit @8 (size 8),
     * data @16; a 4096-byte page by default. */
    DM_ASSERT_EQ_INT(l.ts_off, 0);
    DM_ASSERT_EQ_INT(l.commit_off, 8);
    DM_ASSERT_EQ_INT(l.commit_size, 8);
    DM_ASSERT_EQ_INT(l.data_off, 16);
    DM_ASSERT_EQ_INT(l.subbuf_size, 4096);
    DM_ASSERT_EQ_INT(real_layout(&l, 8192), 0);
    DM_ASSERT_EQ_INT(l.subbuf_size, 8192);
}

DM_TEST(layout_refuses_other_entry_headers)
{
    static const char page[] =
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
        "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    static const char good[] =
        "# compressed entry header\n\ttype_len    :    5 bits\n"
        "\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n"
        "\tpadding     : type == 29\n\ttime_extend : type == 30\n"
        "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
    static const char other[] =
        "# compressed entry header\n\ttype_len    :    6 bits\n"
        "\ttime_delta  :   26 bits\n\tarray       :   32 bits\n\n"
        "\tpadding     : type == 61\n\ttime_extend : type == 62\n"
        "\ttime_stamp : type == 63\n\tdata max type_len  == 60\n";
    struct dm_ftrace_layout l;
    char err[256];

    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(page, sizeof page - 1, good, sizeof good - 1,
                                            0, &l, err, sizeof err), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(page, sizeof page - 1, other,
                                            sizeof other - 1, 0, &l, err, sizeof err),
                     DM_EUNSUPPORTED);
    DM_ASSERT(strstr(err, "type_len") != NULL);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(page, sizeof page - 1, "", 0, 0, &l, err,
                                            sizeof err), DM_EUNSUPPORTED);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse("nothing\n", 8, good, sizeof good - 1, 0, &l,
                                            err, sizeof err), DM_EUNSUPPORTED);
}

/* A header_page whose offsets wrap a 32-bit sum: data at 4294967293
 * (2^32 - 3) plus the 4-byte entry header is 1, below any sub-buffer size,
 * and a page reader that took it would read 4 GiB past the page. Refused
 * with the sub-buffer size given and without; and a layout forged by hand
 * is refused by dm_ftrace_page_open, which counts the page as bad. */
DM_TEST(layout_refuses_wrapping_offsets)
{
    static const char event[] =
        "# compressed entry header\n\ttype_len    :    5 bits\n"
        "\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n"
        "\tpadding     : type == 29\n\ttime_extend : type == 30\n"
        "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
    static const char wrap[] =
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
        "\tfield: char data;\toffset:4294967293;\tsize:1;\tsigned:0;\n";
    static const char late_commit[] =
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        "\tfield: local_t commit;\toffset:4294967280;\tsize:8;\tsigned:1;\n"
        "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    static const char no_room[] =
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
        "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
        "\tfield: char data;\toffset:16;\tsize:4;\tsigned:0;\n";
    struct dm_ftrace_layout l;
    struct dm_ftrace_counts c;
    struct dm_ftrace_page pg;
    static uint8_t page[4096];
    char err[256];

    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(wrap, sizeof wrap - 1, event, sizeof event - 1,
                                            4096, &l, err, sizeof err), DM_EUNSUPPORTED);
    DM_ASSERT(strstr(err, "4294967293") != NULL);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(wrap, sizeof wrap - 1, event, sizeof event - 1,
                                            0, &l, err, sizeof err), DM_EUNSUPPORTED);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(late_commit, sizeof late_commit - 1, event,
                                            sizeof event - 1, 4096, &l, err, sizeof err),
                     DM_EUNSUPPORTED);
    /* 16 + 4 bytes: the entries could not hold one entry header. */
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(no_room, sizeof no_room - 1, event,
                                            sizeof event - 1, 0, &l, err, sizeof err),
                     DM_EUNSUPPORTED);
    DM_ASSERT_EQ_INT(dm_ftrace_layout_parse(no_room, sizeof no_room - 1, event,
                                            sizeof event - 1, 24, &l, err, sizeof err), 0);

    memset(&c, 0, sizeof c);
    l.ts_off = 0;
    l.commit_off = 8;
    l.commit_size = 8;
    l.data_off = 4294967293u;
    l.subbuf_size = sizeof page;
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&l, page, sizeof page, &pg, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_U64(c.bad_pages, 1);
}

/* ---- real pages against the kernel's text -------------------------------- */

static int real_decoder(struct dm_blk_decoder *d)
{
    static const struct {
        const char *file;
        enum dm_blk_kind kind;
    } ev[] = {{"ftrace_format_block_io_start", DM_BLK_IO_START},
              {"ftrace_format_block_rq_complete", DM_BLK_RQ_COMPLETE}};
    char err[256];

    memset(d, 0, sizeof *d);
    for (size_t i = 0; i < 2; i++) {
        struct dm_tp_format fmt;
        size_t n = 0;
        char *text = slurp(ev[i].file, &n);
        int rc = text ? dm_tp_format_parse(text, n, &fmt, err, sizeof err) : -1;

        free(text);
        if (rc != 0 || dm_blk_decoder_add(d, ev[i].kind, fmt.id, &fmt, err, sizeof err))
            return 0;
    }
    return 1;
}

/* One event as the kernel's `trace` file shows it. */
struct text_event {
    int cpu;
    uint64_t usec;          /* the time, in microseconds */
    uint32_t pid;
    char event[32];
    unsigned major, minor;
    char rwbs[12];
    uint64_t sector;
    uint32_t nr_sector;
};

/*
 * "          dd-10758   [000] .....   365.722781: block_io_start: 254,0 WS
 * 4096 () 170141144 + 8 be,0,4 [dd]" (the print fmt of the format files).
 */
static int parse_text_line(const char *line, struct text_event *t)
{
    const char *br = strchr(line, '['), *p;
    unsigned long secs, usecs;
    char rest[256];

    if (line[0] == '#' || br == NULL)
        return 0;
    p = br;
    while (p > line && p[-1] == ' ')
        p--;
    while (p > line && p[-1] != '-')
        p--;
    t->pid = (uint32_t)strtoul(p, NULL, 10);
    if (sscanf(br, "[%d] %*s %lu.%lu: %31[^:]: %u,%u %11s %255[^\n]", &t->cpu, &secs,
               &usecs, t->event, &t->major, &t->minor, t->rwbs, rest) != 8)
        return -1;
    t->usec = (uint64_t)secs * 1000000u + usecs;
    /* block_io_start has "BYTES () SECTOR + N", block_rq_complete "() SECTOR + N". */
    p = strstr(rest, ") ");
    if (p == NULL || sscanf(p + 2, "%" SCNu64 " + %" SCNu32, &t->sector, &t->nr_sector) != 2)
        return -1;
    return 1;
}

/* Check every record of TAG's pages against the text; returns the number
 * checked, or -1 after failing. */
static long check_capture(const char *tag, uint32_t subbuf)
{
    struct dm_ftrace_layout l;
    struct dm_blk_decoder d;
    struct dm_ftrace_counts counts;
    size_t tlen = 0;
    char name[128], *text;
    long checked = 0;

    if (real_layout(&l, subbuf) != 0 || !real_decoder(&d)) {
        dmt_fail_at(__FILE__, __LINE__, "cannot read tests/data headers or formats");
        return -1;
    }
    snprintf(name, sizeof name, "ftrace_%s.trace", tag);
    text = slurp(name, &tlen);
    if (text == NULL) {
        dmt_fail_at(__FILE__, __LINE__, "cannot read %s", name);
        return -1;
    }
    memset(&counts, 0, sizeof counts);
    for (int cpu = 0; cpu < 2; cpu++) {
        size_t plen = 0;
        char *pages;
        const char *cursor = text;

        snprintf(name, sizeof name, "ftrace_%s_cpu%d.raw", tag, cpu);
        pages = slurp(name, &plen);
        if (pages == NULL || plen % subbuf != 0) {
            dmt_fail_at(__FILE__, __LINE__, "%s: missing or not whole sub-buffers", name);
            free(pages);
            free(text);
            return -1;
        }
        for (size_t off = 0; off < plen; off += subbuf) {
            /* Each sub-buffer in a buffer of exactly its size. */
            uint8_t *buf = malloc(subbuf);
            struct dm_ftrace_page pg;
            struct dm_ftrace_record rec;

            memcpy(buf, pages + off, subbuf);
            if (dm_ftrace_page_open(&l, buf, subbuf, &pg, &counts) != 0) {
                dmt_fail_at(__FILE__, __LINE__, "%s page at %zu refused", name, off);
                free(buf);
                free(pages);
                free(text);
                return -1;
            }
            while (dm_ftrace_page_next(&pg, &rec, &counts) == 1) {
                struct dm_blk_sample s;
                struct text_event t;
                int found = 0;

                memset(&s, 0, sizeof s);
                /* The next line of this CPU in the text. */
                while (*cursor != '\0') {
                    const char *nl = strchr(cursor, '\n');
                    char one[512];
                    size_t n = nl ? (size_t)(nl - cursor) : strlen(cursor);

                    if (n >= sizeof one)
                        n = sizeof one - 1;
                    memcpy(one, cursor, n);
                    one[n] = '\0';
                    cursor += n + (nl != NULL);
                    if (parse_text_line(one, &t) == 1 && t.cpu == cpu) {
                        found = 1;
                        break;
                    }
                }
                if (!found || dm_blk_decode_raw(&d, rec.data, rec.len, &s) != 0) {
                    dmt_fail_at(__FILE__, __LINE__, "%s: record %ld: %s", name, checked,
                                found ? "does not decode" : "more records than text lines");
                    free(buf);
                    free(pages);
                    free(text);
                    return -1;
                }
                /* The text rounds ns to the nearest microsecond (ns2usecs). */
                if ((rec.ts + 500) / 1000 != t.usec || s.tid != t.pid ||
                    strcmp(dm_blk_event_names[s.kind], t.event) != 0 ||
                    (s.dev >> 20) != t.major || (s.dev & 0xFFFFF) != t.minor ||
                    strcmp(s.rwbs, t.rwbs) != 0 || s.sector != t.sector ||
                    s.nr_sector != t.nr_sector) {
                    dmt_fail_at(__FILE__, __LINE__,
                                "%s record %ld: parsed %s %" PRIu64 " ns pid %u dev %u:%u "
                                "%s %" PRIu64 " + %u; text %s %" PRIu64 " us pid %u "
                                "dev %u:%u %s %" PRIu64 " + %u", name, checked,
                                dm_blk_event_names[s.kind], rec.ts, (unsigned)s.tid,
                                (unsigned)(s.dev >> 20), (unsigned)(s.dev & 0xFFFFF),
                                s.rwbs, s.sector, (unsigned)s.nr_sector, t.event, t.usec,
                                (unsigned)t.pid, t.major, t.minor, t.rwbs, t.sector,
                                (unsigned)t.nr_sector);
                    free(buf);
                    free(pages);
                    free(text);
                    return -1;
                }
                checked++;
            }
            free(buf);
        }
        /* No line of this CPU is left over in the text. */
        for (;;) {
            struct text_event t;
            const char *nl = strchr(cursor, '\n');
            char one[512];
            size_t n;

            if (*cursor == '\0')
                break;
            n = nl ? (size_t)(nl - cursor) : strlen(cursor);
            if (n >= sizeof one)
                n = sizeof one - 1;
            memcpy(one, cursor, n);
            one[n] = '\0';
            cursor += n + (nl != NULL);
            if (parse_text_line(one, &t) == 1 && t.cpu == cpu) {
                dmt_fail_at(__FILE__, __LINE__, "%s: the text has more events: %s", name,
                            one);
                free(pages);
                free(text);
                return -1;
            }
        }
        free(pages);
    }
    free(text);
    if (counts.bad_pages != 0 || counts.bad_records != 0 || counts.missed_pages != 0) {
        dmt_fail_at(__FILE__, __LINE__, "real pages counted as bad or missing events");
        return -1;
    }
    return checked;
}

DM_TEST(real_pages_4k_match_trace_text)
{
    long n = check_capture("p4k", 4096);

    if (n < 0)
        return;
    /* 95 events in the text (grep -c block_ tests/data/ftrace_p4k.trace). */
    DM_ASSERT_EQ_INT(n, 95);
}

DM_TEST(real_pages_8k_match_trace_text)
{
    long n = check_capture("p8k", 8192);

    if (n < 0)
        return;
    DM_ASSERT_EQ_INT(n, 87);
}

DM_TEST(real_pages_with_time_extends_match_trace_text)
{
    /* Writes in bursts 0.3 s apart: the pages hold 5 time extends. */
    long n = check_capture("gap", 4096);

    if (n < 0)
        return;
    DM_ASSERT_EQ_INT(n, 131);
}

/* ---- hand-made pages --------------------------------------------------------- */

/* A sub-buffer being built: header as header_page gives it (ts @0, 8-byte
 * commit @8, entries @16), entries appended. */
struct page_builder {
    uint8_t *buf;
    uint32_t size, pos;
};

static const struct dm_ftrace_layout layout_4k = {0, 8, 8, 16, 4096};

static void pb_init(struct page_builder *b, uint32_t size, uint64_t ts)
{
    b->buf = calloc(1, size);
    b->size = size;
    b->pos = 16;
    memcpy(b->buf, &ts, 8);
}

/* Entry header word: type_len in the low 5 bits, time_delta above (a
 * little-endian kernel's bit-field order). */
static void pb_u32(struct page_builder *b, uint32_t v)
{
    memcpy(b->buf + b->pos, &v, 4);
    b->pos += 4;
}

static uint32_t hdr(uint32_t type_len, uint32_t delta)
{
    return type_len | (delta << 5);
}

/* A data record of n words whose first word is tag. */
static void pb_data(struct page_builder *b, uint32_t delta, uint32_t words, uint32_t tag)
{
    pb_u32(b, hdr(words, delta));
    pb_u32(b, tag);
    for (uint32_t i = 1; i < words; i++)
        pb_u32(b, 0);
}

static void pb_commit(struct page_builder *b, uint64_t flags)
{
    uint64_t commit = (b->pos - 16) | flags;

    memcpy(b->buf + 8, &commit, 8);
}

DM_TEST(hand_deltas_extend_and_absolute)
{
    struct page_builder b;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record r;
    struct dm_ftrace_counts c;
    uint32_t tag;

    memset(&c, 0, sizeof c);
    pb_init(&b, 4096, 1000000);
    pb_data(&b, 5, 2, 1);                        /* t = 1000005 */
    pb_u32(&b, hdr(30, 7));                      /* time extend: 3 << 27 | 7 */
    pb_u32(&b, 3);
    pb_data(&b, 10, 3, 2);                       /* + extend + 10 */
    pb_u32(&b, hdr(31, 0x123));                  /* absolute: 9 << 27 | 0x123 */
    pb_u32(&b, 9);
    pb_data(&b, 1, 1, 3);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, 1000005);
    DM_ASSERT_EQ_INT(r.len, 8);
    memcpy(&tag, r.data, 4);
    DM_ASSERT_EQ_INT(tag, 1);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, 1000005 + ((3ull << 27) + 7) + 10);
    DM_ASSERT_EQ_INT(r.len, 12);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, ((9ull << 27) | 0x123) + 1);
    memcpy(&tag, r.data, 4);
    DM_ASSERT_EQ_INT(tag, 3);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 0);
    DM_ASSERT_EQ_U64(c.records, 3);
    DM_ASSERT_EQ_U64(c.bad_records, 0);
    free(b.buf);
}

DM_TEST(hand_absolute_takes_top_bits_from_page)
{
    /* An absolute stamp holds 59 bits; the top 5 come from the time so far
     * (ring_buffer.c rb_fix_abs_ts), with a carry when it went backwards. */
    uint64_t page_ts = (0x08ull << 56) | 1000;
    struct page_builder b;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record r;
    struct dm_ftrace_counts c;

    memset(&c, 0, sizeof c);
    pb_init(&b, 4096, page_ts);
    pb_u32(&b, hdr(31, 2000));   /* 2000: same top bits, later */
    pb_u32(&b, 0);
    pb_data(&b, 0, 1, 1);
    pb_u32(&b, hdr(31, 500));    /* 500 < 2000 in the low bits: wrapped */
    pb_u32(&b, 0);
    pb_data(&b, 0, 1, 2);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, (0x08ull << 56) | 2000);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, ((0x08ull << 56) | 500) + (1ull << 59));
    free(b.buf);
}

DM_TEST(hand_padding_and_long_records)
{
    struct page_builder b;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record r;
    struct dm_ftrace_counts c;
    uint32_t tag;

    memset(&c, 0, sizeof c);
    pb_init(&b, 4096, 100);
    /* A discarded event: padding, time_delta non-zero, array[0] = 12 bytes
     * after the header word; its delta counts (the next one is relative
     * to it). */
    pb_u32(&b, hdr(29, 40));
    pb_u32(&b, 12);
    pb_u32(&b, 0xdead);
    pb_u32(&b, 0xdead);
    /* A record with its length in array[0]: 120 bytes of data + 4. */
    pb_u32(&b, hdr(0, 3));
    pb_u32(&b, 124);
    pb_u32(&b, 77);
    for (int i = 1; i < 30; i++)
        pb_u32(&b, 0);
    pb_data(&b, 2, 2, 78);
    /* Padding with time_delta 0: the rest of the page is empty, even if
     * the commit says more. */
    pb_u32(&b, hdr(29, 0));
    pb_data(&b, 1, 2, 79);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, 100 + 40 + 3);
    DM_ASSERT_EQ_INT(r.len, 120);
    memcpy(&tag, r.data, 4);
    DM_ASSERT_EQ_INT(tag, 77);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_U64(r.ts, 100 + 40 + 3 + 2);
    memcpy(&tag, r.data, 4);
    DM_ASSERT_EQ_INT(tag, 78);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 0);
    DM_ASSERT_EQ_U64(c.bad_records, 0);
    free(b.buf);
}

DM_TEST(hand_missed_events)
{
    struct page_builder b;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record r;
    struct dm_ftrace_counts c;
    uint64_t missed = 1234;

    memset(&c, 0, sizeof c);
    pb_init(&b, 4096, 100);
    pb_data(&b, 1, 2, 1);
    /* Events missed, count stored after the entries (a long). */
    memcpy(b.buf + b.pos, &missed, 8);
    pb_commit(&b, 0x80000000u | 0x40000000u);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_U64(c.missed_pages, 1);
    DM_ASSERT_EQ_U64(c.missed_events, 1234);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 0);
    /* Flag without a stored count; and the kernel adds the flag to the long
     * as a sign-extended int, so the upper half may be all ones. */
    pb_commit(&b, 0xFFFFFFFF80000000ull);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_U64(c.missed_pages, 2);
    DM_ASSERT_EQ_U64(c.missed_events, 1234);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 0);
    free(b.buf);
}

DM_TEST(hand_truncated_and_nonsense)
{
    struct page_builder b;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record r;
    struct dm_ftrace_counts c;
    uint8_t *small;

    memset(&c, 0, sizeof c);
    pb_init(&b, 4096, 100);
    pb_data(&b, 1, 2, 1);
    pb_commit(&b, 0);
    /* A truncated page: fewer bytes than a sub-buffer. */
    small = malloc(100);
    memcpy(small, b.buf, 100);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, small, 100, &pg, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_U64(c.bad_pages, 1);
    free(small);
    /* A commit larger than the page. */
    {
        uint64_t commit = 4096 - 16 + 1;

        memcpy(b.buf + 8, &commit, 8);
        DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c),
                         DM_ECORRUPT);
        DM_ASSERT_EQ_U64(c.bad_pages, 2);
    }
    /* A data record longer than the commit: skipped and counted. */
    b.pos = 16;
    pb_data(&b, 1, 2, 1);
    pb_u32(&b, hdr(28, 0));      /* claims 112 bytes, 4 are committed */
    pb_u32(&b, 0);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 1);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), 0);
    DM_ASSERT_EQ_U64(c.bad_records, 1);
    /* array[0] lengths that cannot be: below 4, and past the commit. */
    b.pos = 16;
    pb_u32(&b, hdr(0, 1));
    pb_u32(&b, 2);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), DM_ECORRUPT);
    b.pos = 16;
    pb_u32(&b, hdr(0, 1));
    pb_u32(&b, 0xFFFFFFF0u);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), DM_ECORRUPT);
    /* A padding whose length runs past the commit, and a time extend cut
     * in half by the commit. */
    b.pos = 16;
    pb_u32(&b, hdr(29, 5));
    pb_u32(&b, 4000);
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), DM_ECORRUPT);
    b.pos = 16;
    pb_u32(&b, hdr(30, 5));
    pb_commit(&b, 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_open(&layout_4k, b.buf, 4096, &pg, &c), 0);
    DM_ASSERT_EQ_INT(dm_ftrace_page_next(&pg, &r, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_U64(c.bad_records, 5);
    free(b.buf);
}

DM_TEST(random_pages_never_read_past)
{
    /* Random headers and entries in exactly-sized buffers: every call ends,
     * and (under ASan) nothing outside the buffer is touched. */
    static const uint32_t sizes[] = {4096, 8192, 64};
    struct dm_ftrace_counts c;
    uint32_t seed = 12345;

    memset(&c, 0, sizeof c);
    for (int round = 0; round < 3000; round++) {
        struct dm_ftrace_layout l = layout_4k;
        uint32_t size = sizes[round % 3];
        uint8_t *buf = malloc(size);
        struct dm_ftrace_page pg;
        struct dm_ftrace_record r;
        int steps = 0;

        l.subbuf_size = size < 64 + 16 ? 4096 : size;
        for (uint32_t i = 0; i < size; i++) {
            seed = seed * 1103515245u + 12345u;
            buf[i] = (uint8_t)(seed >> 16);
        }
        /* Half of the pages get a plausible commit, so entries are walked. */
        if (round % 2 == 0) {
            uint64_t commit = (seed >> 8) % (size - 16 + 1);

            memcpy(buf + 8, &commit, 8);
        }
        if (dm_ftrace_page_open(&l, buf, size, &pg, &c) == 0) {
            while (dm_ftrace_page_next(&pg, &r, &c) == 1) {
                DM_ASSERT(r.data >= buf && r.data + r.len <= buf + size);
                DM_ASSERT(++steps <= (int)size / 4);
            }
        }
        free(buf);
    }
    DM_ASSERT(c.bad_pages > 0);
}


/* ---- the mapped ring's bookkeeping (ftrace_ring.h) --------------------------- */

/*
 * Real captured sub-buffers (ftrace_gap_cpu1.raw: two, with time extends)
 * laid out as a mapping's sub-buffers are,
 * handed to dm_ftrace_map_take the way the kernel's GET_READER hands them
 * out: a sub-buffer the writer is still on comes back with the same id and
 * a larger reader.read, a few records at a time, then the next id. The
 * records must be exactly those a plain walk of each whole sub-buffer
 * gives (the walk the trace-text test above checks against the kernel),
 * same bytes and same times, none twice, none missed. Ids and lengths the
 * mapping cannot hold are refused and counted.
 */
DM_TEST(mapped_ring_growing_reader_matches_whole_pages)
{
    struct dm_ftrace_layout l;
    struct dm_ftrace_counts c;
    struct dm_ftrace_cpu cpu;
    size_t plen = 0;
    uint8_t *map = (uint8_t *)slurp("ftrace_gap_cpu1.raw", &plen);
    uint32_t nr;
    long compared = 0;

    DM_ASSERT(map != NULL);
    DM_ASSERT_EQ_INT(real_layout(&l, 4096), 0);
    DM_ASSERT(plen >= 2 * 4096 && plen % 4096 == 0);
    nr = (uint32_t)(plen / 4096);
    memset(&c, 0, sizeof c);
    memset(&cpu, 0, sizeof cpu);
    cpu.layout = &l;
    cpu.id = UINT32_MAX;
    /* The kernel hands sub-buffers out in ring order, not id order:
     * walk them last first. */
    for (uint32_t k = 0; k < nr; k++) {
        uint32_t id = nr - 1 - k, ends[512], n_ends = 0, next_end = 0;
        uint64_t times[512];
        const uint8_t *datas[512];
        struct dm_ftrace_page whole;
        struct dm_ftrace_record r;

        /* The reference: the whole sub-buffer, and where each record ends. */
        DM_ASSERT_EQ_INT(dm_ftrace_page_open(&l, map + (size_t)id * 4096, 4096, &whole, &c),
                         0);
        while (n_ends < 512 && dm_ftrace_page_next(&whole, &r, &c) == 1) {
            times[n_ends] = r.ts;
            datas[n_ends] = r.data;
            ends[n_ends++] = whole.pos;
        }
        /* Handed out three records at a time, then the rest. */
        while (next_end < n_ends) {
            uint32_t read = next_end + 3 < n_ends ? ends[next_end + 2] : whole.size;

            DM_ASSERT_EQ_INT(dm_ftrace_map_take(&cpu, map, nr, id, read, &c), 1);
            while (dm_ftrace_page_next(&cpu.pg, &r, &c) == 1) {
                DM_ASSERT(next_end < n_ends);
                DM_ASSERT_EQ_U64(r.ts, times[next_end]);
                DM_ASSERT(r.data == datas[next_end]);
                next_end++;
                compared++;
            }
        }
        DM_ASSERT_EQ_INT(next_end, n_ends);
        /* The same id again, nothing new: nothing to give. */
        DM_ASSERT_EQ_INT(dm_ftrace_map_take(&cpu, map, nr, id, whole.size, &c), 0);
    }
    DM_ASSERT(compared >= 20);
    DM_ASSERT_EQ_U64(c.bad_pages, 0);
    DM_ASSERT_EQ_U64(c.bad_records, 0);
    /* An id past the mapping, a length past the sub-buffer. */
    DM_ASSERT_EQ_INT(dm_ftrace_map_take(&cpu, map, nr, nr, 16, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(dm_ftrace_map_take(&cpu, map, nr, 0, 4096, &c), DM_ECORRUPT);
    DM_ASSERT_EQ_U64(c.bad_pages, 2);
    free(map);
}

const struct dmt_case dm_suite_ftrace_page[] = {
    {"layout_from_kernel_headers", layout_from_kernel_headers},
    {"layout_refuses_other_entry_headers", layout_refuses_other_entry_headers},
    {"layout_refuses_wrapping_offsets", layout_refuses_wrapping_offsets},
    {"real_pages_4k_match_trace_text", real_pages_4k_match_trace_text},
    {"real_pages_8k_match_trace_text", real_pages_8k_match_trace_text},
    {"real_pages_with_time_extends_match_trace_text",
     real_pages_with_time_extends_match_trace_text},
    {"hand_deltas_extend_and_absolute", hand_deltas_extend_and_absolute},
    {"hand_absolute_takes_top_bits_from_page", hand_absolute_takes_top_bits_from_page},
    {"hand_padding_and_long_records", hand_padding_and_long_records},
    {"hand_missed_events", hand_missed_events},
    {"hand_truncated_and_nonsense", hand_truncated_and_nonsense},
    {"random_pages_never_read_past", random_pages_never_read_past},
    {"mapped_ring_growing_reader_matches_whole_pages",
     mapped_ring_growing_reader_matches_whole_pages},
    {NULL, NULL},
};
