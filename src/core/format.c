/*
 * format.c - text, CSV and JSON lines. Column widths of the text format are
 * in one table so the header and the rows cannot drift apart.
 *
 * The event writers append through a char pointer with no bounds checks of
 * their own: dm_format_event_fit first makes sure the buffer holds the
 * line's upper bound (FIXED_MAX for everything but the names, ESCAPE_MAX
 * bytes per name byte, and SLACK). Inside that bound they also store past
 * the line's final end on purpose: a padded column is a 16-byte block of
 * blanks with the value written over it, digits go out as 8-byte blocks,
 * and the name scanners store 8 or 16 bytes before they know how many of
 * them are plain (only while that many bytes of the name are left, so
 * within the name's own share of the bound). The header and the --clock
 * date (once a second) use snprintf; nothing per event does.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/format.h"
#include "core/tz.h"

#define NS_PER_US 1000u
#define NS_PER_MS 1000000u
#define NS_PER_SEC 1000000000u
#define US_PER_SEC 1000000u
#define SECTOR_BYTES 512u /* DiskMon's Sector and Length unit */

/* Text column widths; a negative width is left-aligned (printf's rule). */
enum {
    W_SEQ = 7,
    W_TIME = 12,
    W_CLOCK = 15, /* HH:MM:SS.uuuuuu */
    W_DURATION = 10,
    W_DISK = -8,
    W_REQUEST = -7,
    W_SECTOR = 12,
    W_LENGTH = 6,
    W_PID = 7,
    W_PROCESS = -16
};

/* The padding block: every width above fits in it. */
#define BLANKS_LEN 16
static const char blanks[BLANKS_LEN + 1] = "                ";

/*
 * The widest a line can be apart from its names: json with every key, each
 * number at 20 digits (a uint64_t), seconds at 11 digits plus 9 decimals,
 * time_utc with a 6-digit year, comes to about 400 bytes; text and csv are
 * shorter. Rounded up generously.
 */
#define FIXED_MAX 640
/* The most one byte of a name becomes: a control byte as \u00XX (json). */
#define ESCAPE_MAX 6
/* Stores past the end of the last field: a blank block (16 bytes) or a
 * digit block (8), counted twice over. */
#define SLACK (2 * BLANKS_LEN + 8)

/* The word scans below (names 8 bytes at a time) need the first byte in
 * memory in the lowest bits of a word: true on every target diskmon builds
 * for (x86, x64, ARM64). A big-endian build takes the byte-by-byte path. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WORD_SCAN 0
#else
#define WORD_SCAN 1
#endif

/* ---- numbers ------------------------------------------------------------- */

/* The number writers are a few instructions each and called a dozen times
 * per line: a call would cost as much as the work. */
#if defined(__GNUC__) || defined(__clang__)
#define INLINE inline __attribute__((always_inline))
#else
#define INLINE inline
#endif

/* "00".."99": two digits per division by 100. */
static const char digit_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* 10^0 .. 10^19: the powers a uint64_t can hold. */
static const uint64_t pow10_u64[20] = {
    UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
    UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000),
    UINT64_C(1000000000), UINT64_C(10000000000), UINT64_C(100000000000),
    UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
    UINT64_C(1000000000000000), UINT64_C(10000000000000000),
    UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
    UINT64_C(10000000000000000000),
};

/* Decimal digits of v (1 for 0). From the bit length: with t = bits *
 * log10(2) rounded down (1233 / 4096 is log10(2) to 4 digits), v has t or
 * t + 1 digits, and one comparison with 10^t says which ("Bit Twiddling
 * Hacks", integer log base 10). */
static INLINE unsigned dec_len(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    unsigned t = (bits * 1233u) >> 12;

    return t + 1 - ((v | 1) < pow10_u64[t]);
#else
    unsigned n = 1;

    while (n < 20 && v >= pow10_u64[n])
        n++;
    return n;
#endif
}

/* Exactly 8 digits of v < 10^8, as two independent halves of 4. (Paul
 * Khuong's all-in-one-register method was tried: no fewer instructions.) */
static INLINE void put8(char *q, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;

    memcpy(q, digit_pairs + 2 * (hi / 100), 2);
    memcpy(q + 2, digit_pairs + 2 * (hi % 100), 2);
    memcpy(q + 4, digit_pairs + 2 * (lo / 100), 2);
    memcpy(q + 6, digit_pairs + 2 * (lo % 100), 2);
}

