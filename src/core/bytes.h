/*
 * bytes.h - reading little-endian integers out of untrusted byte buffers.
 *
 * ETW payloads, .etl buffers and perf samples are all little-endian. These
 * read byte by byte, so they are correct on any host and at any alignment;
 * compilers turn each into one load. Callers check the length first.
 */
#ifndef DM_BYTES_H
#define DM_BYTES_H

#include <stdint.h>

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

#endif /* DM_BYTES_H */
