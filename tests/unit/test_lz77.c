/*
 * test_lz77.c - MS-XCA Plain LZ77 decompression.
 *
 * The compressed streams below were built by hand from [MS-XCA] 2.3/2.4, and
 * each expected output was worked out by hand from them: a flag word (32
 * bits, little-endian, most significant bit first; 0 = literal, 1 = match;
 * the compressor pads the last word with 1 bits), literals, and 16-bit match
 * tokens ((distance - 1) << 3 | (length - 3), 7 meaning "longer"). Then
 * malformed streams that must fail cleanly, random bytes that must never
 * crash, and every compressed buffer of the real sample traces.
 */
#include <stdint.h>
#include <stdlib.h>

#include "diskmon.h"
#include "dmtest.h"
#include "etl/lz77.h"

static long inflate(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap)
{
    return dm_lz77_decompress(in, in_len, out, cap);
}

/* True when out[0..n) is n copies of c. */
static int all_bytes(const uint8_t *out, size_t n, uint8_t c)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] != c)
            return 0;
    return 1;
}

DM_TEST(empty_input)
{
    uint8_t out[4];

    DM_ASSERT_EQ_INT(inflate((const uint8_t *)"", 0, out, sizeof out), 0);
}

DM_TEST(literals_only)
{
    /* Flags 000 then padding 1s = 0x1FFFFFFF; the 4th flag is a match with
     * no input left: the end. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x1F, 'a', 'b', 'c'};
    uint8_t out[16];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 3);
    DM_ASSERT_MEM_EQ(out, "abc", 3);
}

DM_TEST(simple_match)
{
    /* "abc", then distance 3 length 3: token (2 << 3) | 0 = 0x0010.
     * Flags 0001 + padding = 0x1FFFFFFF. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x1F, 'a', 'b', 'c', 0x10, 0x00};
    uint8_t out[16];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 6);
    DM_ASSERT_MEM_EQ(out, "abcabc", 6);
}

DM_TEST(overlapping_match_run_length)
{
    /* "a", then distance 1 length 9 (token 0x0006): ten 'a'. */
    static const uint8_t run[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x06, 0x00};
    /* "ab", then distance 2 length 5 (token (1 << 3) | 2 = 0x000A):
     * "abababa". Flags 001 + padding = 0x3FFFFFFF. */
    static const uint8_t pair[] = {0xFF, 0xFF, 0xFF, 0x3F, 'a', 'b', 0x0A, 0x00};
    uint8_t out[32];

    DM_ASSERT_EQ_INT(inflate(run, sizeof run, out, sizeof out), 10);
    DM_ASSERT(all_bytes(out, 10, 'a'));
    DM_ASSERT_EQ_INT(inflate(pair, sizeof pair, out, sizeof out), 7);
    DM_ASSERT_MEM_EQ(out, "abababa", 7);
}

DM_TEST(long_match_distance_8_and_more)
{
    /* "abcdefgh", then distance 8 length 20: token (7 << 3) | 7 = 0x003F,
     * nibble 20 - 3 - 7 = 10. The 8-byte chunked copy must reproduce the
     * pattern exactly: 28 bytes of "abcdefgh" repeated. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x00, 'a', 'b', 'c', 'd',
                                 'e', 'f', 'g', 'h', 0x3F, 0x00, 0x0A};
    /* Flags: 8 literals (a zero high byte), then the match and padding:
     * 0x00FFFFFF, stored as FF FF FF 00. */
    uint8_t out[40];
    long n = inflate(in, sizeof in, out, sizeof out);

    DM_ASSERT_EQ_INT(n, 28);
    for (int i = 0; i < 28; i++)
        DM_ASSERT_EQ_INT(out[i], "abcdefgh"[i % 8]);
}