/* The last n <= 8 digits of v < 10^n at p, and 8 - n blanks after them:
 * built in a scratch buffer and copied as one 8-byte block. */
static INLINE void put_upto8(char *p, uint32_t v, unsigned n)
{
    char tmp[16];

    memcpy(tmp + 8, blanks, 8);
    if (n <= 4) { /* the common small ones (pid, length, seconds): half the work */
        uint32_t h = v / 100;

        memcpy(tmp + 4, digit_pairs + 2 * h, 2);
        memcpy(tmp + 6, digit_pairs + 2 * (v - h * 100), 2);
    } else {
        put8(tmp, v);
    }
    memcpy(p, tmp + 8 - n, 8);
}

/* v < 10^n as exactly n decimal digits (zero-padded); returns the end.
 * Also stores up to 8 bytes past the end (allowed, see the top). The
 * 64-bit division only peels off 8 digits at a time. */
static INLINE char *put_digits(char *p, uint64_t v, unsigned n)
{
    char *end = p + n;

    if (n > 8) {
        uint64_t high = v / 100000000u;
        uint32_t low = (uint32_t)(v - high * 100000000u);

        if (n > 16) {
            uint32_t top = (uint32_t)(high / 100000000u);

            put_upto8(p, top, n - 16);
            p += n - 16;
            put8(p, (uint32_t)(high - (uint64_t)top * 100000000u));
            p += 8;
        } else {
            put_upto8(p, (uint32_t)high, n - 8);
            p += n - 8;
        }
        put8(p, low);
        return end;
    }
    put_upto8(p, (uint32_t)v, n);
    return end;
}

static INLINE char *put_u64(char *p, uint64_t v)
{
    return put_digits(p, v, dec_len(v));
}

/* v right-aligned in width (<= BLANKS_LEN); wider values are not cut. */
static INLINE char *put_u64_right(char *p, unsigned width, uint64_t v)
{
    unsigned n = dec_len(v);

    memcpy(p, blanks, BLANKS_LEN);
    if (n < width)
        p += width - n;
    return put_digits(p, v, n);
}

/* The decimals of a fixed-point number: f < 10^digits, digits 6 or 9 (a
 * constant where this is inlined, so one branch of it remains). */
static INLINE char *put_frac(char *p, uint32_t f, unsigned digits)
{
    uint32_t hi, lo;

    if (digits == 9) {
        uint32_t first = f / 100000000u;

        *p++ = (char)('0' + first);
        put8(p, f - first * 100000000u);
        return p + 8;
    }
    hi = f / 10000;
    lo = f - hi * 10000;
    memcpy(p, digit_pairs + 2 * hi, 2);
    memcpy(p + 2, digit_pairs + 2 * (lo / 100), 2);
    memcpy(p + 4, digit_pairs + 2 * (lo % 100), 2);
    return p + 6;
}

/* whole.frac, frac zero-padded to digits (6 or 9) places, right-aligned in
 * width (0: no padding). */
static INLINE char *put_fixed(char *p, unsigned width, uint64_t whole, uint32_t frac,
                              unsigned digits)
{
    unsigned n = dec_len(whole);

    if (width != 0) {
        memcpy(p, blanks, BLANKS_LEN);
        if (n + 1 + digits < width)
            p += width - (n + 1 + digits);
    }
    p = put_digits(p, whole, n);
    *p++ = '.';
    return put_frac(p, frac, digits);
}

/* ns as seconds with 6 decimals, rounded to the nearest microsecond. The
 * sum wraps within 500 ns of UINT64_MAX, as it always has. */
static INLINE char *put_sec6(char *p, unsigned width, uint64_t ns)
{
    uint64_t us = (ns + NS_PER_US / 2) / NS_PER_US;

    return put_fixed(p, width, us / US_PER_SEC, (uint32_t)(us % US_PER_SEC), 6);
}

/* ns as seconds with 9 decimals: exact. */
static INLINE char *put_sec9(char *p, uint64_t ns)
{
    return put_fixed(p, 0, ns / NS_PER_SEC, (uint32_t)(ns % NS_PER_SEC), 9);
}

/* ns as milliseconds with 6 decimals: exact. */
static INLINE char *put_ms6(char *p, uint64_t ns)
{
    return put_fixed(p, 0, ns / NS_PER_MS, (uint32_t)(ns % NS_PER_MS), 6);
}

