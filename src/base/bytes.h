/*
 * bytes.h - reading little-endian integers out of untrusted byte buffers.
 *
 * ETW payloads and .etl buffers are little-endian: dm_le* read them byte by
 * byte, so they are correct on any host and at any alignment; compilers turn
 * each into one load. Linux tracepoint payloads, perf records and ftrace
 * pages are in the host's byte order: dm_ne* copy native integers out of
 * possibly unaligned bytes. Callers check the length first.
 */
#ifndef DM_BYTES_H
#define DM_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t dm_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t dm_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t dm_le64(const uint8_t *p)
{
    return (uint64_t)dm_le32(p) | (uint64_t)dm_le32(p + 4) << 32;
}

/* A pointer-sized field of a kernel record (4 or 8 bytes, as its header
 * says), zero-extended. */
static inline uint64_t dm_le_ptr(const uint8_t *p, unsigned pointer_size)
{
    return pointer_size == 8 ? dm_le64(p) : dm_le32(p);
}

static inline uint16_t dm_ne16(const uint8_t *p)
{
    uint16_t v;

    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t dm_ne32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t dm_ne64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof v);
    return v;
}

#endif /* DM_BYTES_H */
