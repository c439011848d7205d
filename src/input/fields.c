/*
 * fields.c - CSV fields, numbers and diskmon's words for the line formats
 * (fields.h). Every parser takes the whole field or nothing: a row that a
 * writer cut or damaged is malformed, never half read.
 */
#include <string.h>

#include "base/swar.h"
#include "diskmon.h"
#include "input/fields.h"
#include "input/input.h"
#include "output/digits.h"

void dm_row_reset(struct dm_row *row)
{
    memset(&row->ev, 0, sizeof row->ev);
    row->start_wall_ns = 0;
    row->disk_name[0] = row->process[0] = row->file[0] = '\0';
    row->partition[0] = row->cgroup[0] = '\0';
    row->ev.disk_name = row->disk_name;
    row->ev.process = row->process;
    row->ev.file = row->file;
    row->ev.partition = row->partition;
    row->ev.cgroup = row->cgroup;
}

int dm_sniff_parse(const char *head, size_t len,
                   int (*parse)(char *line, size_t len, struct dm_row *row))
{
    char line[DM_SNIFF_BYTES + 1];
    struct dm_row row;
    size_t n;
    const char *first = dm_input_first_line(head, len, &n);

    if (n == 0 || n > DM_SNIFF_BYTES)
        return 0;
    memcpy(line, first, n);
    line[n] = '\0';
    return parse(line, n, &row) != DM_ROW_MALFORMED;
}

int dm_csv_split(char *line, size_t len, struct dm_csv_field *f, int max)
{
    char *p = line, *end = line + len;
    int n = 0;

    for (;;) {
        if (n == max)
            return -1;
        if (p < end && *p == '"') {
            char *w = ++p, *start = p;

            for (;;) {
                if (p == end)
                    return -1; /* the quote is not closed */
                if (*p == '"') {
                    if (p + 1 < end && p[1] == '"') {
                        *w++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *w++ = *p++;
            }
            f[n].p = start;
            f[n].len = (size_t)(w - start);
            n++;
            if (p == end)
                return n;
            if (*p != ',')
                return -1; /* text after the closing quote */
            p++;
            continue;
        }
        {
            char *comma = memchr(p, ',', (size_t)(end - p));

            f[n].p = p;
            if (comma == NULL) {
                f[n].len = (size_t)(end - p);
                return n + 1;
            }
            f[n].len = (size_t)(comma - p);
            n++;
            p = comma + 1;
        }
    }
}

/* 8 ASCII digits in w (loaded little-endian: the first digit in the low
 * byte) as their value, or -1 when one is not a digit. SWAR: the digits'
 * values in each byte, then pairs, fours and the eight combined with three
 * multiplies (each step weights the earlier half by 10^k). */
static int64_t eight_digits(uint64_t w)
{
    uint64_t v = w - UINT64_C(0x3030303030303030);

    /* a byte below '0' borrows (its top bit set); above '9', adding 6
     * carries into bit 4 of the byte */
    if (((v | (v + UINT64_C(0x0606060606060606))) & UINT64_C(0xF0F0F0F0F0F0F0F0)) != 0)
        return -1;
    v = (v * 10 + (v >> 8)) & UINT64_C(0x00FF00FF00FF00FF);
    v = (v * 100 + (v >> 16)) & UINT64_C(0x0000FFFF0000FFFF);
    v = (v * 10000 + (v >> 32)) & UINT64_C(0x00000000FFFFFFFF);
    return (int64_t)v;
}


int dm_field_u64(const char *p, size_t len, uint64_t *v)
{
    uint64_t x = 0;
    size_t i = 0;

    /* 19 digits always fit in 64 bits; only a 20th may overflow, so the
     * check is made once, not per digit (the public traces' hot path). */
    if (len == 0 || len > 20)
        return -1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; len - i >= 8 && i + 8 <= 16; i += 8) {
        int64_t e = eight_digits(dm_swar_load(p + i));

        if (e < 0)
            return -1;
        x = x * 100000000u + (uint64_t)e;
    }
#endif
    for (; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)p[i] - '0';

        if (d > 9)
            return -1;
        if (i == 19 && x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* dm_field_fixed where the value may not fit: each part read and checked
 * for overflow on its own (a field of more than 19 digits in all). */
static int fixed_checked(const char *p, size_t len, unsigned digits, int strict, uint64_t *v)
{
    const char *dot = memchr(p, '.', len);
    size_t ilen = dot != NULL ? (size_t)(dot - p) : len;
    uint64_t whole, frac = 0, scale = dm_pow10_u64[digits];

    if (dm_field_u64(p, ilen, &whole) != 0 || whole > UINT64_MAX / scale)
        return -1;
    if (dot != NULL) {
        const char *f = dot + 1;
        size_t flen = len - ilen - 1, take = flen < digits ? flen : digits;

        if (flen == 0 || (flen > digits && strict) ||
            (take > 0 && dm_field_u64(f, take, &frac) != 0))
            return -1;
        frac *= dm_pow10_u64[digits - take];
        for (size_t k = take; k < flen; k++) /* cut, but still digits */
            if ((unsigned)(unsigned char)f[k] - '0' > 9)
                return -1;
    }
    if (whole * scale > UINT64_MAX - frac)
        return -1;
    *v = whole * scale + frac;
    return 0;
}

/* Fewer digits than this, whole part and kept decimals together, cannot
 * overflow: 10^19 - 1 < 2^64 - 1. */
#define FIXED_FAST_DIGITS 19

/*
 * One pass, integers only (SYSTOR's two decimal fields a row are the
 * public traces' hot path): the whole part's digits (eight at a time
 * where eight are there), then up to digits decimals, go into one number
 * as if the point were not there, which the missing decimals then scale.
 * A field of more digits than can be summed so takes the checked path.
 */
int dm_field_fixed(const char *p, size_t len, unsigned digits, int strict, uint64_t *v)
{
    const char *q = p, *end = p + len;
    uint64_t x = 0;
    size_t take;

    if (digits >= sizeof dm_pow10_u64 / sizeof dm_pow10_u64[0])
        return -1;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len >= 8) {
        int64_t e = eight_digits(dm_swar_load(p));

        if (e >= 0) {
            x = (uint64_t)e;
            q += 8;
        }
    }
#endif
    for (; q < end && (unsigned)(unsigned char)*q - '0' <= 9; q++)
        x = x * 10 + (unsigned)(unsigned char)*q - '0';
    if (q == p || (size_t)(q - p) + digits > FIXED_FAST_DIGITS)
        return q == p ? -1 : fixed_checked(p, len, digits, strict, v);
    if (q == end) { /* no decimals */
        *v = x * dm_pow10_u64[digits];
        return 0;
    }
    if (*q++ != '.' || q == end || ((size_t)(end - q) > digits && strict))
        return -1;
    take = (size_t)(end - q) < digits ? (size_t)(end - q) : digits;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* 1 to 7 decimals, all kept, in a field of 8 bytes or more: the
     * field's last 8 bytes, with '0's over the bytes before the decimals
     * (the low bytes, loaded little-endian), are the decimals as 8 digits. */
    if (take == (size_t)(end - q) && take < 8 && len >= 8) {
        uint64_t before = (UINT64_C(1) << (8 * (8 - take))) - 1;
        uint64_t w = (dm_swar_load(end - 8) & ~before) |
                     (UINT64_C(0x3030303030303030) & before);
        int64_t e;

        if ((e = eight_digits(w)) < 0)
            return -1;
        *v = (x * dm_pow10_u64[take] + (uint64_t)e) * dm_pow10_u64[digits - take];
        return 0;
    }
#endif
    for (size_t k = 0; k < take; k++, q++) {
        unsigned d = (unsigned)(unsigned char)*q - '0';

        if (d > 9)
            return -1;
        x = x * 10 + d;
    }
    for (; q < end; q++) /* cut, but still digits */
        if ((unsigned)(unsigned char)*q - '0' > 9)
            return -1;
    *v = x * dm_pow10_u64[digits - take];
    return 0;
}

int dm_field_name(char *dst, size_t cap, const char *p, size_t len)
{
    if (len >= cap || memchr(p, '\0', len) != NULL)
        return -1;
    memcpy(dst, p, len);
    dst[len] = '\0';
    return 0;
}

static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

int dm_field_is(const char *p, size_t len, const char *word, int nocase)
{
    size_t n = strlen(word);

    if (len != n)
        return 0;
    if (!nocase)
        return memcmp(p, word, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)p[i]) != lower((unsigned char)word[i]))
            return 0;
    return 1;
}

