/*
 * swar.h - SWAR ("SIMD within a register") tests on 8 bytes at once, for
 * the scanners that look for the few bytes a string must stop or escape at
 * (output/escape.c writing, input/json_lex.c reading).
 *
 * dm_swar_below(x, n), n <= 0x80, marks (0x80) each byte of x that is below
 * n; dm_swar_equal(x, c) each byte equal to c. Both are exact as to whether
 * any byte is marked, and the lowest marked byte is exact (a borrow only
 * runs towards higher bytes, so false marks appear only above a true one).
 * With words loaded from memory little-endian (dm_swar_load), the lowest
 * byte is the first one in the string: the callers scan words only on
 * little-endian targets.
 */
#ifndef DM_SWAR_H
#define DM_SWAR_H

#include <stdint.h>
#include <string.h>

#define DM_SWAR_ONES UINT64_C(0x0101010101010101)
#define DM_SWAR_HIGHS UINT64_C(0x8080808080808080)

static inline uint64_t dm_swar_below(uint64_t x, unsigned n)
{
    return (x - DM_SWAR_ONES * n) & ~x & DM_SWAR_HIGHS;
}

static inline uint64_t dm_swar_equal(uint64_t x, unsigned char c)
{
    return dm_swar_below(x ^ (DM_SWAR_ONES * c), 1);
}

/* Eight bytes at s, in the machine's order (memcpy: s need not be aligned). */
static inline uint64_t dm_swar_load(const char *s)
{
    uint64_t w;

    memcpy(&w, s, sizeof w);
    return w;
}

#endif /* DM_SWAR_H */