/* s (len bytes) left-aligned in width (<= BLANKS_LEN); longer s not cut. */
static INLINE char *put_left(char *p, unsigned width, const char *s, size_t len)
{
    memcpy(p, blanks, BLANKS_LEN);
    memcpy(p, s, len);
    return p + (len < width ? width : len);
}

static INLINE char *put_lit(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

/* A string literal and its length, for put_lit. */
#define LIT(s) s, sizeof s - 1

/* ---- the clock (--clock, --utc) ------------------------------------------ */

/* What a struct dm_clock_cache holds. */
enum { CLOCK_TEXT = 1, CLOCK_CSV, CLOCK_JSON_UTC };

/* The civil time of wall_secs in the clock --clock/--utc asked for: UTC, the
 * time zone the trace recorded, or (live) the OS's local time. */
static int civil_of(const struct dm_format_opts *fo, int64_t wall_secs, struct dm_civil *c)
{
    struct tm *tm;
    time_t t;

    if (fo->utc || fo->tz.valid) {
        int32_t bias = fo->utc ? 0 : dm_tz_bias_minutes(&fo->tz, wall_secs);

        dm_civil_from_seconds(wall_secs - (int64_t)bias * 60, c);
        return 0;
    }
    t = (time_t)wall_secs;
    /* localtime() is not reentrant, but only the printer thread formats. */
    tm = localtime(&t);
    if (tm == NULL)
        return -1;
    c->year = tm->tm_year + 1900;
    c->month = tm->tm_mon + 1;
    c->day = tm->tm_mday;
    c->hour = tm->tm_hour;
    c->minute = tm->tm_min;
    c->second = tm->tm_sec;
    return 0;
}

/* Work out the text of second secs for kind; once per second. */
static void clock_fill(struct dm_clock_cache *cc, const struct dm_format_opts *fo,
                       int64_t secs, int kind)
{
    struct dm_civil c;
    int n;

    cc->secs = secs;
    cc->kind = kind;
    cc->len = 0;
    if (kind == CLOCK_JSON_UTC)
        dm_civil_from_seconds(secs, &c);
    else if (civil_of(fo, secs, &c) != 0) {
        cc->ok = 0;
        return;
    }
    cc->ok = 1;
    if (kind == CLOCK_TEXT)
        n = snprintf(cc->text, sizeof cc->text, "%02d:%02d:%02d", c.hour, c.minute,
                     c.second);
    else
        n = snprintf(cc->text, sizeof cc->text, "%04d-%02d-%02d%c%02d:%02d:%02d", c.year,
                     c.month, c.day, kind == CLOCK_CSV ? ' ' : 'T', c.hour, c.minute,
                     c.second);
    if (n > 0)
        cc->len = (size_t)n < sizeof cc->text ? (size_t)n : sizeof cc->text - 1;
}

/* The second's text for kind, from the cache when it has it. */
static const struct dm_clock_cache *clock_text(const struct dm_format_opts *fo,
                                               struct dm_clock_cache *local,
                                               int64_t secs, int kind)
{
    struct dm_clock_cache *cc = fo->clock_cache != NULL ? fo->clock_cache : local;

    kind |= fo->utc << 4; /* a stale cache from before --utc changed is refilled */
    if (cc == local || cc->kind != kind || cc->secs != secs)
        clock_fill(cc, fo, secs, kind & 0xf);
    cc->kind = kind;
    return cc;
}

/* Wall-clock time of an event, to the microsecond, right-aligned in width:
 * text HH:MM:SS.uuuuuu, csv with the date in front. "?" when the OS has no
 * civil time for it. */
static char *put_clock(char *p, unsigned width, const struct dm_format_opts *fo,
                       const struct dm_event *ev, int kind)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    uint64_t us = (wall % NS_PER_SEC + NS_PER_US / 2) / NS_PER_US;
    int64_t secs = (int64_t)(wall / NS_PER_SEC);
    struct dm_clock_cache local;
    const struct dm_clock_cache *cc;
    size_t total;

    if (us == US_PER_SEC) { /* rounding carried into the next second */
        secs++;
        us = 0;
    }
    cc = clock_text(fo, &local, secs, kind);
    total = cc->ok ? cc->len + 7 : 1;
    if (width != 0) {
        memcpy(p, blanks, BLANKS_LEN);
        if (total < width)
            p += width - total;
    }
    if (!cc->ok) {
        *p++ = '?';
        return p;
    }
    p = put_lit(p, cc->text, cc->len);
    *p++ = '.';
    return put_frac(p, (uint32_t)us, 6);
}

