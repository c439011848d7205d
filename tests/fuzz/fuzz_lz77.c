/*
 * fuzz_lz77.c - libFuzzer target: the MS-XCA Plain LZ77 inflater
 * (src/etl/lz77.h). Inflates the input into buffers of a few sizes,
 * checking the result is DM_ECORRUPT or fits the buffer, and that nothing
 * is written past it (a guard byte). Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "diskmon.h"
#include "etl/lz77.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[] = {0, 1, 7, 64, 4096, 65536};
    static uint8_t out[65536 + 1];

    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        /* A guard byte after the window shows any write past out_cap. */
        out[caps[i]] = 0xA5;
        long n = dm_lz77_decompress(data, size, out, caps[i]);
        if (n != DM_ECORRUPT && (n < 0 || (size_t)n > caps[i]))
            abort();
        if (out[caps[i]] != 0xA5)
            abort();
    }
    return 0;
}