int dm_field_request(const char *p, size_t len)
{
    for (int r = 0; r < DM_REQ_COUNT; r++)
        if (dm_field_is(p, len, dm_request_names[r], 0))
            return r;
    return -1;
}

int dm_field_req_flags(const char *p, size_t len, uint16_t *flags)
{
    const char *end = p + len;

    *flags = 0;
    while (p < end) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        size_t n = bar != NULL ? (size_t)(bar - p) : (size_t)(end - p);
        int i;

        for (i = 0; i < DM_RQ_COUNT; i++)
            if (dm_field_is(p, n, dm_req_flag_names[i], 0))
                break;
        if (i == DM_RQ_COUNT)
            return -1;
        *flags |= (uint16_t)(1u << i);
        p += n + (bar != NULL);
        if (bar != NULL && p == end)
            return -1; /* a trailing '|' */
    }
    return 0;
}

/* The UTF-8 byte order mark a Windows editor may put first. */
#define UTF8_BOM "\xEF\xBB\xBF"

const char *dm_input_first_line(const char *head, size_t len, size_t *line_len)
{
    const char *nl;

    if (len >= 3 && memcmp(head, UTF8_BOM, 3) == 0) {
        head += 3;
        len -= 3;
    }
    nl = memchr(head, '\n', len);
    *line_len = nl != NULL ? (size_t)(nl - head) : len;
    if (*line_len > 0 && head[*line_len - 1] == '\r')
        (*line_len)--;
    return head;
}
