/*
 * escape.c - names as CSV fields, JSON strings and terminal text (escape.h),
 * for the event lines (format.c), --top's rows (top_render.c) and any later
 * writer.
 *
 * Names are scanned a word (8 bytes) or, with SSE2, a block (16 bytes) at a
 * time for the bytes CSV and JSON must escape: most paths and process names
 * hold none, and a plain run is copied as it was loaded. The scanners store
 * 8 or 16 bytes before they know how many of them are plain, but only while
 * that many bytes of the name are left, so within the name's share of the
 * bound escape.h states.
 */
#include <stdlib.h>
#include <string.h>

#include "base/swar.h"
#include "output/digits.h"
#include "output/escape.h"

/* The word scans below (names 8 bytes at a time) need the first byte in
 * memory in the lowest bits of a word: true on every target diskmon builds
 * for (x86, x64, ARM64). A big-endian build takes the byte-by-byte path. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WORD_SCAN 0
#else
#define WORD_SCAN 1
#endif

/* The word tests: base/swar.h. */

/* Bytes a CSV field must be quoted for (RFC 4180). */
static uint64_t csv_marks(uint64_t w)
{
    return dm_swar_equal(w, ',') | dm_swar_equal(w, '"') | dm_swar_equal(w, '\r') |
           dm_swar_equal(w, '\n');
}

/* Bytes that may be one of csv_marks': all four are at most ','. A cheap
 * first test (paths seldom hold bytes below ','); csv_marks decides. */
static uint64_t csv_maybe(uint64_t w)
{
    return dm_swar_below(w, ',' + 1);
}

/* Bytes a JSON string may not hold as they are: control characters, quote,
 * backslash, and anything not ASCII (checked as UTF-8 one by one); also
 * space and '!', which share the cheap test for "below '\"' + 1" and which
 * the byte step then copies as they are. (b - n) | b has its top bit set
 * for b < n and for b >= 0x80, with a borrow running up as in
 * dm_swar_below. */
static uint64_t json_marks(uint64_t w)
{
    return (((w - DM_SWAR_ONES * ('"' + 1)) | w) & DM_SWAR_HIGHS) | dm_swar_equal(w, '\\');
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

static DM_INLINE unsigned first_bit(unsigned m)
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
static DM_INLINE unsigned json_block_marks(__m128i v)
{
    __m128i low_or_high = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(low_or_high, _mm_or_si128(quote, backslash)));
}

/* Bit k set: byte k is one a CSV field is quoted for. */
static DM_INLINE unsigned csv_block_marks(__m128i v)
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
static DM_INLINE int next_word(const char *s, size_t len, size_t i, uint64_t *w,
                            size_t *take)
{
    if (!WORD_SCAN || len < 8)
        return 0;
    if (len - i >= 8) {
        *w = dm_swar_load(s + i);
        *take = 8;
    } else {
        *take = len - i;
        *w = dm_swar_load(s + len - 8) >> (8 * (8 - *take));
    }
    return 1;
}

/* Marks of the bytes of w that are the string's (the first take). */
static DM_INLINE uint64_t own_marks(uint64_t m, size_t take)
{
    return take == 8 ? m : m & ((UINT64_C(1) << (8 * take)) - 1);
}

/*
 * The escapers' plain run: the next word of str (len bytes) from *i copied
 * to *p whole (the caller has room for 8 bytes more), then *p and *i moved
 * past its bytes that marks (json_marks, term_marks) leaves unmarked.
 * Returns 1 when the whole word was plain, so the caller goes on to the
 * next; 0 when *i now stands on a marked byte, or when str is too short
 * for words (then nothing moved): the caller escapes that byte itself.
 */
static DM_INLINE int plain_word(char **p, size_t *i, const char *str, size_t len,
                                uint64_t (*marks)(uint64_t))
{
    size_t take;
    uint64_t w, m;

    if (!next_word(str, len, *i, &w, &take))
        return 0;
    m = own_marks(marks(w), take);
    memcpy(*p, &w, 8);
    if (m == 0) {
        *p += take;
        *i += take;
        return 1;
    }
    *p += first_marked(m);
    *i += first_marked(m);
    return 0;
}

/* A CSV field: prefix (no special bytes) and s (len bytes), quoted with
 * quotes doubled when s holds a comma, quote or line break. */
