/*
 * msr.c - the MSR Cambridge block traces (SNIA IOTTA, 2007: a week of 13
 * servers' disks, captured with ETW's DiskIo events). No header; each row
 * Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime: Timestamp
 * a Windows FILETIME (100 ns ticks since 1601-01-01 UTC) of the issue,
 * Type Read or Write, Offset and Size in bytes, ResponseTime in 100 ns
 * ticks (docs/replay.md). A row is one completed request: its time is the
 * issue plus the response time. The disk is named host_N, as SNIA names
 * the files (usr_0.csv), so the same disk number on two hosts stays two
 * disks.
 */
#include <string.h>

#include "input/fields.h"
#include "input/input.h"

#define MSR_COLUMNS 7
/* FILETIME of 1970-01-01 and ns per tick (Microsoft Learn, "FILETIME"). */
#define FILETIME_UNIX_EPOCH UINT64_C(116444736000000000)
#define NS_PER_TICK 100u

/* host "_" disk, as SNIA names the files (usr_0.csv), copied as the row
 * has them (the disk's digits were checked): -1 when it does not fit. */
static int host_disk(char *dst, size_t cap, const char *host, size_t hlen, const char *disk,
                     size_t dlen)
{
    if (hlen + 1 + dlen >= cap || memchr(host, '\0', hlen) != NULL)
        return -1;
    memcpy(dst, host, hlen);
    dst[hlen] = '_';
    memcpy(dst + hlen + 1, disk, dlen);
    dst[hlen + 1 + dlen] = '\0';
    return 0;
}

static int msr_parse(char *line, size_t len, struct dm_row *row)
{
    struct dm_csv_field f[MSR_COLUMNS];
    uint64_t ts, disk, size, ticks, issue;

    if (dm_csv_split(line, len, f, MSR_COLUMNS) != MSR_COLUMNS)
        return DM_ROW_MALFORMED;
    dm_row_reset(row);
    if (dm_field_u64(f[0].p, f[0].len, &ts) != 0 || ts < FILETIME_UNIX_EPOCH ||
        f[1].len == 0 ||
        dm_field_u64(f[2].p, f[2].len, &disk) != 0 || disk > UINT32_MAX ||
        dm_field_u64(f[4].p, f[4].len, &row->ev.byte_offset) != 0 ||
        dm_field_u64(f[5].p, f[5].len, &size) != 0 || size > UINT32_MAX ||
        dm_field_u64(f[6].p, f[6].len, &ticks) != 0 ||
        ticks > (UINT64_MAX - (ts - FILETIME_UNIX_EPOCH) * NS_PER_TICK) / NS_PER_TICK)
        return DM_ROW_MALFORMED;
    if (dm_field_is(f[3].p, f[3].len, "Read", 1))
        row->ev.request = DM_REQ_READ;
    else if (dm_field_is(f[3].p, f[3].len, "Write", 1))
        row->ev.request = DM_REQ_WRITE;
    else
        return DM_ROW_MALFORMED;
    if ((ts - FILETIME_UNIX_EPOCH) > UINT64_MAX / NS_PER_TICK)
        return DM_ROW_MALFORMED;
    issue = (ts - FILETIME_UNIX_EPOCH) * NS_PER_TICK;
    row->ev.duration_ns = ticks * NS_PER_TICK;
    row->ev.time_ns = issue + row->ev.duration_ns;
    row->ev.transfer_size = (uint32_t)size;
    row->ev.disk = (uint32_t)disk;
    if (host_disk(row->disk_name, sizeof row->disk_name, f[1].p, f[1].len, f[2].p,
                  f[2].len) != 0)
        return DM_ROW_MALFORMED;
    return DM_ROW_OK;
}

static int msr_sniff(const char *head, size_t len)
{
    return dm_sniff_parse(head, len, msr_parse);
}

const struct dm_input_format dm_msr_input = {
    .name = "msr",
    .what = "MSR Cambridge block traces",
    .sniff = msr_sniff,
    .flags = DM_INPUT_UNORDERED | DM_INPUT_WALL_CLOCK,
    .parse = msr_parse,
};
