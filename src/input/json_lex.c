/*
 * json_lex.c - the JSON pieces diskmon's json lines are made of (json_lex.h).
 */
#include <stddef.h>
#include <string.h>

#include "input/fields.h"
#include "input/json_lex.h"
#include "base/swar.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The bytes a plain string run stops at: its closing quote, an escape, a
 * control byte. */
static uint64_t string_stops(uint64_t w)
{
    return dm_swar_equal(w, '"') | dm_swar_equal(w, '\\') | dm_swar_below(w, 0x20);
}
#endif

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = (unsigned char)p[i];
        unsigned d = h >= '0' && h <= '9' ? h - '0'
                   : h >= 'a' && h <= 'f' ? h - 'a' + 10
                   : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 16;

        if (d == 16)
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* The code point of \uXXXX (a surrogate pair: both halves) at c->p, past
 * the backslash and the u. */
static int unicode_escape(struct dm_json *c, unsigned *cp)
{
    unsigned lo;

    if (c->end - c->p < 4 || hex4(c->p, cp) != 0)
        return -1;
    c->p += 4;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return -1;
    if (*cp < 0xD800 || *cp > 0xDBFF)
        return 0;
    if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || hex4(c->p + 2, &lo) != 0 ||
        lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    c->p += 6;
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    return 0;
}

/* cp as UTF-8 at d (room checked by the caller: 4 bytes); U+FFFD, which
 * the writer puts for a byte that is not UTF-8, as the byte 0xFF. */
static char *put_utf8(char *d, unsigned cp)
{
    if (cp == 0xFFFD) {
        *d++ = (char)0xFF;
    } else if (cp < 0x80) {
        *d++ = (char)cp;
    } else if (cp < 0x800) {
        *d++ = (char)(0xC0 | cp >> 6);
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *d++ = (char)(0xE0 | cp >> 12);
        *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *d++ = (char)(0xF0 | cp >> 18);
        *d++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *d++ = (char)(0x80 | (cp >> 6 & 0x3F));
        *d++ = (char)(0x80 | (cp & 0x3F));
    }
    return d;
}

/* The bytes put_utf8 writes for cp. */
static ptrdiff_t utf8_bytes(unsigned cp)
{
    return cp == 0xFFFD || cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* The escape at c->p (past its backslash) into *d, room checked against
 * limit. */
static int escape(struct dm_json *c, char **d, const char *limit)
{
    unsigned cp;
    unsigned char ch;

    if (c->p >= c->end)
        return -1;
    ch = (unsigned char)*c->p++;
    switch (ch) {
    case '"': case '\\': case '/': cp = ch; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
        if (unicode_escape(c, &cp) != 0 || cp == 0)
            return -1;
        break;
    default:
        return -1;
    }
    if (limit - *d < utf8_bytes(cp))
        return -1;
    *d = put_utf8(*d, cp);
    return 0;
}

int dm_json_raw(struct dm_json *c, const char **s, size_t *len)
{
    const char *q;

    if (c->p >= c->end || *c->p != '"')
        return -1;
    q = ++c->p;
    /* The plain bytes up to the closing quote: eight at a time while eight
     * are left, then one by one. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (c->end - q >= 8) {
        uint64_t w, m;

        w = dm_swar_load(q);
        m = string_stops(w);
        if (m != 0) {
            q += (unsigned)__builtin_ctzll(m) / 8;
            break;
        }
        q += 8;
    }
#endif
    while (q < c->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
        q++;
    if (q == c->end || *q != '"')
        return 1;
    *s = c->p;
    *len = (size_t)(q - c->p);
    c->p = q + 1;
    return 0;
}

int dm_json_string(struct dm_json *c, char *dst, size_t cap, size_t *len)
{
    const char *s;
    char *d = dst, *limit = dst + cap - 1;
    int rc = dm_json_raw(c, &s, len);

    if (rc < 0)
        return -1;
    if (rc == 0) { /* no escape: one copy */
        if (*len >= cap)
            return -1;
        memcpy(dst, s, *len);
        dst[*len] = '\0';
        return 0;
    }
    /* c->p is past the opening quote: go byte by byte with the escapes. */
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;

        if (ch == '"') {
            *d = '\0';
            *len = (size_t)(d - dst);
            return 0;
        }
        if (ch < 0x20)
            return -1;
        if (ch == '\\') {
            if (escape(c, &d, limit) != 0)
                return -1;
            continue;
        }
        if (d >= limit)
            return -1;
        *d++ = (char)ch;
    }
    return -1;
}

/* The bytes a JSON number is made of. */
static int number_byte(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
           ch == 'E';
}

int dm_json_number(struct dm_json *c, const char **p, size_t *len)
{
    const char *s = c->p;

    /* diskmon's numbers are digits and a dot: those first, cheaply */
    while (c->p < c->end && ((unsigned)(unsigned char)*c->p - '0' <= 9 || *c->p == '.'))
        c->p++;
    while (c->p < c->end && number_byte((unsigned char)*c->p))
        c->p++;
    *p = s;
    *len = (size_t)(c->p - s);
    return *len > 0 ? 0 : -1;
}

int dm_json_skip(struct dm_json *c)
{
    static const char *const words[] = {"true", "false", "null"};
    char buf[8];
    const char *p;
    size_t len;

    if (c->p < c->end && *c->p == '"') {
        /* escapes or not, any length: only whether it is a string */
        int rc = dm_json_raw(c, &p, &len);

        if (rc <= 0)
            return rc;
        while (c->p < c->end) {
            char *d = buf;
            unsigned char ch = (unsigned char)*c->p++;

            if (ch == '"')
                return 0;
            if (ch < 0x20 || (ch == '\\' && escape(c, &d, buf + sizeof buf) != 0))
                return -1;
        }
        return -1;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);

        if ((size_t)(c->end - c->p) >= n && memcmp(c->p, words[i], n) == 0) {
            c->p += n;
            return 0;
        }
    }
    return dm_json_number(c, &p, &len);
}

/* Days from 1970-01-01 to the civil date (proleptic Gregorian), for
 * time_utc: the count of days in whole 400-year eras since 0000-03-01
 * plus the day of the era, March first so that the leap day ends a year. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (format.c, put_json_utc) as ns since
 * 1970; -1 for anything else or a time before 1970. */
int dm_json_utc_ns(const char *s, size_t len, uint64_t *ns)
{
    static const char form[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ";
    uint64_t v[7] = {0};
    static const unsigned at[7] = {0, 5, 8, 11, 14, 17, 20}, width[7] = {4, 2, 2, 2, 2, 2, 9};
    int64_t days, secs;

    if (len != sizeof form - 1)
        return -1;
    for (size_t i = 0; i < len; i++)
        if (form[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != form[i])
            return -1;
    for (int k = 0; k < 7; k++)
        if (dm_field_u64(s + at[k], width[k], &v[k]) != 0)
            return -1;
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
        return -1;
    days = days_from_civil((int64_t)v[0], (unsigned)v[1], (unsigned)v[2]);
    secs = days * 86400 + (int64_t)(v[3] * 3600 + v[4] * 60 + v[5]);
    if (secs < 0)
        return -1;
    *ns = (uint64_t)secs * 1000000000u + v[6];
    return 0;
}

