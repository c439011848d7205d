/*
 * diskio.h - decoding of the kernel's DiskIo MOF payloads.
 *
 * The same bytes arrive in a live ETW EVENT_RECORD (UserData) and in an .etl
 * record, so both the ETW backend and the .etl reader call this. Layouts:
 * docs/etw.md §3 (DiskIo_TypeGroup1/2/3, versions 2
 * and 3, 32- and 64-bit pointers). The pointer size comes from the record
 * (header kind or EVENT_HEADER_FLAG_32/64_BIT_HEADER), never from the build.
 */
#ifndef DM_DISKIO_H
#define DM_DISKIO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/bytes.h"
#include "diskmon.h"

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

/* ---- the decoding, inline for the kernel decoder's hot path --------------
 *
 * One function, three layouts: TypeGroup1 (Read/Write completions),
 * TypeGroup2 (the Init events) and TypeGroup3 (FlushBuffers). Each field's
 * offset depends on the pointer size of the record, because the layouts mix
 * 32-bit fields with pointer-sized ones. The numbers below are from
 * docs/etw.md §3 ([MS-dio1/2/3], [phnt] ETW_DISKIO_*_V2/V3), and were
 * checked against the sample traces' reference CSVs.
 */

/*
 * TypeGroup1, Read 10 / Write 11. With P the pointer size:
 *   DiskNumber 0, IrpFlags 4, TransferSize 8, Reserved 12, ByteOffset 16
 *   (u64), FileObject 24 (ptr), Irp 24+P (ptr), HighResResponseTime 24+2P
 *   (u64), IssuingThreadId 32+2P (u32, version 3 only).
 * Sizes: v2 32+2P (48 x64, 40 x86), v3 36+2P (52 x64, 44 x86).
 * [docs/etw.md §3 table; MS diskio-typegroup1; phnt ETW_DISKIO_READWRITE_V3]
 */
static inline int dm_diskio_tg1(const uint8_t *b, size_t len, unsigned ps,
                      struct dm_diskio *out)
{
    size_t need = 32 + 2 * (size_t)ps + (out->has_issuing_tid ? 4 : 0);

    if (len < need)
        return DM_ECORRUPT;
    out->disk_number = dm_le32(b + 0);
    out->irp_flags = dm_le32(b + 4);
    out->transfer_size = dm_le32(b + 8);
    out->reserved = dm_le32(b + 12);
    out->byte_offset = dm_le64(b + 16);
    out->file_object = dm_le_ptr(b + 24, ps);
    out->irp = dm_le_ptr(b + 24 + ps, ps);
    out->high_res_response_time = dm_le64(b + 24 + 2 * ps);
    if (out->has_issuing_tid)
        out->issuing_tid = dm_le32(b + 32 + 2 * ps);
    return 0;
}

/*
 * TypeGroup2, ReadInit 12 / WriteInit 13 / FlushInit 15: Irp 0 (ptr),
 * IssuingThreadId P (u32, version 3 only). Sizes: v2 P, v3 P+4.
 * [docs/etw.md §3; MS diskio-typegroup2; phnt ETW_DISKIO_READWRITE_V3]
 */
static inline int dm_diskio_tg2(const uint8_t *b, size_t len, unsigned ps,
                      struct dm_diskio *out)
{
    size_t need = (size_t)ps + (out->has_issuing_tid ? 4 : 0);

    if (len < need)
        return DM_ECORRUPT;
    out->irp = dm_le_ptr(b, ps);
    if (out->has_issuing_tid)
        out->issuing_tid = dm_le32(b + ps);
    return 0;
}

/*
 * TypeGroup3, FlushBuffers 14: DiskNumber 0, IrpFlags 4,
 * HighResResponseTime 8 (u64), Irp 16 (ptr), IssuingThreadId 16+P (u32,
 * version 3 only). Sizes: v2 16+P (24 x64, 20 x86), v3 20+P (28 x64, 24 x86).
 * PerfView reads the thread id at 8 on x64 (docs/etw.md §6); the MOF
 * layout wins. [docs/etw.md §3; MS diskio-typegroup3; phnt ETW_DISKIO_FLUSH_BUFFERS_V3]
 */
static inline int dm_diskio_tg3(const uint8_t *b, size_t len, unsigned ps,
                      struct dm_diskio *out)
{
    size_t need = 16 + (size_t)ps + (out->has_issuing_tid ? 4 : 0);

    if (len < need)
        return DM_ECORRUPT;
    out->disk_number = dm_le32(b + 0);
    out->irp_flags = dm_le32(b + 4);
    out->high_res_response_time = dm_le64(b + 8);
    out->irp = dm_le_ptr(b + 16, ps);
    if (out->has_issuing_tid)
        out->issuing_tid = dm_le32(b + 16 + ps);
    return 0;
}

/*
 * An Init record (ReadInit, WriteInit, FlushInit) alone, for the hot path:
 * the same checks and fields as dm_diskio_decode, of a record the caller
 * knows to be an Init with a valid pointer size (4 or 8), but only
 * has_issuing_tid, irp and issuing_tid are written. Returns 0 or
 * DM_ECORRUPT (version below 2, short payload).
 */
static inline int dm_diskio_decode_init(unsigned version, unsigned pointer_size,
                                        const void *payload, size_t len,
                                        struct dm_diskio *out)
{
    if (version < 2 || (payload == NULL && len > 0))
        return DM_ECORRUPT;
    out->has_issuing_tid = version >= 3;
    out->issuing_tid = 0;
    return pointer_size == 8 ? dm_diskio_tg2(payload, len, 8, out)
                             : dm_diskio_tg2(payload, len, 4, out);
}

