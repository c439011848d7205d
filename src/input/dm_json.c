/*
 * dm_json.c - diskmon's own -f json lines read back (output/format.c writes
 * them; docs/output.md lists the keys): one flat object per line, keys in
 * any order, keys diskmon does not write skipped. sector and length follow
 * from offset and bytes and are only checked to be numbers. time_utc
 * (--utc) gives the wall clock of time 0, so the output's --clock and
 * --utc are the capture's own. A name's \ufffd (a byte that was not UTF-8,
 * escape.h) is read back as one such byte, 0xFF, so that writing json again
 * gives the same line.
 */
#include <stddef.h>
#include <string.h>

#include "input/fields.h"
#include "input/input.h"

/* Keys every row has (format.c, json_event); a row without one is
 * malformed. */
#define HAVE_TIME 0x01u
#define HAVE_DURATION 0x02u
#define HAVE_DISK 0x04u
#define HAVE_REQUEST 0x08u
#define HAVE_OFFSET 0x10u
#define HAVE_BYTES 0x20u
#define HAVE_ALL 0x3Fu

struct cursor {
    const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

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
static int unicode_escape(struct cursor *c, unsigned *cp)
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

/* A JSON string at c->p (its opening quote) into dst (cap bytes, NUL-
 * terminated; NULL: skipped): -1 when it is not one, does not fit or holds
 * a NUL. *len: its bytes. */
static int json_string(struct cursor *c, char *dst, size_t cap, size_t *len)
{
    char tmp[8], *d = dst != NULL ? dst : tmp, *start = d;
    char *limit = dst != NULL ? dst + cap - 1 : tmp + sizeof tmp;

    if (c->p >= c->end || *c->p != '"')
        return -1;
    c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p++;
        unsigned cp;

        if (dst == NULL)
            d = tmp;
        if (ch == '"') {
            *d = '\0';
            *len = (size_t)(d - start);
            return 0;
        }
        if (ch < 0x20)
            return -1;
        if (ch != '\\') {
            if (d >= limit)
                return -1;
            *d++ = (char)ch;
            continue;
        }
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
        if (limit - d < utf8_bytes(cp))
            return -1;
        d = put_utf8(d, cp);
    }
    return -1;
}

/* A number's text at c->p: its bytes, up to the next ',' '}' or blank. */
static int json_number(struct cursor *c, const char **p, size_t *len)
{
    const char *s = c->p;

    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' ||
                             *c->p == '-' || *c->p == '+' || *c->p == 'e' || *c->p == 'E'))
        c->p++;
    *p = s;
    *len = (size_t)(c->p - s);
    return *len > 0 ? 0 : -1;
}

/* Any value of a key diskmon does not write (a later version's): a string,
 * a number, true, false or null. */
static int skip_value(struct cursor *c)
{
    static const char *const words[] = {"true", "false", "null"};
    const char *p;
    size_t len;

    if (c->p < c->end && *c->p == '"')
        return json_string(c, NULL, 0, &len);
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i]);

        if ((size_t)(c->end - c->p) >= n && memcmp(c->p, words[i], n) == 0) {
            c->p += n;
            return 0;
        }
    }
    return json_number(c, &p, &len);
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
static int utc_ns(const char *s, size_t len, uint64_t *ns)
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

