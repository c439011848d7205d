/*
 * lz77.h - MS-XCA "Plain LZ77" (LZXpress) decompression, as used by
 * compressed .etl buffers (buffer flag 0x40).
 */
#ifndef DM_LZ77_H
#define DM_LZ77_H

#include <stddef.h>
#include <stdint.h>

/*
 * Inflate in[0..in_len) into out[0..out_cap). Returns the number of bytes
 * written (>= 0), or DM_ECORRUPT when the input is malformed: a match that
 * points before the start of the output, a length or flag word running past
 * the input, or output that would exceed out_cap. Never reads or writes out
 * of bounds, whatever the input. The stream ends at a match flag with no
 * input left ([MS-XCA] 2.4) or where a flag word would start. Bytes of out
 * past the returned count may have been written (scratch of match copies).
 */
long dm_lz77_decompress(const void *in, size_t in_len, void *out, size_t out_cap);

/* How far back a match reaches at most: its distance is 13 bits plus 1
 * ([MS-XCA] 2.4). */
#define DM_LZ77_HISTORY 8192u

/* A resumable inflation's state (dm_lz77_inflate); set by dm_lz77_init. */
struct dm_lz77 {
    uint32_t flags;        /* the flag word's bits left, the next at bit 31 */
    unsigned nflags;       /* how many; 0: a flag word comes next */
    unsigned half;         /* the shared nibble byte's high half ... */
    int has_half;          /* ... when the next long match takes it */
    uint64_t match_left;   /* bytes of a match the output's end cut */
    size_t match_dist;
};

/* What dm_lz77_inflate stopped at (DM_ECORRUPT too). */
#define DM_LZ77_END 1      /* the stream ended */
#define DM_LZ77_OUT_FULL 2 /* out is full and more output follows */
#define DM_LZ77_NEED_IN 3  /* more input is needed (final was 0) */

void dm_lz77_init(struct dm_lz77 *z);

/*
 * Go on inflating: input in[*in_pos..in_len), output to out[*out_pos..
 * out_cap), where out[0..*out_pos) is output already made, which matches
 * may reach (the caller keeps DM_LZ77_HISTORY bytes of it there, or all of
 * it, moving what it keeps to out's start). final: no input follows
 * in_len. Advances *in_pos and *out_pos and returns why it stopped. On
 * DM_LZ77_NEED_IN, fewer than 10 bytes of input are left unused: the
 * caller passes them again, followed by more. Never reads or writes out of
 * bounds, whatever the input; bytes of out past *out_pos may have been
 * written (scratch of match copies).
 */
int dm_lz77_inflate(struct dm_lz77 *z, const void *in, size_t in_len, size_t *in_pos,
                    int final, void *out, size_t out_cap, size_t *out_pos);

#endif /* DM_LZ77_H */
