/*
 * dm_json.c - diskmon's own -f json lines read back (output/format.c writes
 * them; docs/output.md lists the keys): one flat object per line, keys in
 * any order, keys diskmon does not write skipped. sector and length follow
 * from offset and bytes and are only checked to be numbers. time_utc
 * (--utc) gives the wall clock of time 0, so the output's --clock and
 * --utc are the capture's own. A name's \ufffd (a byte that was not UTF-8,
 * escape.h) is read back as one such byte, 0xFF, so that writing json again
 * gives the same line.
 */
#include <string.h>

#include "input/fields.h"
#include "input/input.h"
#include "input/json_lex.h"

/* Keys every row has (format.c, json_event); a row without one is
 * malformed. */
#define HAVE_TIME 0x01u
#define HAVE_DURATION 0x02u
#define HAVE_DISK 0x04u
#define HAVE_REQUEST 0x08u
#define HAVE_OFFSET 0x10u
#define HAVE_BYTES 0x20u
#define HAVE_ALL 0x3Fu
/* duration_ms is left out of a request without a duration (diskmon.h,
 * DM_EV_NO_DURATION). */
#define HAVE_NEEDED (HAVE_ALL & ~HAVE_DURATION)

/* The keys diskmon writes (format.c, json_event), and any other. */
enum key {
    K_OTHER, K_SEQ, K_TIME, K_TIME_UTC, K_DURATION, K_QUEUE, K_DISK, K_REQUEST, K_OFFSET,
    K_BYTES, K_SECTOR, K_LENGTH, K_PID, K_TID, K_PROCESS, K_FILE, K_IRP_FLAGS, K_FLAGS,
    K_PRIORITY, K_PARTITION, K_CGROUP
};

#define KEY(name, key) {name, sizeof name - 1, key}

static const struct {
    const char *name;
    size_t len;
    enum key key;
} keys[] = { /* in the order diskmon writes them, so the first tries match */
    KEY("seq", K_SEQ), KEY("time", K_TIME), KEY("time_utc", K_TIME_UTC),
    KEY("duration_ms", K_DURATION), KEY("queue_ms", K_QUEUE), KEY("disk", K_DISK),
    KEY("request", K_REQUEST), KEY("offset", K_OFFSET), KEY("bytes", K_BYTES),
    KEY("sector", K_SECTOR), KEY("length", K_LENGTH), KEY("pid", K_PID),
    KEY("tid", K_TID), KEY("process", K_PROCESS), KEY("file", K_FILE),
    KEY("irp_flags", K_IRP_FLAGS), KEY("flags", K_FLAGS), KEY("priority", K_PRIORITY),
    KEY("partition", K_PARTITION), KEY("cgroup", K_CGROUP),
};

/* The key at c->p, quoted, if it is keys[i]: 1 with the cursor past it. */
static int key_here(struct dm_json *c, size_t i)
{
    size_t len = keys[i].len;

    if ((size_t)(c->end - c->p) < len + 2 || c->p[0] != '"' || c->p[1] != keys[i].name[0] ||
        c->p[len + 1] != '"')
        return 0;
    for (size_t k = 1; k < len; k++) /* at most 11 bytes: no call */
        if (c->p[1 + k] != keys[i].name[k])
            return 0;
    c->p += len + 2;
    return 1;
}

/*
 * The key at c->p (a string, then ':'). The keys come in the writer's
 * order, so the search starts after the previous key found and matches the
 * quoted name in place: a line of diskmon's costs about one try per key.
 * A key that is none of diskmon's (a later version's, or an escaped one)
 * is read as a string and is K_OTHER.
 */
static int read_key(struct dm_json *c, enum key *key, size_t *next)
{
    const size_t n = sizeof keys / sizeof keys[0];
    size_t t;

    for (t = 0; t < n; t++) {
        size_t i = *next + t < n ? *next + t : *next + t - n; /* no division */

        if (key_here(c, i)) {
            *key = keys[i].key;
            *next = i + 1;
            break;
        }
    }
    if (t == n) {
        *key = K_OTHER;
        if (dm_json_skip(c) != 0)
            return -1;
    }
    dm_json_ws(c);
    if (c->p == c->end || *c->p != ':')
        return -1;
    c->p++;
    dm_json_ws(c);
    return 0;
}

