/*
 * etl_cost.h - for the fuzz targets that read .etl input: whether an input
 * is cheap enough to run.
 *
 * A compressed buffer may claim up to 16 MiB of records from a few bytes,
 * and the reader inflates a trace whose claims fit its 256 MiB budget: the
 * right answer, but at a few runs a second under ASan, which leaves the
 * rest of the reader unfuzzed. So an input whose CPUs' largest claims add
 * up to more than 1 MiB is skipped unless the sum passes the budget, where
 * the reader refuses it at open, cheaply (that path stays fuzzed). The walk
 * mirrors the reader's (etl_reader.c, index_buffers) only roughly: a wrong
 * guess costs speed, never a missed check.
 */
#ifndef DM_FUZZ_ETL_COST_H
#define DM_FUZZ_ETL_COST_H

#include <stddef.h>
#include <stdint.h>

#include "etl/etl.h"

#define FUZZ_CHEAP_CLAIMS (1u << 20)

static inline uint32_t fuzz_le(const uint8_t *p, int n)
{
    uint32_t v = 0;

    while (n-- > 0)
        v = v << 8 | p[n];
    return v;
}

static inline int fuzz_etl_too_costly(const uint8_t *data, size_t size)
{
    static uint32_t held[2048];
    uint64_t sum = 0;
    size_t off = 0;

    for (size_t i = 0; i < 2048; i++)
        held[i] = 0;
    /* WMI_BUFFER_HEADER: BufferSize @0, context @0x28, Offset @0x30,
     * BufferFlag @0x34 (0x20 processor index, 0x40 compressed). */
    while (size - off >= 0x48) {
        const uint8_t *h = data + off;
        uint32_t disk = fuzz_le(h, 4), flags = fuzz_le(h + 0x34, 2);
        uint32_t cpu = flags & 0x20 ? fuzz_le(h + 0x28, 2) & 0x7FF : h[0x28];
        uint32_t claim = fuzz_le(h + 0x30, 4);

        /* The reader's index stops at the first header it rejects. */
        if (disk < 0x48 || disk > size - off || claim < 0x48 ||
            (!(flags & 0x40) && claim > disk) || claim > (16u << 20))
            break;
        if ((flags & 0x40) && claim > held[cpu]) {
            sum += claim - held[cpu];
            held[cpu] = claim;
        }
        off += disk;
    }
    return sum > FUZZ_CHEAP_CLAIMS && sum <= DM_ETL_BUDGET_BYTES;
}

#endif /* DM_FUZZ_ETL_COST_H */