/* ,"time_utc":"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (RFC 3339), exact. */
static char *put_json_utc(char *p, const struct dm_format_opts *fo,
                          const struct dm_event *ev)
{
    uint64_t wall = fo->start_wall_ns + ev->time_ns;
    struct dm_clock_cache local;
    const struct dm_clock_cache *cc =
        clock_text(fo, &local, (int64_t)(wall / NS_PER_SEC), CLOCK_JSON_UTC);

    p = put_lit(p, LIT(",\"time_utc\":\""));
    p = put_lit(p, cc->text, cc->len);
    *p++ = '.';
    p = put_frac(p, (uint32_t)(wall % NS_PER_SEC), 9);
    return put_lit(p, LIT("Z\""));
}

/* ---- names: a word at a time --------------------------------------------- */

/*
 * SWAR ("SIMD within a register") tests on 8 bytes at once. zero_bytes(x)
 * marks (0x80) each byte of x that is zero; bytes_below(x, n), n <= 0x80,
 * each byte below n. Both are exact as to whether any byte is marked, and
 * the lowest marked byte is exact (a borrow only runs towards higher bytes,
 * so false marks appear only above a true one). With words loaded from
 * memory little-endian, the lowest byte is the first one in the string.
 */
#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

static uint64_t bytes_below(uint64_t x, unsigned n)
{
    return (x - ONES * n) & ~x & HIGHS;
}

static uint64_t bytes_equal(uint64_t x, unsigned char c)
{
    return bytes_below(x ^ (ONES * c), 1);
}

static uint64_t load8(const char *s)
{
    uint64_t w;

    memcpy(&w, s, sizeof w);
    return w;
}

/* Bytes a CSV field must be quoted for (RFC 4180). */
static uint64_t csv_marks(uint64_t w)
{
    return bytes_equal(w, ',') | bytes_equal(w, '"') | bytes_equal(w, '\r') |
           bytes_equal(w, '\n');
}

/* Bytes that may be one of csv_marks': all four are at most ','. A cheap
 * first test (paths seldom hold bytes below ','); csv_marks decides. */
static uint64_t csv_maybe(uint64_t w)
{
    return bytes_below(w, ',' + 1);
}

/* Bytes a JSON string may not hold as they are: control characters, quote,
 * backslash, and anything not ASCII (checked as UTF-8 one by one); also
 * space and '!', which share the cheap test for "below '\"' + 1" and which
 * the byte step then copies as they are. (b - n) | b has its top bit set
 * for b < n and for b >= 0x80, with a borrow running up as in
 * bytes_below. */
static uint64_t json_marks(uint64_t w)
{
    return (((w - ONES * ('"' + 1)) | w) & HIGHS) | bytes_equal(w, '\\');
}


/*
 * Where the CPU has SSE2 (every x64, and x86 builds that enable it), 16
 * bytes at a time: one compare per kind of byte gives an exact mask, one
 * bit per byte. A CPU feature, not an OS difference; the word scan above
 * stays for other CPUs and for the last 8 to 15 bytes.
 */
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define BLOCK_SCAN 1

static INLINE unsigned first_bit(unsigned m)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctz(m);
#else
    unsigned k = 0;

    while ((m & 1) == 0) {
        m >>= 1;
        k++;
    }
    return k;
#endif
}

/* Bit k set: byte k of the 16 is a control byte, not ASCII (a signed
 * compare: those are negative), a quote or a backslash. */
static INLINE unsigned json_block_marks(__m128i v)
{
    __m128i low_or_high = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(low_or_high, _mm_or_si128(quote, backslash)));
}

/* Bit k set: byte k is one a CSV field is quoted for. */
static INLINE unsigned csv_block_marks(__m128i v)
{
    __m128i a = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(',')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    __m128i b = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(a, b));
}
#else
#define BLOCK_SCAN 0
#endif

/* Index of the first marked byte of a nonzero mask (little-endian). */
static unsigned first_marked(uint64_t m)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(m) / 8;
#else
    unsigned k = 0;

    while ((m & 0x80) == 0) {
        m >>= 8;
        k++;
    }
    return k;
#endif
}

