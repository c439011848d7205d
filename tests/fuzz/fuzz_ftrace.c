/*
 * fuzz_ftrace.c - libFuzzer target: the ftrace layout parser and the
 * sub-buffer ("page") reader (src/linux/ftrace_page.h).
 *
 * Input: u16 length L, then L bytes of events/header_page text, then a
 * u16 sub-buffer size (0: the one header_page implies), then pages of that
 * size. Half the inputs (by the top bit of the size word) take the
 * kernel's own header_event text, so the page reader is reached often;
 * the others take the text that follows the size word up to a NUL. Every
 * record must lie inside its page and the counts must add up. Built and run
 * by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "linux/ftrace_page.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* events/header_event of Linux 6.x (docs/linux.md §4). */
static const char kernel_header_event[] =
    "# compressed entry header\n\ttype_len    :    5 bits\n"
    "\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n"
    "\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dm_ftrace_layout l;
    struct dm_ftrace_counts c;
    const char *event = kernel_header_event;
    size_t event_len = sizeof kernel_header_event - 1, at, page_len;
    uint32_t subbuf;
    char err[256];

    if (size < 4)
        return 0;
    page_len = (size_t)data[0] | (size_t)data[1] << 8;
    if (page_len > size - 4)
        return 0;
    at = 2 + page_len;
    subbuf = (uint32_t)data[at] | (uint32_t)(data[at + 1] & 0x7F) << 8;
    at += 2;
    if (!(data[at - 1] & 0x80)) {
        const uint8_t *nul = memchr(data + at, 0, size - at);

        event = (const char *)data + at;
        event_len = nul != NULL ? (size_t)(nul - (data + at)) : size - at;
        at += event_len + (nul != NULL);
    }
    if (dm_ftrace_layout_parse((const char *)data + 2, page_len, event, event_len,
                               subbuf, &l, err, sizeof err) != 0) {
        if (err[0] == '\0')
            abort(); /* a refusal says why */
        return 0;
    }
    if ((uint64_t)l.data_off + 4 >= l.subbuf_size ||
        (uint64_t)l.ts_off + 8 > l.data_off ||
        (uint64_t)l.commit_off + l.commit_size > l.data_off)
        abort(); /* an accepted layout fits in its page, in order */
    memset(&c, 0, sizeof c);
    while (size - at >= l.subbuf_size) {
        const uint8_t *page = data + at;
        struct dm_ftrace_page pg;
        struct dm_ftrace_record rec;
        uint64_t before = c.records;
        int rc;

        if (dm_ftrace_page_open(&l, page, l.subbuf_size, &pg, &c) == 0) {
            while ((rc = dm_ftrace_page_next(&pg, &rec, &c)) == 1) {
                if (rec.data < page || rec.data + rec.len > page + l.subbuf_size)
                    abort();
            }
            if (rc < 0 && dm_ftrace_page_next(&pg, &rec, &c) != 0)
                abort(); /* after a bad record the page is over */
        }
        if (c.records < before)
            abort();
        at += l.subbuf_size;
    }
    /* A short last piece is a truncated page. */
    if (size > at) {
        struct dm_ftrace_page pg;
        uint64_t bad = c.bad_pages;

        if (dm_ftrace_page_open(&l, data + at, size - at, &pg, &c) != DM_ECORRUPT ||
            c.bad_pages != bad + 1)
            abort();
    }
    return 0;
}
