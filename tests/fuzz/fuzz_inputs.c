/*
 * fuzz_inputs.c - libFuzzer target: -r's line formats (src/input) and the
 * time-order window.
 *
 * The input is split into lines as the line runner splits them (at LF,
 * each at most DM_LINE_BYTES). Every format's sniff sees the whole input;
 * every line formats' parse sees every line. Checked:
 *   - a parsed row's names are NUL-terminated inside their arrays, and the
 *     event's name pointers point at them;
 *   - diskmon's own json and csv: a row that parses, written again by
 *     output/format.c and parsed again, is written the same (the round
 *     trip docs/replay.md promises, on any row the parser takes);
 *   - every comma-separated piece of a line as a fixed-point number
 *     (dm_field_fixed, 0 to 19 decimals, strict or not) equals a plain
 *     reference here: digits, a point and digits, decimals past the
 *     kept ones cut (or refused when strict), a whole part of at most 20
 *     digits, the value in 64 bits, summed in 128;
 *   - the window (cap 1..64 rows, span from the first byte), fed every
 *     public row's time: each row comes out once, and rows out of time
 *     order are exactly the ones counted late.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "input/fields.h"
#include "input/input.h"
#include "input/lines.h"
#include "input/window.h"
#include "output/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct dm_input_format *const formats[] = {
    &dm_json_input, &dm_csv_input, &dm_systor_input, &dm_msr_input, &dm_tencent_input,
};

#define N_FORMATS (sizeof formats / sizeof formats[0])
#define WINDOW_MAX 64u

static void names_inside(const struct dm_row *r)
{
    if (memchr(r->disk_name, '\0', sizeof r->disk_name) == NULL ||
        memchr(r->process, '\0', sizeof r->process) == NULL ||
        memchr(r->file, '\0', sizeof r->file) == NULL ||
        memchr(r->partition, '\0', sizeof r->partition) == NULL ||
        memchr(r->cgroup, '\0', sizeof r->cgroup) == NULL || r->ev.disk_name != r->disk_name ||
        r->ev.process != r->process || r->ev.file != r->file ||
        r->ev.partition != r->partition || r->ev.cgroup != r->cgroup)
        abort();
}

/* dm_field_fixed's contract (fields.h) the slow, plain way: -1 or 0 and v. */
static int fixed_reference(const char *p, size_t len, unsigned digits, int strict,
                           uint64_t *v)
{
    unsigned __int128 x = 0;
    size_t i = 0, whole = 0, kept = 0, frac = 0;

    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++, whole++)
        x = x * 10 + (unsigned)(p[i] - '0');
    if (whole == 0 || whole > 20 || x > UINT64_MAX)
        return -1;
    if (i < len) {
        if (p[i++] != '.')
            return -1;
        for (; i < len; i++, frac++) {
            if (p[i] < '0' || p[i] > '9')
                return -1;
            if (kept < digits) {
                x = x * 10 + (unsigned)(p[i] - '0');
                kept++;
            }
        }
        if (frac == 0 || (strict && frac > digits))
            return -1;
    }
    for (; kept < digits; kept++)
        x *= 10;
    if (x > UINT64_MAX)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

/* Every comma-separated piece of the line through dm_field_fixed, at a
 * few precisions, against the reference. */
static void fixed_fields(const char *line, size_t len)
{
    static const unsigned precisions[] = {0, 3, 6, 9, 12, 19};
    size_t at = 0;

    while (at <= len) {
        const char *comma = memchr(line + at, ',', len - at);
        size_t n = comma != NULL ? (size_t)(comma - (line + at)) : len - at;

        for (size_t k = 0; k < sizeof precisions / sizeof precisions[0]; k++)
            for (int strict = 0; strict < 2; strict++) {
                uint64_t got = 0, want = 0;
                int rg = dm_field_fixed(line + at, n, precisions[k], strict, &got);
                int rw = fixed_reference(line + at, n, precisions[k], strict, &want);

                if (rg != rw || (rg == 0 && got != want))
                    abort();
            }
        at += n + 1;
    }
}

/* Write the row as fmt, parse that, write again: the same bytes. */
static void round_trip(const struct dm_input_format *in, enum dm_format fmt,
                       const struct dm_row *row)
{
    static char first[1 << 16], again[1 << 16];
    static struct dm_row back;
    struct dm_format_opts fo;
    size_t n1, n2;

    memset(&fo, 0, sizeof fo);
    fo.format = fmt;
    fo.show_file = 1;
    fo.queue = (row->ev.flags & DM_EV_HAS_QUEUE) != 0 && fmt == DM_FMT_CSV;
    n1 = dm_format_event(first, sizeof first, &fo, 1, &row->ev);
    while (n1 > 0 && (first[n1 - 1] == '\n' || first[n1 - 1] == '\r'))
        n1--;
    first[n1] = '\0';
    if (in->parse(first, n1, &back) != DM_ROW_OK)
        abort(); /* what diskmon writes, it reads */
    n1 = dm_format_event(first, sizeof first, &fo, 1, &row->ev);
    n2 = dm_format_event(again, sizeof again, &fo, 1, &back.ev);
    if (n1 != n2 || memcmp(first, again, n1) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char line[DM_LINE_BYTES + 1];
    static struct dm_row row;
    struct dm_window *w;
    struct dm_window_row wr, out;
    size_t at = 0, pushed = 0, popped = 0;
    uint64_t last = 0, late = 0;
    int any = 0;

    for (size_t f = 0; f < N_FORMATS; f++)
        (void)formats[f]->sniff((const char *)data, size < DM_SNIFF_BYTES ? size : DM_SNIFF_BYTES);
    (void)dm_input_sniff((const char *)data, size < DM_SNIFF_BYTES ? size : DM_SNIFF_BYTES);
    w = dm_window_create(size > 0 ? data[0] % WINDOW_MAX + 1 : 1,
                         size > 0 ? (uint64_t)data[0] << 20 : 0);
    if (w == NULL)
        return 0;
    memset(&wr, 0, sizeof wr);
    while (at < size) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl != NULL ? (size_t)(nl - (data + at)) : size - at;

        if (len <= DM_LINE_BYTES) {
            fixed_fields((const char *)data + at, len);
            for (size_t f = 0; f < N_FORMATS; f++) {
                memcpy(line, data + at, len);
                line[len] = '\0';
                if (formats[f]->parse(line, len, &row) != DM_ROW_OK)
                    continue;
                names_inside(&row);
                if (formats[f] == &dm_json_input)
                    round_trip(formats[f], DM_FMT_JSON, &row);
                else if (formats[f] == &dm_csv_input)
                    round_trip(formats[f], DM_FMT_CSV, &row);
                else {
                    wr.time_ns = row.ev.time_ns;
                    while (dm_window_pop(w, &out, 0)) {
                        late += any && out.time_ns < last;
                        if (!(any && out.time_ns < last))
                            last = out.time_ns;
                        any = 1;
                        popped++;
                    }
                    dm_window_push(w, &wr);
                    pushed++;
                }
            }
        }
        at += len + 1;
    }
    while (dm_window_pop(w, &out, 1)) {
        late += any && out.time_ns < last;
        if (!(any && out.time_ns < last))
            last = out.time_ns;
        any = 1;
        popped++;
    }
    if (popped != pushed || late != dm_window_late(w))
        abort();
    dm_window_destroy(w);
    return 0;
}
