/*
 * fuzz_reorder.c - libFuzzer target: the live reorder stage
 * (src/decode/reorder.h), with its invariant checked after every step.
 *
 * Input: three bytes of setup (CPUs 1..8, window 0..2550 ticks, 1..64
 * records held at most), then steps of 4 bytes: an operation in bits 0-1
 * (push, push, release, flush), a payload length in bits 2-6 (x 32: up to
 * 992 bytes, across the inline/allocated boundary) and in bit 7 a callback
 * that fails once on its next call; a CPU (up to two past the count, which
 * the stage must take); a signed 16-bit time step. Every record carries its number in tid and
 * in its payload. After every step:
 *   released + held + refused == pushed;
 *   no record is released twice, and each comes out with its own payload;
 *   releases out of time order are exactly the ones counted late.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/reorder.h"
#include "diskmon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STEPS 4096u

struct state {
    uint8_t released[MAX_STEPS];
    uint64_t n_released, out_of_order, max_ts;
    int any;
    int fail_next;     /* the next callback returns -1 */
};

static int on_release(void *ctx, const struct dm_krecord *rec)
{
    struct state *s = ctx;
    uint32_t id = rec->tid;

    if (id >= MAX_STEPS || s->released[id])
        abort();
    s->released[id] = 1;
    s->n_released++;
    for (size_t i = 0; i < rec->payload_len; i++)
        if (rec->payload[i] != (uint8_t)(id + i))
            abort();
    if (s->any && rec->timestamp < s->max_ts)
        s->out_of_order++;
    if (!s->any || rec->timestamp > s->max_ts)
        s->max_ts = rec->timestamp;
    s->any = 1;
    if (s->fail_next) {
        s->fail_next = 0;
        return -1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct state s;
    static uint8_t payload[1024];
    struct dm_reorder *ro;
    unsigned n_cpus;
    uint64_t ts = 1u << 20, pushed = 0, refused = 0;

    if (size < 3)
        return 0;
    n_cpus = 1u + data[0] % 8u;
    ro = dm_reorder_create(n_cpus, (uint64_t)data[1] * 10u, 1u + data[2] % 64u);
    if (ro == NULL)
        abort();
    memset(&s, 0, sizeof s);
    for (size_t at = 3; size - at >= 4 && pushed < MAX_STEPS; at += 4) {
        const uint8_t *st = data + at;
        unsigned op = st[0] & 3u;
        int16_t step = (int16_t)(uint16_t)(st[2] | st[3] << 8);
        int rc;

        s.fail_next = st[0] >> 7;
        ts += (uint64_t)(int64_t)step; /* may go back in time */
        if (op <= 1) {
            struct dm_krecord rec;
            uint32_t id = (uint32_t)pushed;

            memset(&rec, 0, sizeof rec);
            rec.kclass = DM_K_DISKIO;
            rec.pointer_size = 8;
            rec.timestamp = ts;
            rec.tid = id;
            rec.pid = 4;
            rec.payload_len = (size_t)(st[0] >> 2 & 0x1Fu) * 32u;
            for (size_t i = 0; i < rec.payload_len; i++)
                payload[i] = (uint8_t)(id + i);
            rec.payload = payload;
            pushed++;
            rc = dm_reorder_push(ro, st[1] % (n_cpus + 2u), &rec, on_release, &s);
            if (rc < 0 && !s.released[id])
                refused++;
        } else if (op == 2) {
            (void)dm_reorder_release(ro, ts + st[1] * 100u, on_release, &s);
        } else {
            (void)dm_reorder_flush(ro, on_release, &s);
        }
        if (s.n_released + dm_reorder_held(ro) + refused != pushed)
            abort();
        if (dm_reorder_late(ro) != s.out_of_order)
            abort();
    }
    s.fail_next = 0;
    while (dm_reorder_held(ro) > 0)
        if (dm_reorder_flush(ro, on_release, &s) != 0 && dm_reorder_held(ro) == 0)
            break;
    if (s.n_released + refused != pushed || dm_reorder_late(ro) != s.out_of_order)
        abort();
    dm_reorder_destroy(ro);
    return 0;
}
