/*
 * test_replay.c - the replay source end to end on the two sample traces.
 *
 * Runs dm_replay_source's open/run/close into a ring on this thread, then
 * checks the events against independent references in the shared folder:
 *   - reference/NAME.diskio.csv: every DiskIo event of the trace decoded by
 *     another decoder; each Read/Write/FlushBuffers row must come out exactly
 *     once with the same fields, and nothing else may come out;
 *   - reference/perfview-net452-x64-win8.baseline.txt: PerfView's own output
 *     (COUNT lines, and PID, process, size, elapsed time and file name of the
 *     DiskIO events it lists).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "core/ring.h"
#include "core/sink.h"
#include "diskmon.h"
#include "dmtest.h"
#include "etl/etl.h"
#include "platform/platform.h"

#define WIN8 "perfview-net452-x64-win8"
#define WIN11 "filtrace-diskio-win11"
#define MAX_EVENTS 4096  /* more than either sample holds (1231, 119) */
#define MAX_ROWS 4096

struct run {
    struct dm_event *ev;
    size_t n;
    uint64_t header_ts;
    uint64_t malformed, lost, start_wall_ns;
};

/* One DiskIo completion row of a reference CSV. */
struct row {
    unsigned opcode;
    uint64_t timestamp, irp, byte_offset, hrrt;
    uint32_t disk, irp_flags, transfer_size, itid;
    int seen;
};

static double absd(double x)
{
    return x < 0 ? -x : x;
}

static void path_of(char *buf, size_t len, const char *sub, const char *name,
                    const char *ext)
{
    snprintf(buf, len, "%s/%s%s%s", dmt_shared_etl_dir(), sub, name, ext);
}

/* Replay one sample into r->ev. Returns 0 or the failing step's error. */
static int replay(const char *name, struct run *r)
{
    struct dm_options opt;
    struct dm_source src;
    struct dm_sink sink;
    struct dm_ring *ring;
    struct dm_etl *etl;
    char path[1024], err[512];
    int rc;

    memset(r, 0, sizeof *r);
    path_of(path, sizeof path, "", name, ".etl");
    /* The header timestamp (time 0), read with the reader alone. */
    rc = dm_etl_open(&etl, path, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "    %s\n", err);
        return rc;
    }
    r->header_ts = dm_etl_info(etl)->header_timestamp;
    dm_etl_close(etl);

    memset(&opt, 0, sizeof opt);
    opt.replay_path = path;
    memset(&src, 0, sizeof src);
    src.ops = &dm_replay_source;
    ring = dm_ring_create(MAX_EVENTS * DM_RING_RECORD_MAX);
    r->ev = malloc(MAX_EVENTS * sizeof *r->ev);
    if (ring == NULL || r->ev == NULL)
        return DM_ENOMEM;
    memset(&sink, 0, sizeof sink);
    sink.ring = ring;
    sink.wait_when_full = 1;

    rc = src.ops->open(&src, &opt);
    if (rc == 0)
        rc = src.ops->run(&src, &sink);
    if (rc < 0)
        fprintf(stderr, "    %s\n", src.errmsg);
    r->malformed = src.malformed;
    r->lost = src.lost_events;
    r->start_wall_ns = src.start_wall_ns;
    src.ops->close(&src);
    dm_ring_close(ring);
    r->n = dmt_ring_take(ring, r->ev, MAX_EVENTS);
    dm_ring_destroy(ring);
    return rc;
}