DM_TEST(nibble_length)
{
    /* "a", distance 1, length 20: token 0x0007, nibble byte 0x0A
     * (20 = 3 + 7 + 10): 21 'a'. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00, 0x0A};
    uint8_t out[32];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 21);
    DM_ASSERT(all_bytes(out, 21, 'a'));
}

DM_TEST(nibble_shared_by_two_matches)
{
    /* "abcd"; match distance 4 length 12 (token (3 << 3) | 7 = 0x001F, low
     * nibble 2 of byte 0x32); literal 'x'; match distance 1 length 13
     * (token 0x0007, high nibble 3 of the same byte, no new byte).
     * Flags 0000 1 0 1 + padding = 0x0BFFFFFF. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x0B, 'a', 'b', 'c', 'd',
                                 0x1F, 0x00, 0x32, 'x', 0x07, 0x00};
    static const char want[] = "abcdabcdabcdabcdxxxxxxxxxxxxxx";
    uint8_t out[64];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 30);
    DM_ASSERT_MEM_EQ(out, want, 30);
}

DM_TEST(byte_length)
{
    /* Nibble 15 then byte 75: length 75 + 15 + 7 + 3 = 100; 101 'a'. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00, 0x0F, 0x4B};
    uint8_t out[128];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 101);
    DM_ASSERT(all_bytes(out, 101, 'a'));
}

DM_TEST(u16_length)
{
    /* Nibble 15, byte 255, then u16 997 = length - 3: length 1000. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00,
                                 0x0F, 0xFF, 0xE5, 0x03};
    static uint8_t out[2048];

    DM_ASSERT_EQ_INT(inflate(in, sizeof in, out, sizeof out), 1001);
    DM_ASSERT(all_bytes(out, 1001, 'a'));
}

DM_TEST(u32_length)
{
    /* Nibble 15, byte 255, u16 0, then u32 69997 = length - 3: 70000. */
    static const uint8_t in[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00, 0x0F,
                                 0xFF, 0x00, 0x00, 0x6D, 0x11, 0x01, 0x00};
    uint8_t *out = malloc(80000);

    DM_ASSERT(out != NULL);
    long n = inflate(in, sizeof in, out, 80000);
    int ok = n == 70001 && all_bytes(out, 70001, 'a');
    free(out);
    DM_ASSERT_EQ_INT(n, 70001);
    DM_ASSERT(ok);
}

DM_TEST(flag_word_boundaries)
{
    /* 32 literals under an all-zero flag word, then a second flag word whose
     * first item is a match of distance 32 length 5 (token (31 << 3) | 2 =
     * 0x00FA): the alphabet, then "ABCDE". */
    static const char lits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";
    uint8_t in[64], out[64];
    size_t n = 0;

    memset(in, 0, 4);
    n = 4;
    memcpy(in + n, lits, 32);
    n += 32;
    memset(in + n, 0xFF, 4);
    n += 4;
    in[n++] = 0xFA;
    in[n++] = 0x00;
    DM_ASSERT_EQ_INT(inflate(in, n, out, sizeof out), 37);
    DM_ASSERT_MEM_EQ(out, lits, 32);
    DM_ASSERT_MEM_EQ(out + 32, "ABCDE", 5);

    /* The same 32 literals with nothing after them: the stream ends exactly
     * where the next flag word would start, which is a complete stream. */
    DM_ASSERT_EQ_INT(inflate(in, 36, out, sizeof out), 32);
    DM_ASSERT_MEM_EQ(out, lits, 32);
    /* ...and exactly filling the output. */
    DM_ASSERT_EQ_INT(inflate(in, 36, out, 32), 32);

    /* 31 literals and one match flag in the first word (0x00000001), the
     * match (distance 31, length 3: token (30 << 3) = 0x00F0) being the last
     * item before the next flag word. */
    {
        uint8_t in2[48];
        size_t m = 0;

        in2[m++] = 0x01;
        in2[m++] = 0x00;
        in2[m++] = 0x00;
        in2[m++] = 0x00;
        memcpy(in2 + m, lits, 31);
        m += 31;
        in2[m++] = 0xF0;
        in2[m++] = 0x00;
        DM_ASSERT_EQ_INT(inflate(in2, m, out, sizeof out), 34);
        DM_ASSERT_MEM_EQ(out, lits, 31);
        DM_ASSERT_MEM_EQ(out + 31, "ABC", 3);
    }
}

