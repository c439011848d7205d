/*
 * diskio.c - decoding of the kernel's DiskIo MOF payloads (see diskio.h).
 *
 * One function, three layouts: TypeGroup1 (Read/Write completions),
 * TypeGroup2 (the Init events) and TypeGroup3 (FlushBuffers). Each field's
 * offset depends on the pointer size of the record, because the layouts mix
 * 32-bit fields with pointer-sized ones. The numbers below are from
 * etw-facts.md section 3 ([MS-dio1/2/3], [phnt] ETW_DISKIO_*_V2/V3), and were
 * checked against the sample traces' reference CSVs.
 */
#include <string.h>

#include "core/bytes.h"
#include "decode/diskio.h"
#include "diskmon.h"

/*
 * TypeGroup1, Read 10 / Write 11. With P the pointer size:
 *   DiskNumber 0, IrpFlags 4, TransferSize 8, Reserved 12, ByteOffset 16
 *   (u64), FileObject 24 (ptr), Irp 24+P (ptr), HighResResponseTime 24+2P
 *   (u64), IssuingThreadId 32+2P (u32, version 3 only).
 * Sizes: v2 32+2P (48 x64, 40 x86), v3 36+2P (52 x64, 44 x86).
 * [etw-facts.md s.3 table; MS diskio-typegroup1; phnt ETW_DISKIO_READWRITE_V3]
 */
static int decode_tg1(const uint8_t *b, size_t len, unsigned ps,
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
 * [etw-facts.md s.3; MS diskio-typegroup2; phnt ETW_DISKIO_READWRITE_V3]
 */
static int decode_tg2(const uint8_t *b, size_t len, unsigned ps,
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
 * PerfView reads the thread id at 8 on x64 (etw-facts.md s.6); the MOF
 * layout wins. [etw-facts.md s.3; MS diskio-typegroup3; phnt ETW_DISKIO_FLUSH_BUFFERS_V3]
 */
static int decode_tg3(const uint8_t *b, size_t len, unsigned ps,
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

int dm_diskio_decode(unsigned opcode, unsigned version, unsigned pointer_size,
                     const void *payload, size_t len, struct dm_diskio *out)
{
    const uint8_t *b = payload;

    memset(out, 0, sizeof *out);
    if (opcode < DM_DISKIO_READ || opcode > DM_DISKIO_FLUSH_INIT)
        return DM_ENOTFOUND;
    /* Versions 0 and 1 (Windows 2000/XP) have other layouts we do not
     * decode; 2 is Vista/7, 3 Windows 8 and later (etw-facts.md s.3). */
    if (version < 2 || (pointer_size != 4 && pointer_size != 8))
        return DM_ECORRUPT;
    if (b == NULL && len > 0)
        return DM_ECORRUPT;
    out->opcode = (uint8_t)opcode;
    out->version = (uint8_t)(version > 255 ? 255 : version);
    out->has_issuing_tid = version >= 3;

    switch (opcode) {
    case DM_DISKIO_READ:
    case DM_DISKIO_WRITE:
        return decode_tg1(b, len, pointer_size, out);
    case DM_DISKIO_FLUSH_BUFFERS:
        return decode_tg3(b, len, pointer_size, out);
    default: /* READ_INIT, WRITE_INIT, FLUSH_INIT */
        return decode_tg2(b, len, pointer_size, out);
    }
}