/* Split a CSV line in place; empty fields stay empty strings. */
static int split(char *line, char **f, int max)
{
    int n = 0;

    line[strcspn(line, "\r\n")] = '\0';
    f[n++] = line;
    for (char *p = line; *p != '\0' && n < max; p++) {
        if (*p == ',') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

/* The Read/Write/FlushBuffers rows of reference/NAME.diskio.csv. */
static size_t load_rows(const char *name, struct row *rows)
{
    char path[1024], line[1024], *f[32];
    size_t n = 0;
    FILE *fp;

    path_of(path, sizeof path, "reference/", name, ".diskio.csv");
    fp = fopen(path, "r");
    if (fp == NULL)
        return 0;
    if (fgets(line, sizeof line, fp) == NULL) { /* header line */
        fclose(fp);
        return 0;
    }
    /* seq,buffer_file_offset,header_type,event_version,opcode,timestamp,
     * header_tid,header_pid,DiskNumber,IrpFlags_hex,TransferSize,Reserved,
     * ByteOffset,FileObject_hex,Irp_hex,HighResResponseTime,
     * IssuingThreadId,mof_len */
    while (fgets(line, sizeof line, fp) != NULL && n < MAX_ROWS) {
        struct row *r = &rows[n];
        unsigned op;
        if (split(line, f, 32) < 18)
            continue;
        op = (unsigned)strtoul(f[4], NULL, 10);
        if (op != 10 && op != 11 && op != 14)
            continue;
        memset(r, 0, sizeof *r);
        r->opcode = op;
        r->timestamp = strtoull(f[5], NULL, 10);
        r->disk = (uint32_t)strtoul(f[8], NULL, 10);
        r->irp_flags = (uint32_t)strtoul(f[9], NULL, 16);
        r->transfer_size = (uint32_t)strtoul(f[10], NULL, 10);
        r->byte_offset = strtoull(f[12], NULL, 10);
        r->irp = strtoull(f[14], NULL, 16);
        r->hrrt = strtoull(f[15], NULL, 10);
        r->itid = (uint32_t)strtoul(f[16], NULL, 10);
        n++;
    }
    fclose(fp);
    return n;
}

static int request_of(unsigned opcode)
{
    return opcode == 10 ? DM_REQ_READ : opcode == 11 ? DM_REQ_WRITE : DM_REQ_FLUSH;
}

/* Both samples run at 10 MHz (README): 1 tick = 100 ns. */
static uint64_t ticks_to_ns(uint64_t ticks)
{
    return ticks * 100u;
}

/*
 * Common checks of one sample against its CSV: each completion row matches
 * exactly one event (same IRP, request, byte offset and timestamp), with the
 * same disk, size, flags, duration and issuing thread; nothing else comes
 * out; time never goes backwards; the per-request counts are as expected.
 */
static void check_against_csv(const char *name, unsigned reads, unsigned writes,
                              unsigned flushes, struct run *r)
{
    struct row *rows = calloc(MAX_ROWS, sizeof *rows);
    size_t n_rows, i, k;
    unsigned count[DM_REQ_COUNT] = {0};

    DM_ASSERT(rows != NULL);
    n_rows = load_rows(name, rows);
    DM_ASSERT_EQ_U64(n_rows, reads + writes + flushes);
    DM_ASSERT_EQ_U64(r->n, n_rows);
    DM_ASSERT_EQ_U64(r->malformed, 0);
    DM_ASSERT_EQ_U64(r->lost, 0);

    for (i = 0; i < r->n; i++) {
        const struct dm_event *ev = &r->ev[i];
        struct row *match = NULL;

        if (i > 0)
            DM_ASSERT(ev->time_ns >= r->ev[i - 1].time_ns);
        DM_ASSERT(ev->request < DM_REQ_COUNT);
        count[ev->request]++;
        for (k = 0; k < n_rows; k++) {
            struct row *w = &rows[k];
            if (w->irp == ev->irp && request_of(w->opcode) == ev->request &&
                w->byte_offset == ev->byte_offset &&
                ticks_to_ns(w->timestamp - r->header_ts) == ev->time_ns) {
                DM_ASSERT(match == NULL); /* the key is unique */
                match = w;
            }
        }
        if (match == NULL) {
            dmt_fail_at(__FILE__, __LINE__,
                        "%s: event %zu (irp 0x%llx, offset %llu) is not in the CSV",
                        name, i, (unsigned long long)ev->irp,
                        (unsigned long long)ev->byte_offset);
            free(rows);
            return;
        }
        DM_ASSERT_EQ_INT(match->seen, 0);
        match->seen = 1;
        DM_ASSERT_EQ_U64(ev->disk, match->disk);
        DM_ASSERT_EQ_U64(ev->transfer_size, match->transfer_size);
        DM_ASSERT_EQ_U64(ev->irp_flags, match->irp_flags);
        DM_ASSERT(ev->flags & DM_EV_HAS_IRP_FLAGS);
        DM_ASSERT_EQ_U64(ev->duration_ns, ticks_to_ns(match->hrrt));
        DM_ASSERT(ev->flags & DM_EV_HAS_TID);
        DM_ASSERT_EQ_U64(ev->tid, match->itid);
    }
    for (k = 0; k < n_rows; k++)
        DM_ASSERT_EQ_INT(rows[k].seen, 1);
    DM_ASSERT_EQ_INT(count[DM_REQ_READ], reads);
    DM_ASSERT_EQ_INT(count[DM_REQ_WRITE], writes);
    DM_ASSERT_EQ_INT(count[DM_REQ_FLUSH], flushes);
    DM_ASSERT_EQ_INT(count[DM_REQ_DISCARD], 0);
    free(rows);
}

/* ---- PerfView baseline ---------------------------------------------------- */

/* The value of "KEY=" in a baseline line, up to the next ';' (copied). */
static int field(const char *line, const char *key, char *out, size_t len)
{
    const char *p = line;
    size_t klen = strlen(key), n;

    for (;;) {
        p = strstr(p, key);
        if (p == NULL)
            return 0;
        /* The key must start a field: after "; " or the event name. */
        if (p > line && (p[-1] == ' ' || p[-1] == ';'))
            break;
        p += klen;
    }
    p += klen;
    n = strcspn(p, ";");
    if (n >= len)
        n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

/* "6,109,835,264" or "1,275.943" without the thousands separators. */
static void strip_commas(char *s)
{
    char *o = s;

    for (; *s != '\0'; s++)
        if (*s != ',')
            *o++ = *s;
    *o = '\0';
}

static double number(const char *s)
{
    char buf[64];
    size_t n = strlen(s);

    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    strip_commas(buf);
    return strtod(buf, NULL);
}

/* PerfView's PName is the image name without its extension. */
static int same_process(const char *ours, const char *pname)
{
    size_t n = strlen(pname);

    if (strncmp(ours, pname, n) != 0)
        return 0;
    return ours[n] == '\0' || strcmp(ours + n, ".exe") == 0;
}

/* Check each DiskIO Read/Write EVENT line of the baseline; *checked counts
 * the lines that passed. */
static void check_baseline_lines(FILE *fp, struct run *r, unsigned *checked)
{
    char line[4096], v[512];

    while (fgets(line, sizeof line, fp) != NULL) {
        const char *kind = strstr(line, ": Windows Kernel/DiskIO/");
        const struct dm_event *ev = NULL;
        uint64_t irp, offset;
        double ms;

        if (strncmp(line, "EVENT ", 6) != 0 || kind == NULL)
            continue;
        kind += strlen(": Windows Kernel/DiskIO/");
        if (strncmp(kind, "Read ", 5) != 0 && strncmp(kind, "Write ", 6) != 0)
            continue;
        /* "EVENT 1,275.943: ..." */
        snprintf(v, sizeof v, "%.*s", (int)(strchr(line, ':') - line - 6), line + 6);
        ms = number(v);
        if (!field(line, "Irp=", v, sizeof v))
            break;
        irp = strtoull(v, NULL, 16);
        if (!field(line, "ByteOffset=", v, sizeof v))
            break;
        strip_commas(v);
        offset = strtoull(v, NULL, 10);
        for (size_t i = 0; i < r->n; i++) {
            if (r->ev[i].irp == irp && r->ev[i].byte_offset == offset &&
                absd(r->ev[i].time_ns / 1e6 - ms) < 0.001) {
                ev = &r->ev[i];
                break;
            }
        }
        if (ev == NULL) {
            dmt_fail_at(__FILE__, __LINE__, "no event for baseline line: %s", line);
            break;
        }
        DM_ASSERT(ev->request == (kind[0] == 'R' ? DM_REQ_READ : DM_REQ_WRITE));
        if (field(line, "PID=", v, sizeof v)) {
            DM_ASSERT(ev->flags & DM_EV_HAS_PID);
            DM_ASSERT_EQ_U64(ev->pid, strtoull(v, NULL, 10));
        }
        if (field(line, "PName=", v, sizeof v)) {
            DM_ASSERT(ev->flags & DM_EV_HAS_PROCESS);
            if (!same_process(ev->process, v))
                dmt_fail_at(__FILE__, __LINE__, "process %s, baseline %s",
                            ev->process, v);
        }
        if (field(line, "TransferSize=", v, sizeof v))
            DM_ASSERT_EQ_U64(ev->transfer_size, (uint64_t)number(v));
        if (field(line, "ElapsedTimeMSec=", v, sizeof v)) {
            /* Printed to 3 decimals: within half a microsecond. */
            double d = ev->duration_ns / 1e6 - number(v);
            DM_ASSERT(absd(d) <= 0.0005 + 1e-9);
        }
        if (field(line, "FileName=", v, sizeof v)) {
            char *cut = strstr(v, "...");
            DM_ASSERT(ev->flags & DM_EV_HAS_FILE);
            if (cut != NULL) {
                *cut = '\0';
                if (strncmp(ev->file, v, strlen(v)) != 0)
                    dmt_fail_at(__FILE__, __LINE__, "file %s, baseline %s...",
                                ev->file, v);
            } else if (strcmp(ev->file, v) != 0) {
                dmt_fail_at(__FILE__, __LINE__, "file %s, baseline %s", ev->file, v);
            }
        }
        if (dmt_status != DMT_PASS)
            break;
        (*checked)++;
    }
}

static unsigned check_baseline(struct run *r)
{
    char path[1024];
    unsigned checked = 0;
    FILE *fp;

    path_of(path, sizeof path, "reference/", WIN8, ".baseline.txt");
    fp = fopen(path, "r");
    if (fp == NULL)
        return 0;
    check_baseline_lines(fp, r, &checked);
    fclose(fp);
    return checked;
}

/* ---- the cases ------------------------------------------------------------ */

DM_TEST(win8_matches_csv)
{
    struct run r;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_REQUIRE(dmt_shared_file_present("reference/" WIN8 ".diskio.csv"),
               "the reference decoding reference/" WIN8 ".diskio.csv is not there");
    DM_ASSERT_EQ_INT(replay(WIN8, &r), 0);
    /* PerfView's COUNT lines: Read 1208, Write 21, FlushBuffers 2. */
    check_against_csv(WIN8, 1208, 21, 2, &r);
    free(r.ev);
}

DM_TEST(win11_matches_csv)
{
    struct run r;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_REQUIRE(dmt_shared_file_present("reference/" WIN11 ".diskio.csv"),
               "the reference decoding reference/" WIN11 ".diskio.csv is not there");
    DM_ASSERT_EQ_INT(replay(WIN11, &r), 0);
    /* The folder's README: Read 2, Write 117, FlushBuffers 0. */
    check_against_csv(WIN11, 2, 117, 0, &r);
    free(r.ev);
}

DM_TEST(win8_matches_perfview_baseline)
{
    struct run r;
    unsigned checked;
    const struct dm_event *first = NULL;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    DM_REQUIRE(dmt_shared_file_present("reference/" WIN8 ".baseline.txt"),
               "PerfView's baseline reference/" WIN8 ".baseline.txt is not there");
    DM_ASSERT_EQ_INT(replay(WIN8, &r), 0);
    checked = check_baseline(&r);
    if (dmt_status != DMT_PASS) {
        free(r.ev);
        return;
    }
    /* The baseline lists 10 DiskIO Read/Write events. */
    DM_ASSERT_EQ_INT(checked, 10);

    /* Every DiskIO line of the baseline names a C:\ file and a process, and
     * the trace maps only \Device\HarddiskVolume2\ to C:\ (its VolumeMapping
     * lines); every Read and Write of the trace should do the same. */
    for (size_t i = 0; i < r.n; i++) {
        const struct dm_event *ev = &r.ev[i];
        unsigned want = DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS;

        if (ev->request == DM_REQ_FLUSH)
            continue;
        DM_ASSERT_EQ_INT(ev->flags & (want | DM_EV_HAS_FILE), want | DM_EV_HAS_FILE);
        DM_ASSERT(strncmp(ev->file, "C:\\", 3) == 0);
    }

    /* docs/etw.md §3: the first Read is at 1275.943 ms after the header,
     * IRP 0xfffffa8302a1dc60, offset 849788928, 25.821 ms. */
    for (size_t i = 0; i < r.n && first == NULL; i++)
        if (r.ev[i].request == DM_REQ_READ)
            first = &r.ev[i];
    DM_ASSERT(first != NULL);
    DM_ASSERT_EQ_U64(first->irp, UINT64_C(0xfffffa8302a1dc60));
    DM_ASSERT_EQ_U64(first->byte_offset, UINT64_C(849788928));
    DM_ASSERT_EQ_U64((first->time_ns + 500) / 1000, 1275943);
    DM_ASSERT_EQ_U64((first->duration_ns + 500) / 1000, 25821);

    /* Header StartTime "20/07/29 00:07:00.62..." in PerfView's local time:
     * some time on 2020-07-28..30 UTC, at minute 07, second 00.62 of the
     * hour (true in any whole-hour time zone). */
    DM_ASSERT(r.start_wall_ns >= UINT64_C(1595894400) * 1000000000u);
    DM_ASSERT(r.start_wall_ns < UINT64_C(1596153600) * 1000000000u);
    DM_ASSERT_EQ_U64(r.start_wall_ns / 10000000u % 360000u, 42062);
    free(r.ev);
}

/* Copy the first n bytes of src_path to a new file; its path in out. */
static int write_prefix(const char *src_path, size_t n, char *out, size_t len)
{
    const char *dir = getenv("TMPDIR");
    FILE *in, *o;
    char buf[8192];
    size_t got;
    int local;

    if (dir == NULL || dir[0] == '\0')
        dir = getenv("TEMP");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    snprintf(out, len, "%s/dm_test_replay_%lx.etl", dir,
             (unsigned long)((uintptr_t)&local & 0xffffffu));
    in = fopen(src_path, "rb");
    o = fopen(out, "wb");
    if (in == NULL || o == NULL) {
        if (in != NULL)
            fclose(in);
        if (o != NULL)
            fclose(o);
        return -1;
    }
    while (n > 0 && (got = fread(buf, 1, n < sizeof buf ? n : sizeof buf, in)) > 0) {
        fwrite(buf, 1, got, o);
        n -= got;
    }
    fclose(in);
    return fclose(o) == 0 && n == 0 ? 0 : -1;
}

DM_TEST(truncated_trace_reports_error)
{
    /* The win8 sample cut at 2,000,000 bytes (inside its buffer at offset
     * 1987562): run fails with DM_ETRUNCATED and a message, and what it
     * emitted before is the start of the full run, request by request. */
    struct run full, cut;
    char src[1024], tmp[1024];
    int rc;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    path_of(src, sizeof src, "", WIN8, ".etl");
    DM_ASSERT_EQ_INT(write_prefix(src, 2000000, tmp, sizeof tmp), 0);
    DM_ASSERT_EQ_INT(replay(WIN8, &full), 0);
    {
        /* replay() takes a sample name; run the copy by hand. */
        struct dm_options opt;
        struct dm_source s;
        struct dm_sink sink;
        struct dm_ring *ring = dm_ring_create(MAX_EVENTS * DM_RING_RECORD_MAX);

        memset(&cut, 0, sizeof cut);
        cut.ev = malloc(MAX_EVENTS * sizeof *cut.ev);
        DM_ASSERT(ring != NULL && cut.ev != NULL);
        memset(&opt, 0, sizeof opt);
        memset(&s, 0, sizeof s);
        memset(&sink, 0, sizeof sink);
        opt.replay_path = tmp;
        s.ops = &dm_replay_source;
        sink.ring = ring;
        sink.wait_when_full = 1;
        rc = s.ops->open(&s, &opt);
        DM_ASSERT_EQ_INT(rc, 0);
        rc = s.ops->run(&s, &sink);
        DM_ASSERT_EQ_INT(rc, DM_ETRUNCATED);
        DM_ASSERT(strstr(s.errmsg, "1987562") != NULL);
        s.ops->close(&s);
        cut.n = dmt_ring_take(ring, cut.ev, MAX_EVENTS);
        dm_ring_destroy(ring);
    }
    remove(tmp);
    DM_ASSERT(cut.n > 0 && cut.n < full.n);
    for (size_t i = 0; i < cut.n; i++) {
        DM_ASSERT_EQ_U64(cut.ev[i].time_ns, full.ev[i].time_ns);
        DM_ASSERT_EQ_U64(cut.ev[i].irp, full.ev[i].irp);
        DM_ASSERT_EQ_U64(cut.ev[i].byte_offset, full.ev[i].byte_offset);
        DM_ASSERT_EQ_U64(cut.ev[i].pid, full.ev[i].pid);
    }
    free(cut.ev);
    free(full.ev);
}

DM_TEST(missing_file_fails_cleanly)
{
    struct dm_options opt;
    struct dm_source src;

    memset(&opt, 0, sizeof opt);
    memset(&src, 0, sizeof src);
    opt.replay_path = "/nonexistent/dir/trace.etl";
    src.ops = &dm_replay_source;
    DM_ASSERT(src.ops->open(&src, &opt) < 0);
    DM_ASSERT(src.errmsg[0] != '\0');
    src.ops->stop(&src);
    src.ops->close(&src);
    DM_ASSERT(src.impl == NULL);

    opt.replay_path = NULL;
    DM_ASSERT_EQ_INT(src.ops->open(&src, &opt), DM_EUSAGE);
    src.ops->close(&src);
}

DM_TEST(stop_before_run)
{
    struct dm_options opt;
    struct dm_source src;
    struct dm_sink sink;
    struct dm_ring *ring;
    volatile int stop = 0;
    char path[1024];

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    path_of(path, sizeof path, "", WIN11, ".etl");
    memset(&opt, 0, sizeof opt);
    memset(&src, 0, sizeof src);
    opt.replay_path = path;
    src.ops = &dm_replay_source;
    ring = dm_ring_create(DM_RING_MIN_BYTES);
    DM_ASSERT(ring != NULL);
    memset(&sink, 0, sizeof sink);
    sink.ring = ring;
    sink.wait_when_full = 1;
    DM_ASSERT_EQ_INT(src.ops->open(&src, &opt), 0);
    DM_ASSERT_EQ_INT(src.is_live, 0);
    /* As the pipeline does: the sink's flag first, then stop(). */
    stop = DM_SINK_STOP_ASKED;
    sink.stop_flag = &stop;
    src.ops->stop(&src);
    src.ops->stop(&src);
    DM_ASSERT_EQ_INT(src.ops->run(&src, &sink), 0);
    DM_ASSERT_EQ_U64(dm_ring_pushed(ring), 0);
    src.ops->close(&src);
    dm_ring_destroy(ring);
}

struct stopper {
    struct dm_ring *ring;
    volatile int *stop;
};

/* Stop once the ring stopped filling for 100 ms (the source waits for room),
 * not after a fixed delay: a slow build (TSan under load) may take longer
 * than any delay to fill it. Gives up after 60 s so a hang still ends. */
static void stop_when_full(void *arg)
{
    const struct stopper *st = arg;
    uint64_t last = 0;
    unsigned still = 0;

    for (unsigned ms = 0; ms < 60000 && still < 10; ms += 10) {
        uint64_t now = dm_ring_pushed(st->ring);

        still = now > 0 && now == last ? still + 1 : 0;
        last = now;
        dm_sleep_ms(10);
    }
    dm_atomic_store_int(st->stop, 1);
}

DM_TEST(sink_stop_ends_run)
{
    /* A ring of the smallest size that nobody reads: run fills it, waits
     * for room, and returns 0 once another thread sets the sink's stop
     * flag. */
    struct dm_options opt;
    struct dm_source src;
    struct dm_sink sink;
    struct dm_ring *ring;
    struct stopper st;
    dm_thread *t;
    volatile int stop = 0;
    char path[1024];

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces folder (../shared/etl) not found");
    path_of(path, sizeof path, "", WIN11, ".etl");
    memset(&opt, 0, sizeof opt);
    memset(&src, 0, sizeof src);
    opt.replay_path = path;
    src.ops = &dm_replay_source;
    ring = dm_ring_create(DM_RING_MIN_BYTES);
    DM_ASSERT(ring != NULL);
    memset(&sink, 0, sizeof sink);
    sink.ring = ring;
    sink.wait_when_full = 1;
    sink.stop_flag = &stop;
    DM_ASSERT_EQ_INT(src.ops->open(&src, &opt), 0);
    st.ring = ring;
    st.stop = &stop;
    DM_ASSERT_EQ_INT(dm_thread_start(&t, stop_when_full, &st), 0);
    DM_ASSERT_EQ_INT(src.ops->run(&src, &sink), 0);
    dm_thread_join(t);
    /* Full: between a ring of the largest records (ring.h) and one of
     * nameless ones (80; ring.h), and far fewer than the trace holds. */
    DM_ASSERT(dm_ring_pushed(ring) >= DM_RING_MIN_BYTES / DM_RING_RECORD_MAX);
    DM_ASSERT(dm_ring_pushed(ring) <= DM_RING_MIN_BYTES / 80);
    src.ops->close(&src);
    dm_ring_destroy(ring);
}

const struct dmt_case dm_suite_replay[] = {
    {"win8_matches_csv", win8_matches_csv},
    {"win11_matches_csv", win11_matches_csv},
    {"win8_matches_perfview_baseline", win8_matches_perfview_baseline},
    {"truncated_trace_reports_error", truncated_trace_reports_error},
    {"missing_file_fails_cleanly", missing_file_fails_cleanly},
    {"stop_before_run", stop_before_run},
    {"sink_stop_ends_run", sink_stop_ends_run},
    {NULL, NULL},
};