/* Inflate a whole static test vector into out. */
#define WHOLE(v) inflate((v), sizeof(v), out, sizeof out)

DM_TEST(malformed_inputs)
{
    uint8_t out[64];
    /* A match before any output. */
    static const uint8_t before_start[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x10, 0x00};
    /* "a" then distance 2: one byte too far back. */
    static const uint8_t too_far[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x08, 0x00};
    /* Long-match token with no nibble byte. */
    static const uint8_t no_nibble[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00};
    /* Nibble 15 with no length byte. */
    static const uint8_t no_byte[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00, 0x0F};
    /* Byte 255 with half of the u16. */
    static const uint8_t half_u16[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07,
                                       0x00, 0x0F, 0xFF, 0xE5};
    /* u16 0 with three bytes of the u32. */
    static const uint8_t short_u32[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00,
                                        0x0F, 0xFF, 0x00, 0x00, 0x6D, 0x11, 0x01};
    /* u16 21: below the 22 that the longer forms start at. */
    static const uint8_t u16_too_small[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07,
                                            0x00, 0x0F, 0xFF, 0x15, 0x00};
    /* Half a match token. */
    static const uint8_t half_token[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x10};
    /* A literal flag with the input used up. */
    static const uint8_t missing_literal[] = {0x00, 0x00, 0x00, 0x00, 'a', 'b', 'c'};
    /* A flag word cut short. */
    static const uint8_t short_flags[] = {0xFF, 0xFF};
    static const uint8_t abcabc[] = {0xFF, 0xFF, 0xFF, 0x1F, 'a', 'b', 'c', 0x10, 0x00};

    DM_ASSERT_EQ_INT(WHOLE(before_start), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(too_far), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(no_nibble), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(no_byte), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(half_u16), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(short_u32), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(u16_too_small), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(half_token), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(missing_literal), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(WHOLE(short_flags), DM_ECORRUPT);
    /* Output overflow: the match needs 6 bytes, a literal needs 3. */
    DM_ASSERT_EQ_INT(inflate(abcabc, sizeof abcabc, out, 6), 6);
    DM_ASSERT_EQ_INT(inflate(abcabc, sizeof abcabc, out, 5), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(inflate(abcabc, sizeof abcabc, out, 2), DM_ECORRUPT);
}

DM_TEST(literal_word_into_small_output)
{
    /* An all-literal flag word must not copy 32 bytes into 31 of room. */
    uint8_t in[40], out[32];

    memset(in, 0, 4);
    memset(in + 4, 'z', 32);
    DM_ASSERT_EQ_INT(inflate(in, 36, out, 31), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(inflate(in, 36, out, 32), 32);
    DM_ASSERT(all_bytes(out, 32, 'z'));
}

DM_TEST(random_input_never_escapes)
{
    /* Arbitrary bytes: the result is a length within the output or
     * DM_ECORRUPT; ASan builds check that nothing is touched outside. */
    uint32_t seed = 12345;
    uint8_t in[256];

    for (int iter = 0; iter < 3000; iter++) {
        size_t in_len = (size_t)(iter % 256), cap = (size_t)(iter * 7 % 300);
        uint8_t *out = malloc(cap > 0 ? cap : 1);
        long n;

        DM_ASSERT(out != NULL);
        for (size_t i = 0; i < in_len; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = (uint8_t)(seed >> 16);
            /* Bias toward match flags and small tokens. */
            if (i < 4 && iter % 3 == 0)
                in[i] |= 0xF0;
        }
        n = dm_lz77_decompress(in, in_len, out, cap);
        free(out);
        DM_ASSERT(n == DM_ECORRUPT || (n >= 0 && (size_t)n <= cap));
    }
}

/* Read a whole file; NULL when it cannot. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;

    if (f == NULL)
        return NULL;
    for (;;) {
        if (n == cap) {
            uint8_t *p = realloc(buf, cap ? cap * 2 : 1 << 20);
            if (p == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
            cap = cap ? cap * 2 : 1 << 20;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/*
 * Walk the buffers of one sample (72-byte headers, BufferSize at 0, Offset at
 * 0x30, BufferFlag at 0x34: docs/etw.md §4) and inflate every compressed
 * one. Counts buffers, compressed buffers and failures; a failure is an
 * inflated size other than Offset - 0x48, or inflated data whose first
 * record marker lacks the 0xC0 trace-header flags.
 */
static void inflate_sample(const char *name, unsigned *buffers,
                           unsigned *compressed, unsigned *failures)
{
    char path[1024];
    size_t len = 0, off = 0;
    uint8_t *file, *out = malloc(1 << 20);

    *buffers = *compressed = *failures = 0;
    snprintf(path, sizeof path, "%s/%s", dmt_shared_etl_dir(), name);
    file = slurp(path, &len);
    if (file == NULL || out == NULL) {
        *failures = 1;
        free(file);
        free(out);
        return;
    }
    while (off + 0x48 <= len) {
        uint32_t size = le32(file + off), filled = le32(file + off + 0x30);
        unsigned flags = file[off + 0x34] | file[off + 0x35] << 8;

        if (size < 0x48 || size > len - off || filled < 0x48 ||
            filled - 0x48 > (1u << 20)) {
            (*failures)++;
            break;
        }
        (*buffers)++;
        if (flags & 0x40) {
            long n = dm_lz77_decompress(file + off + 0x48, size - 0x48, out,
                                        filled - 0x48);
            (*compressed)++;
            if (n != (long)(filled - 0x48) || (n >= 4 && (out[3] & 0xC0) != 0xC0))
                (*failures)++;
        }
        off += size;
    }
    if (off != len)
        (*failures)++;
    free(file);
    free(out);
}

DM_TEST(sample_buffers_inflate_exactly)
{
    unsigned buffers, compressed, failures;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder ../shared/etl not found");

    /* docs/etw.md §4: the perfview sample has 360 buffers; README: every
     * buffer after the first is compressed. */
    inflate_sample("perfview-net452-x64-win8.etl", &buffers, &compressed, &failures);
    DM_ASSERT_EQ_INT(failures, 0);
    DM_ASSERT_EQ_INT(buffers, 360);
    DM_ASSERT_EQ_INT(compressed, 359);

    inflate_sample("filtrace-diskio-win11.etl", &buffers, &compressed, &failures);
    DM_ASSERT_EQ_INT(failures, 0);
    DM_ASSERT(buffers > 1);
    DM_ASSERT_EQ_INT(compressed, buffers - 1);
}

/*
 * Inflate in through dm_lz77_inflate one input byte at a time, each in a
 * new allocation freed after the call (what the last call left unused is
 * handed over again), into out with room for step more bytes per call.
 * Returns the count or DM_ECORRUPT; *saw_half is set when a call ended
 * with a shared nibble pending whose byte was in an earlier allocation.
 */
static long inflate_cut(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap,
                        size_t step, int *saw_half)
{
    struct dm_lz77 z;
    size_t fed = 0, opos = 0, left = 0;
    uint8_t keep[16];

    dm_lz77_init(&z);
    *saw_half = 0;
    for (;;) {
        uint8_t *chunk = malloc(left + 1);
        size_t cpos = 0, clen = left, room = opos + step < cap ? opos + step : cap;
        int rc;

        if (chunk == NULL)
            return DM_ECORRUPT;
        memcpy(chunk, keep, left);
        if (fed < in_len)
            chunk[clen++] = in[fed++];
        rc = dm_lz77_inflate(&z, chunk, clen, &cpos, fed == in_len, out, room, &opos);
        left = clen - cpos;
        if (left > sizeof keep) /* never more than an item's 10 bytes */
            rc = DM_ECORRUPT;
        else
            memcpy(keep, chunk + cpos, left);
        free(chunk);
        if (z.has_half && rc != DM_LZ77_END) /* its byte was consumed */
            *saw_half = 1;
        if (rc == DM_LZ77_END)
            return (long)opos;
        if (rc < 0 || (rc == DM_LZ77_OUT_FULL && room == cap))
            return DM_ECORRUPT;
    }
}

DM_TEST(resumable_cut_everywhere)
{
    /* nibble_shared_by_two_matches' stream with 12 literals between the
     * matches: the byte 0x32 gives the first long match its low nibble
     * and the second its high one, after the byte's chunk was freed.
     * Flags 0000 1 (0 x 12) 1 + padding = 0x08007FFF. */
    static const uint8_t shared[] = {0xFF, 0x7F, 0x00, 0x08, 'a', 'b', 'c', 'd',
                                     0x1F, 0x00, 0x32, 'x', 'x', 'x', 'x', 'x',
                                     'x', 'x', 'x', 'x', 'x', 'x', 'x', 0x07, 0x00};
    static const char want[] = "abcdabcdabcdabcdxxxxxxxxxxxxxxxxxxxxxxxxx";
    /* u32_length's: one match of 70,000 bytes, cut by every window. */
    static const uint8_t u32[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07, 0x00, 0x0F,
                                  0xFF, 0x00, 0x00, 0x6D, 0x11, 0x01, 0x00};
    static const uint8_t before_start[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x10, 0x00};
    static const uint8_t half_u16[] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 0x07,
                                       0x00, 0x0F, 0xFF, 0xE5};
    uint8_t out[64], *big = malloc(80000);
    int saw_half = 0, any_half = 0;

    DM_ASSERT(big != NULL);
    for (size_t step = 1; step <= 40; step++) {
        memset(out, 0, sizeof out);
        DM_ASSERT_EQ_INT(inflate_cut(shared, sizeof shared, out, sizeof out, step,
                                     &saw_half), 41);
        DM_ASSERT_MEM_EQ(out, want, 41);
        any_half |= saw_half;
        /* Output one byte short: the last match has no room. */
        DM_ASSERT_EQ_INT(inflate_cut(shared, sizeof shared, out, 40, step, &saw_half),
                         DM_ECORRUPT);
        DM_ASSERT_EQ_INT(inflate_cut(before_start, sizeof before_start, out,
                                     sizeof out, step, &saw_half), DM_ECORRUPT);
        DM_ASSERT_EQ_INT(inflate_cut(half_u16, sizeof half_u16, out, sizeof out,
                                     step, &saw_half), DM_ECORRUPT);
    }
    DM_ASSERT(any_half);
    for (size_t step = 1; step <= 70001; step = step * 3 + 1) {
        long n = inflate_cut(u32, sizeof u32, big, 80000, step, &saw_half);
        int ok = n == 70001 && all_bytes(big, 70001, 'a');

        if (!ok)
            free(big);
        DM_ASSERT_EQ_INT(n, 70001);
        DM_ASSERT(ok);
    }
    free(big);
}

const struct dmt_case dm_suite_lz77[] = {
    {"empty_input", empty_input},
    {"literals_only", literals_only},
    {"simple_match", simple_match},
    {"overlapping_match_run_length", overlapping_match_run_length},
    {"long_match_distance_8_and_more", long_match_distance_8_and_more},
    {"nibble_length", nibble_length},
    {"nibble_shared_by_two_matches", nibble_shared_by_two_matches},
    {"byte_length", byte_length},
    {"u16_length", u16_length},
    {"u32_length", u32_length},
    {"flag_word_boundaries", flag_word_boundaries},
    {"malformed_inputs", malformed_inputs},
    {"literal_word_into_small_output", literal_word_into_small_output},
    {"random_input_never_escapes", random_input_never_escapes},
    {"sample_buffers_inflate_exactly", sample_buffers_inflate_exactly},
    {"resumable_cut_everywhere", resumable_cut_everywhere},
    {NULL, NULL},
};
