/*
 * diskio.h - decoding of the kernel's DiskIo MOF payloads.
 *
 * The same bytes arrive in a live ETW EVENT_RECORD (UserData) and in an .etl
 * record, so both the ETW backend and the .etl reader call this. Layouts:
 * ../shared/docs/etw-facts.md section 3 (DiskIo_TypeGroup1/2/3, versions 2
 * and 3, 32- and 64-bit pointers). The pointer size comes from the record
 * (header kind or EVENT_HEADER_FLAG_32/64_BIT_HEADER), never from the build.
 */
#ifndef DM_DISKIO_H
#define DM_DISKIO_H

#include <stddef.h>
#include <stdint.h>

/* EventType (opcode) values of the DiskIo class, EVENT_TRACE_TYPE_IO_*. */
enum dm_diskio_opcode {
    DM_DISKIO_READ = 10,
    DM_DISKIO_WRITE = 11,
    DM_DISKIO_READ_INIT = 12,
    DM_DISKIO_WRITE_INIT = 13,
    DM_DISKIO_FLUSH_BUFFERS = 14,
    DM_DISKIO_FLUSH_INIT = 15
};

struct dm_diskio {
    uint8_t opcode;
    uint8_t version;
    uint8_t has_issuing_tid;     /* version >= 3 */
    uint32_t disk_number;        /* TG1, TG3 */
    uint32_t irp_flags;          /* TG1, TG3 */
    uint32_t transfer_size;      /* TG1 */
    uint32_t reserved;           /* TG1: QueueDepth (Win7), ResponseTime (Vista) */
    uint64_t byte_offset;        /* TG1 */
    uint64_t file_object;        /* TG1 */
    uint64_t irp;                /* all */
    uint64_t high_res_response_time; /* TG1, TG3: QPC ticks, init -> completion */
    uint32_t issuing_tid;        /* when has_issuing_tid */
};

/*
 * Decode one DiskIo payload. pointer_size is 4 or 8. Returns 0, DM_ENOTFOUND
 * for an opcode that is not one of the six above, or DM_ECORRUPT when the
 * payload is shorter than the version's layout or the version is below 2.
 * Longer payloads (newer versions) are accepted: fields are read from the
 * known prefix.
 */
int dm_diskio_decode(unsigned opcode, unsigned version, unsigned pointer_size,
                     const void *payload, size_t len, struct dm_diskio *out);

#endif /* DM_DISKIO_H */
