/*
 * lz77.h - MS-XCA "Plain LZ77" (LZXpress) decompression, as used by
 * compressed .etl buffers (buffer flag 0x40).
 */
#ifndef DM_LZ77_H
#define DM_LZ77_H

#include <stddef.h>

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

#endif /* DM_LZ77_H */
