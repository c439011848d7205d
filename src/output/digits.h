/*
 * digits.h - decimal numbers written straight into a char buffer, for the
 * writers that run once per event or per series (format.c, metrics.c): two
 * digits per division from a table, padding by block stores, no printf.
 *
 * The writers append through a char pointer with no bounds checks of their
 * own; the caller makes sure the buffer holds the output's upper bound. They
 * also store past the output's end on purpose: a padded field is a 16-byte
 * block of blanks with the value written over it and digits go out as 8-byte
 * blocks, so a caller leaves DM_DIGITS_SLACK bytes of room after the last
 * field.
 */
#ifndef DM_DIGITS_H
#define DM_DIGITS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The padding block: every padded width fits in it. */
#define DM_BLANKS_LEN 16
static const char dm_blanks[DM_BLANKS_LEN + 1] = "                ";

/* Stores past the end of the last field: a blank block (16 bytes) or a
 * digit block (8), counted twice over. */
#define DM_DIGITS_SLACK (2 * DM_BLANKS_LEN + 8)

/* The number writers are a few instructions each and called a dozen times
 * per line: a call would cost as much as the work. */
#if defined(__GNUC__) || defined(__clang__)
#define DM_INLINE inline __attribute__((always_inline))
#else
#define DM_INLINE inline
#endif