/*
 * The next piece of s (len bytes, from i) as one word, for the scanners:
 * 8 bytes from i while there are, then, for a string of 8 bytes or more,
 * its last 8 bytes shifted so the ones not seen yet come first, with
 * *take saying how many bytes of the word are the string's. Never reads
 * outside s. Returns 0 when s is shorter than 8 bytes (then byte by byte).
 */
static INLINE int next_word(const char *s, size_t len, size_t i, uint64_t *w,
                            size_t *take)
{
    if (!WORD_SCAN || len < 8)
        return 0;
    if (len - i >= 8) {
        *w = load8(s + i);
        *take = 8;
    } else {
        *take = len - i;
        *w = load8(s + len - 8) >> (8 * (8 - *take));
    }
    return 1;
}

/* Marks of the bytes of w that are the string's (the first take). */
static INLINE uint64_t own_marks(uint64_t m, size_t take)
{
    return take == 8 ? m : m & ((UINT64_C(1) << (8 * take)) - 1);
}

/* A CSV field: prefix (no special bytes) and s (len bytes), quoted with
 * quotes doubled when s holds a comma, quote or line break. */
static char *csv_field(char *p, const char *prefix, size_t plen, const char *s,
                       size_t len)
{
    char *start = p;
    size_t i = 0, take;
    uint64_t w;

    p = put_lit(p, prefix, plen);
    if (next_word(s, len, 0, &w, &take)) {
        while (i < len) {
#if BLOCK_SCAN
            if (len - i >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));

                if (csv_block_marks(v) != 0)
                    goto quoted;
                _mm_storeu_si128((__m128i *)(void *)p, v);
                p += 16;
                i += 16;
                continue;
            }
#endif
            next_word(s, len, i, &w, &take);
            if (own_marks(csv_maybe(w), take) != 0 && own_marks(csv_marks(w), take) != 0)
                goto quoted;
            memcpy(p, &w, 8);
            p += take;
            i += take;
        }
        return p;
    }
    for (; i < len; i++) {
        char c = s[i];

        if (c == ',' || c == '"' || c == '\r' || c == '\n')
            goto quoted;
        *p++ = c;
    }
    return p;
quoted:
    p = start;
    *p++ = '"';
    p = put_lit(p, prefix, plen);
    for (i = 0; i < len; i++) {
        if (s[i] == '"')
            *p++ = '"';
        *p++ = s[i];
    }
    *p++ = '"';
    return p;
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. Stops at
 * the terminating NUL, which is no continuation byte. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A JSON string (RFC 8259) of prefix (plain ASCII) and s (len bytes, NUL
 * after them): quotes, backslashes and control characters escaped; a byte
 * that is not valid UTF-8 becomes U+FFFD so the line stays valid JSON
 * whatever a process named itself. Plain runs go 8 bytes at a time (Windows
 * paths: a backslash every 10 bytes or so). */
static char *json_field(char *p, const char *prefix, size_t plen, const char *str,
                        size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, take;
    uint64_t w;

    *p++ = '"';
    p = put_lit(p, prefix, plen);
    while (i < len) {
        unsigned char c;

#if BLOCK_SCAN
        if (len - i >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(str + i));
            unsigned m = json_block_marks(v);

            _mm_storeu_si128((__m128i *)(void *)p, v);
            if (m == 0) {
                p += 16;
                i += 16;
                continue;
            }
            p += first_bit(m);
            i += first_bit(m);
        } else
#endif
        if (next_word(str, len, i, &w, &take)) {
            uint64_t m = own_marks(json_marks(w), take);

            memcpy(p, &w, 8);
            if (m == 0) {
                p += take;
                i += take;
                continue;
            }
            p += first_marked(m);
            i += first_marked(m);
        }
        c = s[i];
        if (c == '\\' || c == '"') { /* a path's backslashes first */
            p[0] = '\\';
            p[1] = (char)c;
            p += 2;
            i++;
        } else if (c >= 0x20 && c < 0x80) {
            *p++ = (char)c;
            i++;
        } else if (c < 0x20) {
            p = put_lit(p, LIT("\\u00"));
            p[0] = hex[c >> 4];
            p[1] = hex[c & 0xf];
            p += 2;
            i++;
        } else {
            size_t n = utf8_len(s + i);

            if (n == 0) {
                p = put_lit(p, LIT("\\ufffd"));
                i++;
            } else {
                for (size_t k = 0; k < n; k++)
                    *p++ = (char)s[i++];
            }
        }
    }
    *p++ = '"';
    return p;
}

