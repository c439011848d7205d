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
 *
 * The decoder is resumable (dm_lz77_inflate), so that a compressed .etl
 * buffer of 16 MiB inflates through a window: it stops where the output is
 * full (a literal run or a match cut there goes on at the next call) or
 * where input that is not final runs short, and its state is what it
 * needs to go on from there: the flag word's bits left, the shared nibble
 * (by value), a match's length left and distance. A match reaches at most
 * 8,192 bytes back (a 13-bit distance, DM_LZ77_HISTORY), so the caller
 * keeps that much output before where the next call writes. The one-shot
 * dm_lz77_decompress is one call of it. The word loop without input
 * checks runs while a whole word's input is there, as before; only near a
 * chunk's end are items taken one by one with checks.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "base/bytes.h"
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

/* Where an inflation is: the input and output cursors and ends, whether
 * input follows iend (final: none does), and the decoder's own state. */
struct lz_state {
    const uint8_t *ip, *iend;
    uint8_t *obase, *op, *oend;
    int final;
    struct dm_lz77 *z;
};

/* An item takes at most 10 bytes of input: a 2-byte token, a shared nibble
 * byte, a byte, a 16-bit and a 32-bit length ([MS-XCA] 2.4). With
 * WORD_SAFE_IN bytes left after a flag word, none of its 32 items can run
 * out of input, even with a literal run's 32-byte read at its end. Input
 * that is not final is taken an item at a time while ITEM_IN_MAX bytes are
 * left, so no item is ever cut by a chunk's end: the caller hands the
 * rest over again with the next chunk. */
#define ITEM_IN_MAX 10u
#define WORD_SAFE_IN (XCA_FLAGS_PER_WORD * ITEM_IN_MAX + 2 * MOVE)

enum { WORD_DONE = 0 };

/*
 * The items of the flag word in z (its bits left at the top of z->flags,
 * z->nflags of them), from where the last call stopped. Returns WORD_DONE,
 * DM_LZ77_END (a match flag with no input left), DM_LZ77_OUT_FULL (an item
 * needs room: a literal run or a match cut there is kept in z),
 * DM_LZ77_NEED_IN (input that is not final is nearly used up) or
 * DM_ECORRUPT. safe: the input holds WORD_SAFE_IN bytes, so no input bound
 * is checked. Output bounds are always checked. It is inlined at its two
 * call sites (GCC and clang are told to), so each gets a copy with safe
 * constant.
 */
#if defined(__GNUC__) || defined(__clang__)
#define LZ_INLINE inline __attribute__((always_inline))
#else
#define LZ_INLINE inline
#endif