char *dm_escape_csv(char *p, const char *prefix, size_t plen, const char *s,
                       size_t len)
{
    char *start = p;
    size_t i = 0, take;
    uint64_t w;

    p = dm_put_lit(p, prefix, plen);
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
    p = dm_put_lit(p, prefix, plen);
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
size_t dm_utf8_len(const unsigned char *s)
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
char *dm_escape_json(char *p, const char *prefix, size_t plen, const char *str,
                        size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    *p++ = '"';
    p = dm_put_lit(p, prefix, plen);
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
        if (plain_word(&p, &i, str, len, json_marks))
            continue;
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
            p = dm_put_lit(p, DM_LIT("\\u00"));
            p[0] = hex[c >> 4];
            p[1] = hex[c & 0xf];
            p += 2;
            i++;
        } else {
            size_t n = dm_utf8_len(s + i);

            if (n == 0) {
                p = dm_put_lit(p, DM_LIT("\\ufffd"));
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

char *dm_escape_label(char *p, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    while (*u != '\0') {
        size_t n;

        if (*u == '\\' || *u == '"') {
            *p++ = '\\';
            *p++ = (char)*u++;
        } else if (*u == '\n') {
            p = dm_put_lit(p, DM_LIT("\\n"));
            u++;
        } else if ((n = dm_utf8_len(u)) == 0) {
            p = dm_put_lit(p, DM_LIT("\xEF\xBF\xBD")); /* U+FFFD in UTF-8 */
            u++;
        } else {
            memcpy(p, u, n);
            p += n;
            u += n;
        }
    }
    return p;
}

/* Bytes of w a terminal name must look at: C0 controls, DEL and every
 * byte of a multi-byte UTF-8 sequence or of invalid UTF-8 (high bit). */
static uint64_t term_marks(uint64_t w)
{
    return dm_swar_below(w, 0x20) | dm_swar_equal(w, 0x7F) | (w & DM_SWAR_HIGHS);
}

/* The strict UTF-8 check of escape.h. */
size_t dm_utf8_seq(const unsigned char *s, size_t left)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;

    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        if (s[0] == 0xE0)
            lo = 0xA0;
        else if (s[0] == 0xED)
            hi = 0x9F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        if (s[0] == 0xF0)
            lo = 0x90;
        else if (s[0] == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n > left || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A name for a terminal (escape.h): plain runs 8 bytes at a time. */
char *dm_escape_term(char *p, const char *str, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < len) {
        unsigned code;
        size_t n;

        if (plain_word(&p, &i, str, len, term_marks))
            continue;
        if (s[i] >= 0x20 && s[i] < 0x7F) {
            *p++ = (char)s[i++];
            continue;
        }
        n = s[i] < 0x80 ? 1 : dm_utf8_seq(s + i, len - i);
        /* U+0080..U+009F: the C1 controls, C2 80..C2 9F in UTF-8. */
        code = n == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0 ? s[i + 1] : s[i];
        if (n == 0 || n == 1 || code != s[i]) {
            p[0] = '\\';
            p[1] = 'x';
            p[2] = hex[code >> 4];
            p[3] = hex[code & 0xf];
            p += 4;
            i += n == 2 ? 2 : 1;
        } else {
            for (size_t k = 0; k < n; k++)
                *p++ = (char)s[i++];
        }
    }
    return p;
}

size_t dm_escape_term_string(char *buf, size_t cap, const char *s)
{
    /* 4 bytes per byte at most, and the word store's 8 past the end */
    size_t len = strlen(s), bound = 4 * len + 8;
    char *big = NULL, *to = buf, *end;

    if (cap == 0)
        return 0;
    if (cap < bound) {
        big = malloc(bound);
        if (big == NULL) {
            buf[0] = '\0';
            return 0;
        }
        to = big;
    }
    end = dm_escape_term(to, s, len);
    len = (size_t)(end - to);
    if (big != NULL) {
        /* Cut at the end of a whole character, never inside an escape's
         * UTF-8 neighbour: back over continuation bytes. */
        if (len > cap - 1) {
            len = cap - 1;
            while (len > 0 && ((unsigned char)big[len] & 0xC0) == 0x80)
                len--;
        }
        memcpy(buf, big, len);
        free(big);
    }
    buf[len] = '\0';
    return len;
}

size_t dm_escape_cut_to(char *buf, size_t cap, const char *line, size_t len)
{
    if (cap == 0)
        return 0;
    if (len > cap - 1)
        len = cap - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    return len;
}

/* One string field through the fast writer, into buf when its bound fits,
 * else through a buffer of its own and cut. */
static size_t string_field(char *buf, size_t cap, const char *s, int json)
{
    size_t len = strlen(s), bound = DM_ESCAPE_MAX * len + DM_ESCAPE_SLACK;
    char *big = NULL, *to = buf, *end;

    if (cap < bound) {
        big = malloc(bound);
        if (big == NULL)
            return dm_escape_cut_to(buf, cap, "", 0);
        to = big;
    }
    end = json ? dm_escape_json(to, "", 0, s, len) : dm_escape_csv(to, "", 0, s, len);
    *end = '\0';
    len = (size_t)(end - to);
    if (big != NULL) {
        len = dm_escape_cut_to(buf, cap, big, len);
        free(big);
    }
    return len;
}

size_t dm_escape_json_string(char *buf, size_t cap, const char *s)
{
    return string_field(buf, cap, s, 1);
}

size_t dm_escape_csv_string(char *buf, size_t cap, const char *s)
{
    return string_field(buf, cap, s, 0);
}