/* ---- one event ----------------------------------------------------------- */

/* The event's names and their lengths, worked out once per line. */
struct names {
    const char *disk;        /* NULL: the disk number */
    size_t disk_len;
    const char *process;     /* "" when the event has none */
    size_t process_len;
    const char *file;        /* "" when the event has none */
    size_t file_len;
};

/* The request column's words, with their lengths. */
/* The request column's words (dm_request_names, and "?"), blank-padded to
 * 8 bytes so each is one fixed-size copy; len is the word's own length.
 * The text column is 7 wide: the longest word, so no word is cut. */
static const struct {
    char name[8];
    size_t len;
} requests[DM_REQ_COUNT + 1] = {
    {"Read    ", 4}, {"Write   ", 5}, {"Flush   ", 5}, {"Discard ", 7}, {"?       ", 1},
};

static INLINE char *put_request(char *p, const struct dm_event *ev, int padded)
{
    unsigned rq = ev->request < DM_REQ_COUNT ? ev->request : DM_REQ_COUNT;

    memcpy(p, requests[rq].name, 8);
    return p + (padded ? (size_t)-W_REQUEST : requests[rq].len);
}

static uint64_t sector_of(const struct dm_event *ev)
{
    return ev->byte_offset / SECTOR_BYTES;
}

static uint64_t length_of(const struct dm_event *ev)
{
    return ((uint64_t)ev->transfer_size + SECTOR_BYTES - 1) / SECTOR_BYTES;
}

static char *text_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                        const struct dm_event *ev, const struct names *nm)
{
    p = put_u64_right(p, W_SEQ, seq);
    *p++ = ' ';
    if (fo->clock)
        p = put_clock(p, W_CLOCK, fo, ev, CLOCK_TEXT);
    else
        p = put_sec6(p, W_TIME, ev->time_ns);
    *p++ = ' ';
    p = put_sec6(p, W_DURATION, ev->duration_ns);
    if (fo->queue) {
        *p++ = ' ';
        if (ev->flags & DM_EV_HAS_QUEUE)
            p = put_sec6(p, W_DURATION, ev->queue_ns);
        else
        {
            p = put_lit(p, blanks, W_DURATION - 1);
            *p++ = '-';
        }
    }
    *p++ = ' ';
    if (nm->disk != NULL) {
        p = put_left(p, -W_DISK, nm->disk, nm->disk_len);
    } else {
        char *start = p;

        memcpy(p, blanks, BLANKS_LEN);
        p = put_u64(p, ev->disk);
        if (p - start < -W_DISK)
            p = start - W_DISK;
    }
    *p++ = ' ';
    p = put_request(p, ev, 1);
    *p++ = ' ';
    p = put_u64_right(p, W_SECTOR, sector_of(ev));
    *p++ = ' ';
    p = put_u64_right(p, W_LENGTH, length_of(ev));
    *p++ = ' ';
    if (ev->flags & DM_EV_HAS_PID) {
        p = put_u64_right(p, W_PID, ev->pid);
    } else {
        p = put_lit(p, blanks, W_PID - 1);
        *p++ = '-';
    }
    *p++ = ' ';
    if (fo->show_file && (ev->flags & DM_EV_HAS_FILE)) {
        if (ev->flags & DM_EV_HAS_PROCESS)
            p = put_left(p, -W_PROCESS, nm->process, nm->process_len);
        else
            p = put_left(p, -W_PROCESS, "-", 1);
        if (ev->flags & DM_EV_FILE_CUT)
            p = put_lit(p, LIT(" ..."));
        else
            *p++ = ' ';
        p = put_lit(p, nm->file, nm->file_len);
    } else if (ev->flags & DM_EV_HAS_PROCESS) {
        p = put_lit(p, nm->process, nm->process_len);
    } else {
        *p++ = '-';
    }
    *p++ = '\n';
    return p;
}