static inline int dm_diskio_decode_inline(unsigned opcode, unsigned version,
                                          unsigned pointer_size,
                                          const void *payload, size_t len,
                                          struct dm_diskio *out)
{
    const uint8_t *b = payload;

    memset(out, 0, sizeof *out);
    if (opcode < DM_DISKIO_READ || opcode > DM_DISKIO_FLUSH_INIT)
        return DM_ENOTFOUND;
    /* Versions 0 and 1 (Windows 2000/XP) have other layouts we do not
     * decode; 2 is Vista/7, 3 Windows 8 and later (docs/etw.md §3). */
    if (version < 2 || (pointer_size != 4 && pointer_size != 8))
        return DM_ECORRUPT;
    if (b == NULL && len > 0)
        return DM_ECORRUPT;
    out->opcode = (uint8_t)opcode;
    out->version = (uint8_t)(version > 255 ? 255 : version);
    out->has_issuing_tid = version >= 3;

    /* Each layout twice, with the pointer size a constant: the offsets
     * then fold into the loads. */
    switch (opcode) {
    case DM_DISKIO_READ:
    case DM_DISKIO_WRITE:
        return pointer_size == 8 ? dm_diskio_tg1(b, len, 8, out)
                                 : dm_diskio_tg1(b, len, 4, out);
    case DM_DISKIO_FLUSH_BUFFERS:
        return pointer_size == 8 ? dm_diskio_tg3(b, len, 8, out)
                                 : dm_diskio_tg3(b, len, 4, out);
    default: /* READ_INIT, WRITE_INIT, FLUSH_INIT */
        return pointer_size == 8 ? dm_diskio_tg2(b, len, 8, out)
                                 : dm_diskio_tg2(b, len, 4, out);
    }
}

/*
 * IrpFlags into dm_event.req_flags: the IRP_* bits Microsoft documents for
 * DiskIo_TypeGroup1 (Microsoft Learn, "DiskIo_TypeGroup1 class", IrpFlags;
 * values from Ntddk.h). 0x2 is also IRP_MOUNT_COMPLETION and 0x40 also
 * IRP_INPUT_OPERATION; on a disk read or write they are the paging bits.
 * The operation bits (create, read, write, close, 0x80-0x400) and the
 * bookkeeping ones (0x20, 0x800) say nothing the Request column does not,
 * so they are left to json's irp_flags.
 */
#define DM_IRP_NOCACHE 0x1u
#define DM_IRP_PAGING_IO 0x2u
#define DM_IRP_SYNCHRONOUS_API 0x4u
#define DM_IRP_ASSOCIATED_IRP 0x8u
#define DM_IRP_BUFFERED_IO 0x10u
#define DM_IRP_SYNCHRONOUS_PAGING_IO 0x40u
/* The I/O priority hint sits in bits 17-19 of IrpFlags (DiskIOFlags'
 * PriorityHintMask 0xE0000 in Microsoft.Windows.EventTracing.Disk; Process
 * Hacker's ExtendedTools reads (IrpFlags >> 17) & 7, 0 meaning normal and
 * n the IO_PRIORITY_HINT n - 1). The raw 0-7 is what diskmon shows. */
#define DM_IRP_PRIORITY_SHIFT 17
#define DM_IRP_PRIORITY_MASK 7u

/* The five low IRP bits are DM_RQ_NOCACHE..DM_RQ_BUFFERED shifted up by
 * DM_IRP_RQ_SHIFT, and IRP_SYNCHRONOUS_PAGING_IO (0x40) lands next to them
 * one shift less: two masks and shifts on the hot path, not six tests. */
#define DM_IRP_RQ_SHIFT 6
#define DM_IRP_RQ_LOW 0x1Fu /* NOCACHE | PAGING_IO | SYNCHRONOUS_API |
                             * ASSOCIATED_IRP | BUFFERED_IO */
_Static_assert(DM_IRP_NOCACHE << DM_IRP_RQ_SHIFT == DM_RQ_NOCACHE &&
               DM_IRP_PAGING_IO << DM_IRP_RQ_SHIFT == DM_RQ_PAGING &&
               DM_IRP_SYNCHRONOUS_API << DM_IRP_RQ_SHIFT == DM_RQ_SYNC_API &&
               DM_IRP_ASSOCIATED_IRP << DM_IRP_RQ_SHIFT == DM_RQ_ASSOCIATED &&
               DM_IRP_BUFFERED_IO << DM_IRP_RQ_SHIFT == DM_RQ_BUFFERED &&
               (DM_IRP_NOCACHE | DM_IRP_PAGING_IO | DM_IRP_SYNCHRONOUS_API |
                DM_IRP_ASSOCIATED_IRP | DM_IRP_BUFFERED_IO) == DM_IRP_RQ_LOW &&
               DM_IRP_SYNCHRONOUS_PAGING_IO << (DM_IRP_RQ_SHIFT - 1) == DM_RQ_SYNC_PAGING,
               "IrpFlags bits and DM_RQ_* bits no longer line up");

static inline uint16_t dm_diskio_req_flags(uint32_t irp_flags)
{
    return (uint16_t)((irp_flags & DM_IRP_RQ_LOW) << DM_IRP_RQ_SHIFT |
                      (irp_flags & DM_IRP_SYNCHRONOUS_PAGING_IO) << (DM_IRP_RQ_SHIFT - 1));
}

static inline uint8_t dm_diskio_priority(uint32_t irp_flags)
{
    return (uint8_t)((irp_flags >> DM_IRP_PRIORITY_SHIFT) & DM_IRP_PRIORITY_MASK);
}

#endif /* DM_DISKIO_H */
