/*
 * dm_csv.c - diskmon's own -f csv lines read back (output/format.c writes
 * them; docs/output.md lists the columns): every column but sector and
 * length, which follow from offset and bytes. The header row is skipped
 * wherever it is (two captures joined with cat have two); a row of 18
 * fields has the Queue column of --queue after duration. A capture written
 * with --clock has wall-clock times to the microsecond in the time column:
 * those rows do not parse (docs/replay.md).
 */
#include <string.h>

#include "input/fields.h"
#include "input/input.h"

/* The columns (format.c, csv_event), without and with --queue's. */
#define CSV_COLUMNS 17
#define CSV_COLUMNS_QUEUE 18

/* An optional 32-bit number: "" is none. 1 with *v set, 0 for none, -1. */
static int opt_u32(const struct dm_csv_field *f, uint32_t *v)
{
    uint64_t x;

    if (f->len == 0)
        return 0;
    if (dm_field_u64(f->p, f->len, &x) != 0 || x > UINT32_MAX)
        return -1;
    *v = (uint32_t)x;
    return 1;
}

/* The Disk column: a number (Windows), else a name (Linux: "sda"). */
static int disk_of(const struct dm_csv_field *f, struct dm_row *row)
{
    uint64_t x;

    if (f->len == 0)
        return -1;
    if (dm_field_u64(f->p, f->len, &x) == 0 && x <= UINT32_MAX) {
        row->ev.disk = (uint32_t)x;
        return 0;
    }
    return dm_field_name(row->disk_name, sizeof row->disk_name, f->p, f->len);
}

/* The File column: "..." first says the path was cut (its end kept). */
static int file_of(const struct dm_csv_field *f, struct dm_row *row)
{
    const char *p = f->p;
    size_t len = f->len;

    if (len == 0)
        return 0;
    row->ev.flags |= DM_EV_HAS_FILE;
    if (len >= 3 && memcmp(p, "...", 3) == 0) {
        row->ev.flags |= DM_EV_FILE_CUT;
        p += 3;
        len -= 3;
    }
    return dm_field_name(row->file, sizeof row->file, p, len);
}

/* The columns after Queue's place, from Disk on. */
static int rest_of(const struct dm_csv_field *f, struct dm_row *row)
{
    struct dm_event *ev = &row->ev;
    uint64_t x;
    uint32_t v = 0;
    int rq, has;

    if (disk_of(&f[0], row) != 0 || (rq = dm_field_request(f[1].p, f[1].len)) < 0 ||
        dm_field_u64(f[2].p, f[2].len, &x) != 0 || dm_field_u64(f[3].p, f[3].len, &x) != 0)
        return DM_ROW_MALFORMED;
    ev->request = (uint8_t)rq;
    if ((has = opt_u32(&f[4], &ev->pid)) < 0)
        return DM_ROW_MALFORMED;
    ev->flags |= has ? DM_EV_HAS_PID : 0;
    if ((has = opt_u32(&f[5], &ev->tid)) < 0)
        return DM_ROW_MALFORMED;
    ev->flags |= has ? DM_EV_HAS_TID : 0;
    if (f[6].len > 0) {
        ev->flags |= DM_EV_HAS_PROCESS;
        if (dm_field_name(row->process, sizeof row->process, f[6].p, f[6].len) != 0)
            return DM_ROW_MALFORMED;
    }
    if (file_of(&f[7], row) != 0 || dm_field_u64(f[8].p, f[8].len, &ev->byte_offset) != 0 ||
        dm_field_u64(f[9].p, f[9].len, &x) != 0 || x > UINT32_MAX ||
        dm_field_req_flags(f[10].p, f[10].len, &ev->req_flags) != 0)
        return DM_ROW_MALFORMED;
    ev->transfer_size = (uint32_t)x;
    if ((has = opt_u32(&f[11], &v)) < 0 || (has && v > UINT8_MAX))
        return DM_ROW_MALFORMED;
    if (has) {
        ev->flags |= DM_EV_HAS_PRIORITY;
        ev->priority = (uint8_t)v;
    }
    if (dm_field_name(row->partition, sizeof row->partition, f[12].p, f[12].len) != 0 ||
        dm_field_name(row->cgroup, sizeof row->cgroup, f[13].p, f[13].len) != 0)
        return DM_ROW_MALFORMED;
    return DM_ROW_OK;
}

static int csv_parse(char *line, size_t len, struct dm_row *row)
{
    struct dm_csv_field f[CSV_COLUMNS_QUEUE];
    int n = dm_csv_split(line, len, f, CSV_COLUMNS_QUEUE);
    int queue = n == CSV_COLUMNS_QUEUE;
    uint64_t seq;

    if (n != CSV_COLUMNS && n != CSV_COLUMNS_QUEUE)
        return DM_ROW_MALFORMED;
    if (dm_field_is(f[0].p, f[0].len, "seq", 0) && dm_field_is(f[1].p, f[1].len, "time", 0))
        return DM_ROW_SKIP; /* the header */
    dm_row_reset(row);
    if (dm_field_u64(f[0].p, f[0].len, &seq) != 0 ||
        dm_field_fixed(f[1].p, f[1].len, 9, 1, &row->ev.time_ns) != 0)
        return DM_ROW_MALFORMED;
    /* empty: a replay of a trace without latency wrote none */
    if (f[2].len == 0)
        row->ev.flags |= DM_EV_NO_DURATION;
    else if (dm_field_fixed(f[2].p, f[2].len, 9, 1, &row->ev.duration_ns) != 0)
        return DM_ROW_MALFORMED;
    if (queue && f[3].len > 0) {
        if (dm_field_fixed(f[3].p, f[3].len, 9, 1, &row->ev.queue_ns) != 0)
            return DM_ROW_MALFORMED;
        row->ev.flags |= DM_EV_HAS_QUEUE;
    }
    return rest_of(&f[3 + queue], row);
}

static int csv_sniff(const char *head, size_t len)
{
    return dm_sniff_parse(head, len, csv_parse);
}

const struct dm_input_format dm_csv_input = {
    .name = "csv",
    .what = "diskmon -f csv",
    .sniff = csv_sniff,
    .flags = DM_INPUT_CGROUPS,
    .has_files = 1,
    .parse = csv_parse,
};