static LZ_INLINE int inflate_word(struct lz_state *st, const int safe)
{
    struct dm_lz77 *const z = st->z;
    const uint8_t *ip = st->ip, *const iend = st->iend;
    uint8_t *op = st->op, *const obase = st->obase, *const oend = st->oend;
    uint32_t flags = z->flags;
    unsigned nflags = z->nflags, half = z->half;
    int has_half = z->has_half, rc = WORD_DONE;

    for (;;) {
        /* The literals before the next match flag (or the word's end):
         * every one needs a byte of input and a byte of room. */
        unsigned run = flags != 0 ? clz32(flags) : nflags;

        if (!safe && !st->final && (size_t)(iend - ip) < ITEM_IN_MAX) {
            rc = DM_LZ77_NEED_IN;
            break;
        }
        if (run != 0) {
            if (!safe && run > (size_t)(iend - ip)) {
                if (st->final) {
                    rc = DM_ECORRUPT;
                    break;
                }
                run = (unsigned)(iend - ip); /* the rest with the next chunk */
            }
            if ((size_t)(oend - op) >= 2 * MOVE && (safe || (size_t)(iend - ip) >= 2 * MOVE)) {
                memcpy(op, ip, MOVE);
                if (run > MOVE)
                    memcpy(op + MOVE, ip + MOVE, MOVE);
            } else if (run > (size_t)(oend - op)) {
                /* The literals that fit; the others wait for room. */
                run = (unsigned)(oend - op);
                memcpy(op, ip, run);
                ip += run;
                op += run;
                nflags -= run;
                flags <<= run; /* run < the literals left: a flag is left */
                rc = DM_LZ77_OUT_FULL;
                break;
            } else {
                memcpy(op, ip, run);
            }
            ip += run;
            op += run;
            nflags -= run;
            if (nflags == 0)
                break;
            flags <<= run; /* run < 32 here: a flag is left */
            if (!safe)
                continue; /* the input check again, before the match */
        }
        /* A match flag. */
        if (!safe && (size_t)(iend - ip) < 2) {
            /* A match flag with no input left is the end of the stream
             * (final input only: other input stopped above). */
            rc = ip == iend ? DM_LZ77_END : DM_ECORRUPT;
            break;
        }
        flags <<= 1;
        nflags--;
        {
            unsigned token = dm_le16(ip);
            size_t dist = (size_t)(token >> 3) + 1, room;
            uint64_t len = token & 7u;

            ip += 2;
            if (len == XCA_TOKEN_LEN_MAX) {
                if (!has_half) {
                    if (!safe && ip == iend) {
                        rc = DM_ECORRUPT;
                        break;
                    }
                    /* The byte is kept by value: the next long match may
                     * come after this input chunk is gone. */
                    len = *ip & 0x0Fu;
                    half = *ip++ >> 4;
                    has_half = 1;
                } else {
                    len = half;
                    has_half = 0;
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
                /* What fits; the rest when there is room (z). */
                copy_match(op, dist, room, room);
                op += room;
                z->match_left = len - room;
                z->match_dist = dist;
                rc = DM_LZ77_OUT_FULL;
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
    z->flags = flags;
    z->nflags = nflags;
    z->half = half;
    z->has_half = has_half;
    return rc;
}

/* The rest of a match the output's end cut (z->match_left bytes from
 * z->match_dist back): 0 when done, DM_LZ77_OUT_FULL when still cut, or
 * DM_ECORRUPT when the caller kept too little of the output before. */
static int finish_match(struct lz_state *st)
{
    struct dm_lz77 *const z = st->z;
    size_t room = (size_t)(st->oend - st->op), n;

    if (room == 0)
        return DM_LZ77_OUT_FULL;
    if (z->match_dist > (size_t)(st->op - st->obase))
        return DM_ECORRUPT;
    n = z->match_left < room ? (size_t)z->match_left : room;
    copy_match(st->op, z->match_dist, n, room);
    st->op += n;
    z->match_left -= n;
    return z->match_left != 0 ? DM_LZ77_OUT_FULL : 0;
}

void dm_lz77_init(struct dm_lz77 *z)
{
    memset(z, 0, sizeof *z);
}

int dm_lz77_inflate(struct dm_lz77 *z, const void *in, size_t in_len, size_t *in_pos,
                    int final, void *out, size_t out_cap, size_t *out_pos)
{
    struct lz_state st;
    int rc = 0;

    st.ip = (const uint8_t *)in + *in_pos;
    st.iend = (const uint8_t *)in + in_len;
    st.obase = out;
    st.op = st.obase + *out_pos;
    st.oend = st.obase + out_cap;
    st.final = final;
    st.z = z;
    if (z->match_left != 0)
        rc = finish_match(&st);
    while (rc == 0) {
        size_t left = (size_t)(st.iend - st.ip);

        if (z->nflags == 0) {
            if (left < 4) {
                /* Final input that ends exactly where a flag word would
                 * start is a complete stream: nothing was promised after
                 * it. */
                if (!final)
                    rc = DM_LZ77_NEED_IN;
                else
                    rc = left == 0 ? DM_LZ77_END : DM_ECORRUPT;
                break;
            }
            z->flags = dm_le32(st.ip);
            z->nflags = XCA_FLAGS_PER_WORD;
            st.ip += 4;
            left -= 4;
        }
        if (left >= WORD_SAFE_IN)
            rc = inflate_word(&st, 1);
        else
            rc = inflate_word(&st, 0);
    }
    *in_pos = (size_t)(st.ip - (const uint8_t *)in);
    *out_pos = (size_t)(st.op - st.obase);
    return rc;
}

long dm_lz77_decompress(const void *in, size_t in_len, void *out, size_t out_cap)
{
    struct dm_lz77 z;
    size_t in_pos = 0, out_pos = 0;

    if (in_len == 0)
        return 0;
    if (in == NULL || out == NULL)
        return DM_ECORRUPT;
    /* The count is returned as a long, 32 bits on Windows. */
    if (out_cap > (size_t)LONG_MAX)
        out_cap = (size_t)LONG_MAX;
    dm_lz77_init(&z);
    /* Output past out_cap (DM_LZ77_OUT_FULL) is malformed here. */
    if (dm_lz77_inflate(&z, in, in_len, &in_pos, 1, out, out_cap, &out_pos) != DM_LZ77_END)
        return DM_ECORRUPT;
    return (long)out_pos;
}