/* A 32-bit number's value. */
static int u32_of(const char *p, size_t len, uint32_t *v)
{
    uint64_t x;

    if (dm_field_u64(p, len, &x) != 0 || x > UINT32_MAX)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* 1 when the key is k. */
static int key_is(const char *key, size_t klen, const char *k)
{
    return dm_field_is(key, klen, k, 0);
}

/* A name key's string into dst; sets flag in the event when given. */
static int name_value(struct cursor *c, char *dst, size_t cap, struct dm_row *row,
                      uint16_t flag)
{
    size_t len;

    if (json_string(c, dst, cap, &len) != 0)
        return -1;
    row->ev.flags |= flag;
    return 0;
}

/* The file key: "..." first says the path was cut (its end kept). */
static int file_value(struct cursor *c, struct dm_row *row)
{
    size_t len;

    if (json_string(c, row->file, sizeof row->file, &len) != 0)
        return -1;
    row->ev.flags |= DM_EV_HAS_FILE;
    if (len >= 3 && memcmp(row->file, "...", 3) == 0) {
        memmove(row->file, row->file + 3, len - 2);
        row->ev.flags |= DM_EV_FILE_CUT;
    }
    return 0;
}

/* The string keys: disk (a name), request, flags, time_utc and the names. */
static int string_value(struct cursor *c, const char *key, size_t klen, struct dm_row *row,
                        unsigned *have)
{
    char word[64];
    size_t len;
    int rq;

    if (key_is(key, klen, "disk")) {
        *have |= HAVE_DISK;
        return json_string(c, row->disk_name, sizeof row->disk_name, &len) != 0 || len == 0
                   ? -1 : 0;
    }
    if (key_is(key, klen, "process"))
        return name_value(c, row->process, sizeof row->process, row, DM_EV_HAS_PROCESS);
    if (key_is(key, klen, "file"))
        return file_value(c, row);
    if (key_is(key, klen, "partition"))
        return name_value(c, row->partition, sizeof row->partition, row, 0);
    if (key_is(key, klen, "cgroup"))
        return name_value(c, row->cgroup, sizeof row->cgroup, row, 0);
    if (key_is(key, klen, "request")) {
        if (json_string(c, word, sizeof word, &len) != 0 || (rq = dm_field_request(word, len)) < 0)
            return -1;
        row->ev.request = (uint8_t)rq;
        *have |= HAVE_REQUEST;
        return 0;
    }
    if (key_is(key, klen, "flags")) {
        char flags[256];

        return json_string(c, flags, sizeof flags, &len) != 0 ||
                       dm_field_req_flags(flags, len, &row->ev.req_flags) != 0 ? -1 : 0;
    }
    if (key_is(key, klen, "time_utc"))
        return json_string(c, word, sizeof word, &len) != 0 ||
                       utc_ns(word, len, &row->start_wall_ns) != 0 ? -1 : 0;
    return skip_value(c);
}

/* The number keys. */
static int number_value(struct cursor *c, const char *key, size_t klen, struct dm_row *row,
                        unsigned *have)
{
    struct dm_event *ev = &row->ev;
    const char *p;
    size_t len;
    uint64_t x;
    uint32_t v;

    if (json_number(c, &p, &len) != 0)
        return -1;
    if (key_is(key, klen, "time")) {
        *have |= HAVE_TIME;
        return dm_field_fixed(p, len, 9, 1, &ev->time_ns);
    }
    if (key_is(key, klen, "duration_ms")) {
        *have |= HAVE_DURATION;
        return dm_field_fixed(p, len, 6, 1, &ev->duration_ns);
    }
    if (key_is(key, klen, "queue_ms")) {
        ev->flags |= DM_EV_HAS_QUEUE;
        return dm_field_fixed(p, len, 6, 1, &ev->queue_ns);
    }
    if (key_is(key, klen, "offset")) {
        *have |= HAVE_OFFSET;
        return dm_field_u64(p, len, &ev->byte_offset);
    }
    if (key_is(key, klen, "bytes")) {
        *have |= HAVE_BYTES;
        return u32_of(p, len, &ev->transfer_size);
    }
    if (key_is(key, klen, "disk")) {
        *have |= HAVE_DISK;
        return u32_of(p, len, &ev->disk);
    }
    if (key_is(key, klen, "pid")) {
        ev->flags |= DM_EV_HAS_PID;
        return u32_of(p, len, &ev->pid);
    }
    if (key_is(key, klen, "tid")) {
        ev->flags |= DM_EV_HAS_TID;
        return u32_of(p, len, &ev->tid);
    }
    if (key_is(key, klen, "irp_flags")) {
        ev->flags |= DM_EV_HAS_IRP_FLAGS;
        return u32_of(p, len, &ev->irp_flags);
    }
    if (key_is(key, klen, "priority")) {
        ev->flags |= DM_EV_HAS_PRIORITY;
        if (u32_of(p, len, &v) != 0 || v > UINT8_MAX)
            return -1;
        ev->priority = (uint8_t)v;
        return 0;
    }
    /* seq, sector, length and any later number: a number is all they need be. */
    return len <= 20 && (dm_field_u64(p, len, &x) == 0 || key[0] == '\0' ||
                         !(key_is(key, klen, "seq") || key_is(key, klen, "sector") ||
                           key_is(key, klen, "length"))) ? 0 : -1;
}

/* The value of key at c->p. */
static int json_value(struct cursor *c, const char *key, size_t klen, struct dm_row *row,
                      unsigned *have)
{
    if (c->p < c->end && *c->p == '"')
        return string_value(c, key, klen, row, have);
    if (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '-'))
        return number_value(c, key, klen, row, have);
    return skip_value(c);
}

static int json_parse(char *line, size_t len, struct dm_row *row)
{
    struct cursor c = {line, line + len};
    unsigned have = 0;

    skip_ws(&c);
    if (c.p == c.end || *c.p != '{')
        return DM_ROW_MALFORMED;
    c.p++;
    dm_row_reset(row);
    for (int first = 1;; first = 0) {
        char key[16];
        size_t klen;

        skip_ws(&c);
        if (c.p < c.end && *c.p == '}' && first) {
            c.p++;
            break;
        }
        if (json_string(&c, key, sizeof key, &klen) != 0) {
            /* A key longer than any of diskmon's: skip it and its value. */
            if (json_string(&c, NULL, 0, &klen) != 0)
                return DM_ROW_MALFORMED;
            key[0] = '\0';
            klen = 0;
        }
        skip_ws(&c);
        if (c.p == c.end || *c.p++ != ':')
            return DM_ROW_MALFORMED;
        skip_ws(&c);
        if (json_value(&c, key, klen, row, &have) != 0)
            return DM_ROW_MALFORMED;
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        return DM_ROW_MALFORMED;
    }
    skip_ws(&c);
    if (c.p != c.end || have != HAVE_ALL)
        return DM_ROW_MALFORMED;
    if (row->start_wall_ns != 0) { /* time_utc: the wall clock at time 0 */
        if (row->start_wall_ns < row->ev.time_ns)
            return DM_ROW_MALFORMED;
        row->start_wall_ns -= row->ev.time_ns;
    }
    return DM_ROW_OK;
}

/* The first line starts as diskmon's do: {"seq": */
static int json_sniff(const char *head, size_t len)
{
    static const char start[] = "{\"seq\":";
    size_t n;
    const char *line = dm_input_first_line(head, len, &n);

    return n >= sizeof start - 1 && memcmp(line, start, sizeof start - 1) == 0;
}

const struct dm_input_format dm_json_input = {
    .name = "json",
    .what = "diskmon -f json lines",
    .sniff = json_sniff,
    .has_files = 1,
    .parse = json_parse,
};
