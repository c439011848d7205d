/*
 * lz77.c - MS-XCA "Plain LZ77" (LZXpress) decompression for compressed .etl
 * buffers.
 *
 * The format ([MS-XCA] sections 2.3 and 2.4): the stream is a sequence of
 * 32-bit little-endian flag words, each followed by the 32 items it
 * describes, most significant flag bit first. A 0 bit is one literal byte; a
 * 1 bit is a match: a 16-bit little-endian token whose high 13 bits are the
 * distance minus 1 and whose low 3 bits are the length minus 3. A length code
 * of 7 continues in a shared nibble (two consecutive long matches share one
 * byte: the first uses its low half, the second its high half), then a byte,
 * then a 16-bit and finally a 32-bit field, each taken only when the one
 * before holds its maximum. A match flag with no input left ends the stream
 * (the compressor pads the last flag word with 1 bits).
 *
 * This is the replay hot path. ETW buffers compress into short items (a
 * generated trace inflates about 9 bytes per match, with a literal run
 * between one match in two), so the cost is per item, not per byte, and
 * the loop is built to spend few instructions on each:
 *   - a flag word whose 32 items cannot run out of input (WORD_SAFE_IN
 *     bytes left, nearly every word but the last few of a buffer) is
 *     decoded without input checks; the others check every read;
 *   - a run of literals is taken at once: the count of leading zero flags
 *     gives its length, and it is copied in one or two 16-byte moves when
 *     both buffers have 32 bytes left (exactly, and checked, otherwise);
 *   - a match of up to 16 bytes from at least 16 back is one 16-byte move;
 *     longer ones or nearer ones move 8 bytes at a time when the distance
 *     is at least 8 (each chunk then reads only bytes written before it);
 *     nearer ones use memset (distance 1) or a byte loop;
 *   - every bound is one comparison against an end pointer.
 * The fixed-size moves may write up to 31 bytes past the item; they run
 * only when the output has room for them, and what follows overwrites
 * them or lies past the returned length (lz77.h allows that).
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "core/bytes.h"
#include "diskmon.h"
#include "etl/lz77.h"

/* Item lengths from [MS-XCA] 2.4: a 16-bit token holds length - 3 in its low
 * 3 bits (7 means "longer"); the nibble adds up to 15, the byte up to 255. */
#define XCA_MIN_MATCH 3u
#define XCA_TOKEN_LEN_MAX 7u
#define XCA_NIBBLE_MAX 15u
#define XCA_BYTE_MAX 255u
#define XCA_FLAGS_PER_WORD 32u

/* The fixed move: 16 bytes, which compilers make one or two vector or
 * 8-byte loads and stores. */
#define MOVE 16u

/* Leading zero bits of a nonzero 32-bit word. */
static inline unsigned clz32(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_clz(x);
#else
    unsigned n = 0;

    while (!(x & 0x80000000u)) {
        x <<= 1;
        n++;
    }
    return n;
#endif
}

/*
 * Copy a match of len bytes from dist bytes back, when it is not the common
 * short far one (the caller's single move). The caller has checked that
 * dist <= bytes written and len <= room (bytes left in the output). The
 * chunked path may write up to 7 bytes past the match, so it runs only
 * when room has space for them.
 */
static inline void copy_match(uint8_t *op, size_t dist, size_t len, size_t room)
{
    const uint8_t *src = op - dist;

    if (dist >= 8 && len + 8 <= room) {
        size_t i = 0;
        do {
            memcpy(op + i, src + i, 8);
            i += 8;
        } while (i < len);
    } else if (dist >= len) {
        memcpy(op, src, len);
    } else if (dist == 1) {
        memset(op, src[0], len);
    } else {
        for (size_t i = 0; i < len; i++)
            op[i] = src[i];
    }
}

/* Where an inflation is: the input and output cursors and ends, and the
 * byte whose high nibble the next long match takes (NULL: none). */
struct lz_state {
    const uint8_t *ip, *iend, *half;
    uint8_t *obase, *op, *oend;
};

/* An item takes at most 10 bytes of input: a 2-byte token, a shared nibble
 * byte, a byte, a 16-bit and a 32-bit length ([MS-XCA] 2.4). With
 * WORD_SAFE_IN bytes left after a flag word, none of its 32 items can run
 * out of input, even with a literal run's 32-byte read at its end. */
#define ITEM_IN_MAX 10u
#define WORD_SAFE_IN (XCA_FLAGS_PER_WORD * ITEM_IN_MAX + 2 * MOVE)

enum { WORD_DONE = 0, STREAM_END = 1 };

/*
 * The items of one flag word (flags, its first bit at bit 31). Returns
 * WORD_DONE, STREAM_END (a match flag with no input left) or DM_ECORRUPT.
 * safe: the input holds WORD_SAFE_IN bytes, so no input bound is checked.
 * Output bounds are always checked. It is inlined at its two call sites
 * (GCC and clang are told to), so each gets a copy with safe constant.
 */
#if defined(__GNUC__) || defined(__clang__)
#define LZ_INLINE inline __attribute__((always_inline))
#else
#define LZ_INLINE inline
#endif

