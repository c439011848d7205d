/*
 * dm_kbuffer_check.c - diskmon's sub-buffer parser against libtraceevent's.
 *
 * A test program only (the product has no dependencies): it parses each
 * sub-buffer of the given files with libtraceevent's kbuffer (the parser
 * trace-cmd uses) and with ftrace_page.c, and checks that both find the
 * same records: same time stamp, same place in the page, same length. Then
 * the same on hand-made pages with the entry types the captured pages may
 * not hold (time extend, absolute time stamp, length in array[0], a
 * discarded event).
 *
 *   dm_kbuffer_check SUBBUF_SIZE FILE...   (exit 0 all agree, 1 otherwise)
 */
#include <kbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "linux/ftrace_page.h"

/* The layout events/header_page gives on x86-64 (tests/data). */
static struct dm_ftrace_layout layout = {0, 8, 8, 16, 4096};
static int failures;

/* Compare the two parsers on one sub-buffer; returns the records seen. */
static long compare_page(uint8_t *page, const char *what)
{
    struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
    struct dm_ftrace_counts c;
    struct dm_ftrace_page pg;
    struct dm_ftrace_record rec;
    unsigned long long kts;
    void *kdata;
    long n = 0;

    memset(&c, 0, sizeof c);
    if (kb == NULL || kbuffer_load_subbuffer(kb, page) != 0 ||
        dm_ftrace_page_open(&layout, page, layout.subbuf_size, &pg, &c) != 0) {
        printf("FAIL %s: a parser refused the page\n", what);
        failures++;
        kbuffer_free(kb);
        return 0;
    }
    kdata = kbuffer_read_event(kb, &kts);
    for (;;) {
        int rc = dm_ftrace_page_next(&pg, &rec, &c);

        if (rc != 1 || kdata == NULL) {
            if ((rc == 1) != (kdata != NULL)) {
                printf("FAIL %s: record %ld: diskmon %s, kbuffer %s\n", what, n,
                       rc == 1 ? "has one" : "has none", kdata ? "has one" : "has none");
                failures++;
            }
            break;
        }
        if (rec.ts != kts || rec.data != kdata ||
            (int)rec.len != kbuffer_event_size(kb)) {
            printf("FAIL %s: record %ld: diskmon ts %llu off %ld len %u; kbuffer ts %llu "
                   "off %ld len %d\n", what, n, (unsigned long long)rec.ts,
                   (long)(rec.data - page), (unsigned)rec.len, kts,
                   (long)((uint8_t *)kdata - page), kbuffer_event_size(kb));
            failures++;
            break;
        }
        n++;
        kdata = kbuffer_next_event(kb, &kts);
    }
    if (kbuffer_missed_events(kb) != 0 && c.missed_pages == 0) {
        printf("FAIL %s: kbuffer sees missed events, diskmon does not\n", what);
        failures++;
    }
    kbuffer_free(kb);
    return n;
}

static uint32_t hdr(uint32_t type_len, uint32_t delta)
{
    return type_len | (delta << 5);
}

/* Hand-made: data, time extend, a discarded event, data with length in
 * array[0], absolute time stamp, data. */
static long hand_page(void)
{
    uint8_t *page = calloc(1, layout.subbuf_size);
    uint32_t words[64], n = 0;
    uint64_t ts = 5000000, commit;
    long got;

    words[n++] = hdr(2, 10);
    words[n++] = 1;
    words[n++] = 0;
    words[n++] = hdr(30, 99);
    words[n++] = 4;
    words[n++] = hdr(29, 555);   /* 4 + array[0] = 16 bytes in all */
    words[n++] = 12;
    words[n++] = 0xdead;
    words[n++] = 0xdead;
    words[n++] = hdr(0, 7);
    words[n++] = 4 + 120;
    for (int i = 0; i < 30; i++)
        words[n++] = (uint32_t)i;
    words[n++] = hdr(31, 1234);
    words[n++] = 2;
    words[n++] = hdr(1, 3);
    words[n++] = 42;
    memcpy(page, &ts, 8);
    commit = n * 4;
    memcpy(page + 8, &commit, 8);
    memcpy(page + 16, words, n * 4);
    got = compare_page(page, "hand-made page");
    if (got != 3)
        printf("FAIL hand-made page: %ld records, want 3\n", got);
    free(page);
    return got;
}

int main(int argc, char **argv)
{
    long records = 0, pages = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: dm_kbuffer_check SUBBUF_SIZE FILE...\n");
        return 2;
    }
    layout.subbuf_size = (uint32_t)strtoul(argv[1], NULL, 10);
    for (int i = 2; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        uint8_t *page = malloc(layout.subbuf_size);

        if (f == NULL || page == NULL) {
            printf("FAIL cannot read %s\n", argv[i]);
            return 1;
        }
        while (fread(page, 1, layout.subbuf_size, f) == layout.subbuf_size) {
            records += compare_page(page, argv[i]);
            pages++;
        }
        fclose(f);
        free(page);
    }
    if (hand_page() != 3)
        failures += failures == 0;
    printf("%s: %ld records in %ld captured pages and 3 in a hand-made page agree with "
           "libtraceevent's kbuffer\n", failures ? "FAIL" : "ok", records, pages);
    return failures ? 1 : 0;
}