static char *csv_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                       const struct dm_event *ev, const struct names *nm)
{
    p = put_u64(p, seq);
    *p++ = ',';
    if (fo->clock)
        p = put_clock(p, 0, fo, ev, CLOCK_CSV);
    else
        p = put_sec9(p, ev->time_ns);
    *p++ = ',';
    p = put_sec9(p, ev->duration_ns);
    if (fo->queue) {
        *p++ = ',';
        if (ev->flags & DM_EV_HAS_QUEUE)
            p = put_sec9(p, ev->queue_ns);
    }
    *p++ = ',';
    if (nm->disk != NULL)
        p = csv_field(p, "", 0, nm->disk, nm->disk_len);
    else
        p = put_u64(p, ev->disk);
    *p++ = ',';
    p = put_request(p, ev, 0);
    *p++ = ',';
    p = put_u64(p, sector_of(ev));
    *p++ = ',';
    p = put_u64(p, length_of(ev));
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_PID)
        p = put_u64(p, ev->pid);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_TID)
        p = put_u64(p, ev->tid);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_PROCESS)
        p = csv_field(p, "", 0, nm->process, nm->process_len);
    *p++ = ',';
    if (ev->flags & DM_EV_HAS_FILE) {
        if (ev->flags & DM_EV_FILE_CUT)
            p = csv_field(p, LIT("..."), nm->file, nm->file_len);
        else
            p = csv_field(p, "", 0, nm->file, nm->file_len);
    }
    *p++ = ',';
    p = put_u64(p, ev->byte_offset);
    *p++ = ',';
    p = put_u64(p, ev->transfer_size);
    return put_lit(p, LIT("\r\n"));
}

static char *json_event(char *p, const struct dm_format_opts *fo, uint64_t seq,
                        const struct dm_event *ev, const struct names *nm)
{
    p = put_lit(p, LIT("{\"seq\":"));
    p = put_u64(p, seq);
    p = put_lit(p, LIT(",\"time\":"));
    p = put_sec9(p, ev->time_ns);
    if (fo->utc)
        p = put_json_utc(p, fo, ev);
    p = put_lit(p, LIT(",\"duration_ms\":"));
    p = put_ms6(p, ev->duration_ns);
    if (fo->queue && (ev->flags & DM_EV_HAS_QUEUE)) {
        p = put_lit(p, LIT(",\"queue_ms\":"));
        p = put_ms6(p, ev->queue_ns);
    }
    p = put_lit(p, LIT(",\"disk\":"));
    if (nm->disk != NULL)
        p = json_field(p, "", 0, nm->disk, nm->disk_len);
    else
        p = put_u64(p, ev->disk);
    p = put_lit(p, LIT(",\"request\":\""));
    p = put_request(p, ev, 0);
    p = put_lit(p, LIT("\",\"offset\":"));
    p = put_u64(p, ev->byte_offset);
    p = put_lit(p, LIT(",\"bytes\":"));
    p = put_u64(p, ev->transfer_size);
    p = put_lit(p, LIT(",\"sector\":"));
    p = put_u64(p, sector_of(ev));
    p = put_lit(p, LIT(",\"length\":"));
    p = put_u64(p, length_of(ev));
    if (ev->flags & DM_EV_HAS_PID) {
        p = put_lit(p, LIT(",\"pid\":"));
        p = put_u64(p, ev->pid);
    }
    if (ev->flags & DM_EV_HAS_TID) {
        p = put_lit(p, LIT(",\"tid\":"));
        p = put_u64(p, ev->tid);
    }
    if (ev->flags & DM_EV_HAS_PROCESS) {
        p = put_lit(p, LIT(",\"process\":"));
        p = json_field(p, "", 0, nm->process, nm->process_len);
    }
    if (ev->flags & DM_EV_HAS_FILE) {
        p = put_lit(p, LIT(",\"file\":"));
        if (ev->flags & DM_EV_FILE_CUT)
            p = json_field(p, LIT("..."), nm->file, nm->file_len);
        else
            p = json_field(p, "", 0, nm->file, nm->file_len);
    }
    if (ev->flags & DM_EV_HAS_IRP_FLAGS) {
        p = put_lit(p, LIT(",\"irp_flags\":"));
        p = put_u64(p, ev->irp_flags);
    }
    return put_lit(p, LIT("}\n"));
}