/* A 32-bit number's value. */
static int u32_of(const char *p, size_t len, uint32_t *v)
{
    uint64_t x;

    if (dm_field_u64(p, len, &x) != 0 || x > UINT32_MAX)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

/* A name's string into dst; flag set in the event. */
static int name_value(struct dm_json *c, char *dst, size_t cap, struct dm_row *row,
                      uint16_t flag)
{
    size_t len;

    row->ev.flags |= flag;
    return dm_json_string(c, dst, cap, &len);
}

/* file: "..." first says the path was cut (its end kept). */
static int file_value(struct dm_json *c, struct dm_row *row)
{
    size_t len;

    if (dm_json_string(c, row->file, sizeof row->file, &len) != 0)
        return -1;
    row->ev.flags |= DM_EV_HAS_FILE;
    if (len >= 3 && memcmp(row->file, "...", 3) == 0) {
        memmove(row->file, row->file + 3, len - 2);
        row->ev.flags |= DM_EV_FILE_CUT;
    }
    return 0;
}

/* The keys whose value is a string. */
static int string_value(struct dm_json *c, enum key key, struct dm_row *row, unsigned *have)
{
    const char *s;
    size_t len;
    int rq;

    switch (key) {
    case K_DISK:
        *have |= HAVE_DISK;
        return dm_json_string(c, row->disk_name, sizeof row->disk_name, &len) != 0 || len == 0
                   ? -1 : 0;
    case K_PROCESS:
        return name_value(c, row->process, sizeof row->process, row, DM_EV_HAS_PROCESS);
    case K_FILE:
        return file_value(c, row);
    case K_PARTITION:
        return name_value(c, row->partition, sizeof row->partition, row, 0);
    case K_CGROUP:
        return name_value(c, row->cgroup, sizeof row->cgroup, row, 0);
    case K_REQUEST: /* diskmon's words hold no escape */
        if (dm_json_raw(c, &s, &len) != 0 || (rq = dm_field_request(s, len)) < 0)
            return -1;
        row->ev.request = (uint8_t)rq;
        *have |= HAVE_REQUEST;
        return 0;
    case K_FLAGS:
        return dm_json_raw(c, &s, &len) != 0 ||
                       dm_field_req_flags(s, len, &row->ev.req_flags) != 0 ? -1 : 0;
    case K_TIME_UTC:
        return dm_json_raw(c, &s, &len) != 0 ||
                       dm_json_utc_ns(s, len, &row->start_wall_ns) != 0 ? -1 : 0;
    default:
        return dm_json_skip(c);
    }
}

/* The keys whose value is a number. */
static int number_value(struct dm_json *c, enum key key, struct dm_row *row, unsigned *have)
{
    struct dm_event *ev = &row->ev;
    const char *p;
    size_t len;
    uint64_t x;
    uint32_t v;

    if (dm_json_number(c, &p, &len) != 0)
        return -1;
    switch (key) {
    case K_TIME:
        *have |= HAVE_TIME;
        return dm_field_fixed(p, len, 9, 1, &ev->time_ns);
    case K_DURATION:
        *have |= HAVE_DURATION;
        return dm_field_fixed(p, len, 6, 1, &ev->duration_ns);
    case K_QUEUE:
        ev->flags |= DM_EV_HAS_QUEUE;
        return dm_field_fixed(p, len, 6, 1, &ev->queue_ns);
    case K_OFFSET:
        *have |= HAVE_OFFSET;
        return dm_field_u64(p, len, &ev->byte_offset);
    case K_BYTES:
        *have |= HAVE_BYTES;
        return u32_of(p, len, &ev->transfer_size);
    case K_DISK:
        *have |= HAVE_DISK;
        return u32_of(p, len, &ev->disk);
    case K_PID:
        ev->flags |= DM_EV_HAS_PID;
        return u32_of(p, len, &ev->pid);
    case K_TID:
        ev->flags |= DM_EV_HAS_TID;
        return u32_of(p, len, &ev->tid);
    case K_IRP_FLAGS:
        ev->flags |= DM_EV_HAS_IRP_FLAGS;
        return u32_of(p, len, &ev->irp_flags);
    case K_PRIORITY:
        ev->flags |= DM_EV_HAS_PRIORITY;
        if (u32_of(p, len, &v) != 0 || v > UINT8_MAX)
            return -1;
        ev->priority = (uint8_t)v;
        return 0;
    case K_SEQ: case K_SECTOR: case K_LENGTH: /* worked out again from the others */
        return dm_field_u64(p, len, &x);
    default: /* a later version's number */
        return 0;
    }
}

static int json_parse(char *line, size_t len, struct dm_row *row)
{
    struct dm_json c = {line, line + len};
    unsigned have = 0;
    size_t next_key = 0;

    dm_json_ws(&c);
    if (c.p == c.end || *c.p != '{')
        return DM_ROW_MALFORMED;
    c.p++;
    dm_row_reset(row);
    dm_json_ws(&c);
    if (c.p < c.end && *c.p == '}')
        return DM_ROW_MALFORMED; /* {}: no keys, so not a row */
    for (;;) {
        enum key key;
        int rc;

        if (read_key(&c, &key, &next_key) != 0 || c.p == c.end)
            return DM_ROW_MALFORMED;
        if (*c.p == '"')
            rc = string_value(&c, key, row, &have);
        else if ((*c.p >= '0' && *c.p <= '9') || *c.p == '-')
            rc = number_value(&c, key, row, &have);
        else
            rc = dm_json_skip(&c);
        if (rc != 0)
            return DM_ROW_MALFORMED;
        dm_json_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            dm_json_ws(&c);
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        return DM_ROW_MALFORMED;
    }
    dm_json_ws(&c);
    if (c.p != c.end || (have & HAVE_NEEDED) != HAVE_NEEDED)
        return DM_ROW_MALFORMED;
    if (!(have & HAVE_DURATION))
        row->ev.flags |= DM_EV_NO_DURATION;
    if (row->start_wall_ns != 0) { /* time_utc: the wall clock at time 0 */
        if (row->start_wall_ns < row->ev.time_ns)
            return DM_ROW_MALFORMED;
        row->start_wall_ns -= row->ev.time_ns;
    }
    return DM_ROW_OK;
}

/* The first line starts as diskmon's do: {"seq": */
static int json_sniff(const char *head, size_t len)
{
    static const char start[] = "{\"seq\":";
    size_t n;
    const char *line = dm_input_first_line(head, len, &n);

    return n >= sizeof start - 1 && memcmp(line, start, sizeof start - 1) == 0;
}

const struct dm_input_format dm_json_input = {
    .name = "json",
    .what = "diskmon -f json lines",
    .sniff = json_sniff,
    .flags = DM_INPUT_CGROUPS,
    .has_files = 1,
    .parse = json_parse,
};
