/*
 * tencent.c - the Tencent CBS block traces (SNIA IOTTA, 2018: cloud block
 * storage volumes). No header; each row Timestamp,Offset,Size,IOType,
 * VolumeID: Timestamp in whole seconds since 1970, Offset and Size in
 * 512-byte sectors, IOType 0 for a read and 1 for a write
 * (docs/replay.md). No response times: every duration is 0 and the views
 * say the trace has no latency. The disk is the VolumeID.
 */
#include "input/fields.h"
#include "input/input.h"

#define TENCENT_COLUMNS 5
#define SECTOR_BYTES 512u
#define NS_PER_SEC UINT64_C(1000000000)

static int tencent_parse(char *line, size_t len, struct dm_row *row)
{
    struct dm_csv_field f[TENCENT_COLUMNS];
    uint64_t secs, sector, sectors, volume;

    if (dm_csv_split(line, len, f, TENCENT_COLUMNS) != TENCENT_COLUMNS)
        return DM_ROW_MALFORMED;
    dm_row_reset(row);
    if (dm_field_u64(f[0].p, f[0].len, &secs) != 0 || secs > UINT64_MAX / NS_PER_SEC ||
        dm_field_u64(f[1].p, f[1].len, &sector) != 0 || sector > UINT64_MAX / SECTOR_BYTES ||
        dm_field_u64(f[2].p, f[2].len, &sectors) != 0 ||
        sectors > UINT32_MAX / SECTOR_BYTES ||
        dm_field_u64(f[4].p, f[4].len, &volume) != 0 || volume > UINT32_MAX)
        return DM_ROW_MALFORMED;
    if (dm_field_is(f[3].p, f[3].len, "0", 0))
        row->ev.request = DM_REQ_READ;
    else if (dm_field_is(f[3].p, f[3].len, "1", 0))
        row->ev.request = DM_REQ_WRITE;
    else
        return DM_ROW_MALFORMED;
    row->ev.time_ns = secs * NS_PER_SEC;
    row->ev.byte_offset = sector * SECTOR_BYTES;
    row->ev.transfer_size = (uint32_t)(sectors * SECTOR_BYTES);
    row->ev.disk = (uint32_t)volume;
    row->ev.flags |= DM_EV_NO_DURATION; /* the trace has no response times */
    return DM_ROW_OK;
}

static int tencent_sniff(const char *head, size_t len)
{
    return dm_sniff_parse(head, len, tencent_parse);
}

const struct dm_input_format dm_tencent_input = {
    .name = "tencent",
    .what = "Tencent CBS block traces",
    .sniff = tencent_sniff,
    .flags = DM_INPUT_UNORDERED | DM_INPUT_WALL_CLOCK | DM_INPUT_NO_LATENCY,
    .parse = tencent_parse,
};
