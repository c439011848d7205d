/*
 * systor.c - the SYSTOR '17 block traces (SNIA IOTTA: an enterprise
 * virtual desktop infrastructure's LUNs). A header row
 * Timestamp,Response,IOType,LUN,Offset,Size; Timestamp (the issue, seconds
 * since 1970) and Response in seconds with decimals, IOType R or W, Offset
 * and Size in bytes (docs/replay.md). A row is one completed request: its
 * time is the issue plus the response time; its disk the LUN.
 */
#include "input/fields.h"
#include "input/input.h"

#define SYSTOR_COLUMNS 6

static const char *const header[SYSTOR_COLUMNS] = {
    "Timestamp", "Response", "IOType", "LUN", "Offset", "Size",
};

static int is_header(const struct dm_csv_field *f)
{
    /* A row's first field is a number: only a header starts with a letter. */
    if (f[0].len == 0 || (unsigned)(unsigned char)f[0].p[0] - '0' <= 9)
        return 0;
    for (int i = 0; i < SYSTOR_COLUMNS; i++)
        if (!dm_field_is(f[i].p, f[i].len, header[i], 1))
            return 0;
    return 1;
}

static int systor_parse(char *line, size_t len, struct dm_row *row)
{
    struct dm_csv_field f[SYSTOR_COLUMNS];
    uint64_t issue, lun, size;

    if (dm_csv_split(line, len, f, SYSTOR_COLUMNS) != SYSTOR_COLUMNS)
        return DM_ROW_MALFORMED;
    if (is_header(f))
        return DM_ROW_SKIP;
    dm_row_reset(row);
    /* Decimals past the ns are cut: the traces carry microseconds. */
    if (dm_field_fixed(f[0].p, f[0].len, 9, 0, &issue) != 0 ||
        dm_field_fixed(f[1].p, f[1].len, 9, 0, &row->ev.duration_ns) != 0 ||
        issue > UINT64_MAX - row->ev.duration_ns ||
        dm_field_u64(f[3].p, f[3].len, &lun) != 0 || lun > UINT32_MAX ||
        dm_field_u64(f[4].p, f[4].len, &row->ev.byte_offset) != 0 ||
        dm_field_u64(f[5].p, f[5].len, &size) != 0 || size > UINT32_MAX)
        return DM_ROW_MALFORMED;
    /* IOType: one letter, R or W in either case (ASCII: 0x20 is the case bit). */
    if (f[2].len == 1 && (f[2].p[0] | 0x20) == 'r')
        row->ev.request = DM_REQ_READ;
    else if (f[2].len == 1 && (f[2].p[0] | 0x20) == 'w')
        row->ev.request = DM_REQ_WRITE;
    else
        return DM_ROW_MALFORMED;
    row->ev.time_ns = issue + row->ev.duration_ns;
    row->ev.disk = (uint32_t)lun;
    row->ev.transfer_size = (uint32_t)size;
    return DM_ROW_OK;
}

static int systor_sniff(const char *head, size_t len)
{
    return dm_sniff_parse(head, len, systor_parse);
}

const struct dm_input_format dm_systor_input = {
    .name = "systor",
    .what = "SYSTOR '17 block traces",
    .sniff = systor_sniff,
    .flags = DM_INPUT_UNORDERED | DM_INPUT_WALL_CLOCK,
    .parse = systor_parse,
};
