/*
 * fuzz_etl.c - libFuzzer targets for the .etl reader and the LZ77 inflater.
 *
 * Not part of the normal build. Two targets come from this one file:
 *
 *   .etl reader (default): opens the input with dm_etl_open_mem and reads
 *   every record, touching every payload byte:
 *     clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
 *         -Iinclude -Isrc tests/fuzz/fuzz_etl.c \
 *         src/etl/etl_file.c src/etl/etl_frame.c src/etl/etl_reader.c \
 *         src/etl/lz77.c src/core/kmerge.c src/platform/posix.c -o fuzz_etl
 *
 *   LZ77 inflater (-DDM_FUZZ_LZ77): inflates the input into buffers of a
 *   few sizes, checking the result is DM_ECORRUPT or fits the buffer:
 *     clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined \
 *         -DDM_FUZZ_LZ77 -Iinclude -Isrc tests/fuzz/fuzz_etl.c \
 *         src/etl/lz77.c -o fuzz_lz77
 *
 * Run from the repository root, e.g. `./fuzz_etl -max_total_time=60 CORPUS`;
 * a good seed corpus is the first few buffers of a sample trace
 * (`head -c 40000 ../shared/etl/filtrace-diskio-win11.etl > CORPUS/seed`),
 * and -max_len=65536 lets inputs hold a few whole buffers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "diskmon.h"
#include "etl/lz77.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef DM_FUZZ_LZ77

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

#else

#include "etl/etl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dm_etl *etl;
    struct dm_etl_record rec;
    char err[512];
    volatile uint8_t sink = 0;
    int rc;

    if (dm_etl_open_mem(&etl, data, size, "fuzz.etl", err, sizeof err) != 0)
        return 0;
    (void)dm_etl_info(etl);
    while ((rc = dm_etl_next(etl, &rec, err, sizeof err)) == 1) {
        uint8_t x = 0;

        for (size_t i = 0; i < rec.payload_len; i++)
            x ^= rec.payload[i];
        sink ^= x;
        if (rec.pointer_size != 4 && rec.pointer_size != 8)
            abort();
    }
    if (rc < 0 && err[0] == '\0')
        abort(); /* every failure must say why */
    (void)dm_etl_bytes_done(etl);
    (void)dm_etl_skipped(etl);
    dm_etl_close(etl);
    (void)sink;
    return 0;
}

#endif