static LZ_INLINE int inflate_word(struct lz_state *st, uint32_t flags, const int safe)
{
    const uint8_t *ip = st->ip, *const iend = st->iend, *half = st->half;
    uint8_t *op = st->op, *const obase = st->obase, *const oend = st->oend;
    unsigned nflags = XCA_FLAGS_PER_WORD;
    int rc = WORD_DONE;

    for (;;) {
        /* The literals before the next match flag (or the word's end):
         * every one needs a byte of input and a byte of room. */
        unsigned run = flags != 0 ? clz32(flags) : nflags;

        if (run != 0) {
            if (!safe && run > (size_t)(iend - ip)) {
                rc = DM_ECORRUPT;
                break;
            }
            if ((size_t)(oend - op) >= 2 * MOVE && (safe || (size_t)(iend - ip) >= 2 * MOVE)) {
                memcpy(op, ip, MOVE);
                if (run > MOVE)
                    memcpy(op + MOVE, ip + MOVE, MOVE);
            } else if (run > (size_t)(oend - op)) {
                rc = DM_ECORRUPT;
                break;
            } else {
                memcpy(op, ip, run);
            }
            ip += run;
            op += run;
            nflags -= run;
            if (nflags == 0)
                break;
            flags <<= run; /* run < 32 here: a match flag is left */
        }
        /* A match flag. */
        flags <<= 1;
        nflags--;
        if (!safe && (size_t)(iend - ip) < 2) {
            /* A match flag with no input left is the end of the stream. */
            rc = ip == iend ? STREAM_END : DM_ECORRUPT;
            break;
        }
        {
            unsigned token = dm_le16(ip);
            size_t dist = (size_t)(token >> 3) + 1, room;
            uint64_t len = token & 7u;

            ip += 2;
            if (len == XCA_TOKEN_LEN_MAX) {
                if (half == NULL) {
                    if (!safe && ip == iend) {
                        rc = DM_ECORRUPT;
                        break;
                    }
                    len = *ip & 0x0Fu;
                    half = ip++;
                } else {
                    len = *half >> 4;
                    half = NULL;
                }
                if (len == XCA_NIBBLE_MAX) {
                    if (!safe && ip == iend) {
                        rc = DM_ECORRUPT;
                        break;
                    }
                    len = *ip++;
                    if (len == XCA_BYTE_MAX) {
                        if (!safe && iend - ip < 2) {
                            rc = DM_ECORRUPT;
                            break;
                        }
                        len = dm_le16(ip);
                        ip += 2;
                        if (len == 0) {
                            if (!safe && iend - ip < 4) {
                                rc = DM_ECORRUPT;
                                break;
                            }
                            len = dm_le32(ip);
                            ip += 4;
                        }
                        /* The 16/32-bit forms hold the whole length minus
                         * 3; anything below the 3+7+15 that the shorter
                         * forms already cover is malformed ([MS-XCA] 2.4). */
                        if (len < XCA_NIBBLE_MAX + XCA_TOKEN_LEN_MAX) {
                            rc = DM_ECORRUPT;
                            break;
                        }
                        len -= XCA_NIBBLE_MAX + XCA_TOKEN_LEN_MAX;
                    }
                    len += XCA_NIBBLE_MAX;
                }
                len += XCA_TOKEN_LEN_MAX;
            }
            len += XCA_MIN_MATCH;

            room = (size_t)(oend - op);
            if (dist > (size_t)(op - obase)) {
                rc = DM_ECORRUPT;
                break;
            }
            /* The common match: short and far enough back for one move
             * (len <= MOVE <= room, so it fits). */
            if (len <= MOVE && room >= MOVE && dist >= MOVE) {
                memcpy(op, op - dist, MOVE);
            } else if (len > room) {
                rc = DM_ECORRUPT;
                break;
            } else {
                copy_match(op, dist, (size_t)len, room);
            }
            op += (size_t)len;
        }
        if (nflags == 0)
            break;
    }
    st->ip = ip;
    st->op = op;
    st->half = half;
    return rc;
}

long dm_lz77_decompress(const void *in, size_t in_len, void *out, size_t out_cap)
{
    struct lz_state st;

    if (in_len == 0)
        return 0;
    if (in == NULL || out == NULL)
        return DM_ECORRUPT;
    /* The count is returned as a long, 32 bits on Windows. */
    if (out_cap > (size_t)LONG_MAX)
        out_cap = (size_t)LONG_MAX;
    st.ip = in;
    st.iend = st.ip + in_len;
    st.half = NULL;
    st.obase = out;
    st.op = st.obase;
    st.oend = st.obase + out_cap;

    for (;;) {
        size_t left = (size_t)(st.iend - st.ip);
        uint32_t flags;
        int rc;

        if (left < 4) {
            /* Input that ends exactly where a flag word would start is
             * a complete stream: nothing was promised after it. */
            if (left == 0)
                break;
            return DM_ECORRUPT;
        }
        flags = dm_le32(st.ip);
        st.ip += 4;
        if (left - 4 >= WORD_SAFE_IN)
            rc = inflate_word(&st, flags, 1);
        else
            rc = inflate_word(&st, flags, 0);
        if (rc == STREAM_END)
            break;
        if (rc < 0)
            return rc;
    }
    return (long)(st.op - st.obase);
}