size_t dm_format_event_fit(char *buf, size_t cap, const struct dm_format_opts *fo,
                           uint64_t seq, const struct dm_event *ev, size_t *need)
{
    struct names nm;
    size_t bound;
    char *end;

    nm.disk = NULL;
    nm.disk_len = 0;
    if (ev->disk_name[0] != '\0') {
        nm.disk = ev->disk_name;
        nm.disk_len = strlen(ev->disk_name);
    }
    nm.process = "";
    nm.process_len = 0;
    if (ev->flags & DM_EV_HAS_PROCESS) {
        nm.process = ev->process;
        nm.process_len = strlen(ev->process);
    }
    nm.file = "";
    nm.file_len = 0;
    if (ev->flags & DM_EV_HAS_FILE) {
        nm.file = ev->file;
        nm.file_len = strlen(ev->file);
    }
    bound = FIXED_MAX + SLACK + ESCAPE_MAX * (nm.disk_len + nm.process_len + nm.file_len);
    if (cap < bound) {
        *need = bound;
        return 0;
    }
    switch (fo->format) {
    case DM_FMT_CSV:
        end = csv_event(buf, fo, seq, ev, &nm);
        break;
    case DM_FMT_JSON:
        end = json_event(buf, fo, seq, ev, &nm);
        break;
    default:
        end = text_event(buf, fo, seq, ev, &nm);
        break;
    }
    *end = '\0';
    return (size_t)(end - buf);
}

/* What did not fit in cap goes through a buffer of its own size, and its
 * beginning is kept (the lines' old contract: cut, never overflowed). */
static size_t cut_to(char *buf, size_t cap, const char *line, size_t len)
{
    if (cap == 0)
        return 0;
    if (len > cap - 1)
        len = cap - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return len;
}

size_t dm_format_event(char *buf, size_t cap, const struct dm_format_opts *fo,
                       uint64_t seq, const struct dm_event *ev)
{
    size_t need = 0, len = dm_format_event_fit(buf, cap, fo, seq, ev, &need);
    char *big;

    if (len > 0)
        return len;
    big = malloc(need);
    if (big == NULL)
        return cut_to(buf, cap, "", 0);
    len = dm_format_event_fit(big, need, fo, seq, ev, &need);
    len = cut_to(buf, cap, big, len);
    free(big);
    return len;
}

/* ---- headers and --top's fields ------------------------------------------ */

/* An append-only view of the caller's buffer; never overruns it. For the
 * header, once per run: printf is fine there. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

static void putf(struct out *o, const char *fmt, ...) DM_PRINTF(2, 3);

static void putf(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->len + 1 >= o->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    o->len += (size_t)n < o->cap - o->len ? (size_t)n : o->cap - o->len - 1;
}

static void text_header(struct out *o, const struct dm_format_opts *fo)
{
    putf(o, "%*s %*s %*s", W_SEQ, "#", fo->clock ? W_CLOCK : W_TIME, "Time",
         W_DURATION, "Duration");
    if (fo->queue)
        putf(o, " %*s", W_DURATION, "Queue");
    putf(o, " %*s %*s %*s %*s %*s ", W_DISK, "Disk", W_REQUEST, "Request",
         W_SECTOR, "Sector", W_LENGTH, "Length", W_PID, "PID");
    if (fo->show_file)
        putf(o, "%*s File\n", W_PROCESS, "Process");
    else
        putf(o, "Process\n");
}

static void csv_header(struct out *o, const struct dm_format_opts *fo)
{
    putf(o, "seq,time,duration%s,disk,request,sector,length,pid,tid,process,file,"
            "offset,bytes\r\n",
         fo->queue ? ",queue" : "");
}

size_t dm_format_header(char *buf, size_t cap, const struct dm_format_opts *fo)
{
    struct out o = {buf, cap, 0};

    if (cap == 0)
        return 0;
    buf[0] = '\0';
    if (fo->format == DM_FMT_TEXT)
        text_header(&o, fo);
    else if (fo->format == DM_FMT_CSV)
        csv_header(&o, fo);
    return o.len;
}

/* One string field through the fast writer, into buf when its bound fits,
 * else through a buffer of its own and cut. */
static size_t string_field(char *buf, size_t cap, const char *s, int json)
{
    size_t len = strlen(s), bound = ESCAPE_MAX * len + SLACK;
    char *big = NULL, *to = buf, *end;

    if (cap < bound) {
        big = malloc(bound);
        if (big == NULL)
            return cut_to(buf, cap, "", 0);
        to = big;
    }
    end = json ? json_field(to, "", 0, s, len) : csv_field(to, "", 0, s, len);
    *end = '\0';
    len = (size_t)(end - to);
    if (big != NULL) {
        len = cut_to(buf, cap, big, len);
        free(big);
    }
    return len;
}

size_t dm_format_json_string(char *buf, size_t cap, const char *s)
{
    return string_field(buf, cap, s, 1);
}

size_t dm_format_csv_string(char *buf, size_t cap, const char *s)
{
    return string_field(buf, cap, s, 0);
}