/* "00".."99": two digits per division by 100. */
static const char dm_digit_pairs[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* 10^0 .. 10^19: the powers a uint64_t can hold. */
static const uint64_t dm_pow10_u64[20] = {
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
static DM_INLINE unsigned dm_dec_len(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    unsigned t = (bits * 1233u) >> 12;

    return t + 1 - ((v | 1) < dm_pow10_u64[t]);
#else
    unsigned n = 1;

    while (n < 20 && v >= dm_pow10_u64[n])
        n++;
    return n;
#endif
}

/* Exactly 8 digits of v < 10^8, as two independent halves of 4. (Paul
 * Khuong's all-in-one-register method was tried: no fewer instructions.) */
static DM_INLINE void dm_put8(char *q, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;

    memcpy(q, dm_digit_pairs + 2 * (hi / 100), 2);
    memcpy(q + 2, dm_digit_pairs + 2 * (hi % 100), 2);
    memcpy(q + 4, dm_digit_pairs + 2 * (lo / 100), 2);
    memcpy(q + 6, dm_digit_pairs + 2 * (lo % 100), 2);
}

/* Two digits of v < 100 as the 16-bit word whose bytes, in memory order,
 * are those digits (memcpy: the table has no alignment). */
static DM_INLINE uint64_t dm_pair_word(uint32_t v)
{
    uint16_t w;

    memcpy(&w, dm_digit_pairs + 2 * v, 2);
    return w;
}

/* The last n <= 8 digits of v < 10^n at p, and 8 - n dm_blanks after them,
 * as one 8-byte store. On little-endian machines the block is put together
 * in a register: built in memory by 2-byte stores and read back as one
 * 8-byte load, it stalled on every number (the load cannot be forwarded
 * from the smaller stores; most of text_event's time in perf annotate). */
static DM_INLINE void dm_put_upto8(char *p, uint32_t v, unsigned n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Byte i of x is digit i of the 8 (the first in the lowest byte). */
    uint64_t x, blanks;

    if (n <= 4) { /* the common small ones (pid, length, seconds): half the work */
        uint32_t h = v / 100;

        x = dm_pair_word(h) << 32 | dm_pair_word(v - h * 100) << 48;
    } else {
        uint32_t hi = v / 10000, lo = v - hi * 10000;

        x = dm_pair_word(hi / 100) | dm_pair_word(hi % 100) << 16 |
            dm_pair_word(lo / 100) << 32 | dm_pair_word(lo % 100) << 48;
    }
    /* n is 1..8: the digits drop to the bottom, blanks fill the top. */
    blanks = n >= 8 ? 0 : UINT64_C(0x2020202020202020) << (8 * n);
    x = x >> (8 * (8 - n)) | blanks;
    memcpy(p, &x, 8);
#else
    char tmp[16];

    memcpy(tmp + 8, dm_blanks, 8);
    if (n <= 4) {
        uint32_t h = v / 100;

        memcpy(tmp + 4, dm_digit_pairs + 2 * h, 2);
        memcpy(tmp + 6, dm_digit_pairs + 2 * (v - h * 100), 2);
    } else {
        dm_put8(tmp, v);
    }
    memcpy(p, tmp + 8 - n, 8);
#endif
}

/* v < 10^n as exactly n decimal digits (zero-padded); returns the end.
 * Also stores up to 8 bytes past the end (allowed, see the top). The
 * 64-bit division only peels off 8 digits at a time. */
static DM_INLINE char *dm_put_digits(char *p, uint64_t v, unsigned n)
{
    char *end = p + n;

    if (n > 8) {
        uint64_t high = v / 100000000u;
        uint32_t low = (uint32_t)(v - high * 100000000u);

        if (n > 16) {
            uint32_t top = (uint32_t)(high / 100000000u);

            dm_put_upto8(p, top, n - 16);
            p += n - 16;
            dm_put8(p, (uint32_t)(high - (uint64_t)top * 100000000u));
            p += 8;
        } else {
            dm_put_upto8(p, (uint32_t)high, n - 8);
            p += n - 8;
        }
        dm_put8(p, low);
        return end;
    }
    dm_put_upto8(p, (uint32_t)v, n);
    return end;
}

static DM_INLINE char *dm_put_u64(char *p, uint64_t v)
{
    return dm_put_digits(p, v, dm_dec_len(v));
}

/* v right-aligned in width (<= DM_BLANKS_LEN); wider values are not cut. */
static DM_INLINE char *dm_put_u64_right(char *p, unsigned width, uint64_t v)
{
    unsigned n = dm_dec_len(v);

    memcpy(p, dm_blanks, DM_BLANKS_LEN);
    if (n < width)
        p += width - n;
    return dm_put_digits(p, v, n);
}

/* The decimals of a fixed-point number: f < 10^digits, digits 6 or 9 (a
 * constant where this is inlined, so one branch of it remains). */
static DM_INLINE char *dm_put_frac(char *p, uint32_t f, unsigned digits)
{
    uint32_t hi, lo;

    if (digits == 9) {
        uint32_t first = f / 100000000u;

        *p++ = (char)('0' + first);
        dm_put8(p, f - first * 100000000u);
        return p + 8;
    }
    hi = f / 10000;
    lo = f - hi * 10000;
    memcpy(p, dm_digit_pairs + 2 * hi, 2);
    memcpy(p + 2, dm_digit_pairs + 2 * (lo / 100), 2);
    memcpy(p + 4, dm_digit_pairs + 2 * (lo % 100), 2);
    return p + 6;
}

/* whole.frac, frac zero-padded to digits (6 or 9) places, right-aligned in
 * width (0: no padding). */
static DM_INLINE char *dm_put_fixed(char *p, unsigned width, uint64_t whole, uint32_t frac,
                              unsigned digits)
{
    unsigned n = dm_dec_len(whole);

    if (width != 0) {
        memcpy(p, dm_blanks, DM_BLANKS_LEN);
        if (n + 1 + digits < width)
            p += width - (n + 1 + digits);
    }
    p = dm_put_digits(p, whole, n);
    *p++ = '.';
    return dm_put_frac(p, frac, digits);
}

/* s (len bytes) left-aligned in width (<= DM_BLANKS_LEN); longer s not cut. */
static DM_INLINE char *dm_put_left(char *p, unsigned width, const char *s, size_t len)
{
    memcpy(p, dm_blanks, DM_BLANKS_LEN);
    memcpy(p, s, len);
    return p + (len < width ? width : len);
}

static DM_INLINE char *dm_put_lit(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

/* A string literal and its length, for dm_put_lit. */
#define DM_LIT(s) s, sizeof s - 1

#endif /* DM_DIGITS_H */
