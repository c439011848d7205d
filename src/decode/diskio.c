/*
 * diskio.c - decoding of the kernel's DiskIo MOF payloads (see diskio.h).
 *
 * The decoding itself is inline in diskio.h, so that the kernel decoder's
 * hot path (nt_kernel_diskio.c, once per DiskIo record) compiles it in place; this
 * is the out-of-line entry for everyone else.
 */
#include "decode/diskio.h"
#include "diskmon.h"

int dm_diskio_decode(unsigned opcode, unsigned version, unsigned pointer_size,
                     const void *payload, size_t len, struct dm_diskio *out)
{
    return dm_diskio_decode_inline(opcode, version, pointer_size, payload, len, out);
}
