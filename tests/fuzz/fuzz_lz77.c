/*
 * fuzz_lz77.c - libFuzzer target: the MS-XCA Plain LZ77 inflater
 * (src/etl/lz77.h). Inflates the input into buffers of a few sizes,
 * checking the result is DM_ECORRUPT or fits the buffer, and that nothing
 * is written past it (a guard byte); then through the resumable inflater
 * in chunks and windows of sizes the input picks, which must give the
 * same result and bytes. Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "etl/lz77.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The resumable inflater as the .etl reader drives it: input in chunks of
 * ci bytes (what a call leaves unused handed over again, in a buffer of its
 * own), output through a window of oc bytes after DM_LZ77_HISTORY of kept
 * output, collected into all (cap bytes at most). Returns the count or
 * DM_ECORRUPT, which must be what the one-shot call returns. */
static long chunked(const uint8_t *in, size_t in_len, size_t ci, size_t oc,
                    uint8_t *all, size_t cap)
{
    static uint8_t win[DM_LZ77_HISTORY + 256 + 255 * 16 + 1], chunk[16 + 64];
    size_t wcap = DM_LZ77_HISTORY + oc, opos = 0, total = 0, fed = 0, clen = 0;
    struct dm_lz77 z;
    int rc = DM_LZ77_NEED_IN;

    if (in_len == 0)
        return 0;
    dm_lz77_init(&z);
    win[wcap] = 0xA5;
    for (;;) {
        size_t n = in_len - fed < ci ? in_len - fed : ci, cpos = 0, start = opos;

        if (rc == DM_LZ77_NEED_IN) { /* more input only when asked */
            memcpy(chunk + clen, in + fed, n);
            clen += n;
            fed += n;
        }
        rc = dm_lz77_inflate(&z, chunk, clen, &cpos, fed == in_len, win, wcap, &opos);
        if (win[wcap] != 0xA5 || cpos > clen || opos > wcap || opos < start)
            abort();
        if (rc < 0)
            return rc;
        if (total + (opos - start) > cap)
            return DM_ECORRUPT;
        memcpy(all + total, win + start, opos - start);
        total += opos - start;
        memmove(chunk, chunk + cpos, clen - cpos);
        clen -= cpos;
        if (rc == DM_LZ77_END)
            return (long)total;
        if (rc == DM_LZ77_OUT_FULL) {
            if (opos != wcap)
                abort();
            memmove(win, win + wcap - DM_LZ77_HISTORY, DM_LZ77_HISTORY);
            opos = DM_LZ77_HISTORY;
        } else if (rc != DM_LZ77_NEED_IN || fed == in_len || clen >= 10) {
            abort(); /* NEED_IN only with input to come, fewer than 10 left */
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[] = {0, 1, 7, 64, 4096, 65536};
    static uint8_t out[65536 + 1], all[65536];

    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        /* A guard byte after the window shows any write past out_cap. */
        out[caps[i]] = 0xA5;
        long n = dm_lz77_decompress(data, size, out, caps[i]);
        if (n != DM_ECORRUPT && (n < 0 || (size_t)n > caps[i]))
            abort();
        if (out[caps[i]] != 0xA5)
            abort();
    }
    /* Cut into chunks and windows, the same result and bytes. */
    {
        long want = dm_lz77_decompress(data, size, out, sizeof all);
        size_t ci = size > 0 ? 1 + data[0] % 64 : 1;
        /* Windows of 256 bytes or more: each that fills moves the 8 KiB
         * of history, and tiny ones (the unit tests') would make a run
         * of 64 KiB of output slow to fuzz. */
        size_t oc = 256 + (size > 1 ? (size_t)data[size - 1] * 16 : 0);

        if (chunked(data, size, ci, oc, all, sizeof all) != want)
            abort();
        if (want > 0 && memcmp(all, out, (size_t)want) != 0)
            abort();
    }
    return 0;
}
