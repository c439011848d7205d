/*
 * replay.c - the .etl replay source (diskmon -r trace.etl).
 *
 * Reads a trace file with the portable reader (etl.h), which hands back the
 * records of every CPU merged in time order, describes each kernel record as
 * a dm_krecord and lets the shared decoder (decode/nt_kernel.h) turn DiskIo
 * completions into dm_events. Runs on any OS. Nothing is ever dropped: the
 * sink waits for room in the ring, so the output is the same however slow
 * the printer is.
 *
 * Two passes, the first one cheaper. The naming pass collects the names a
 * trace gives only in hindsight: a session's end-of-trace rundown
 * (FileRundown, DCEnd) names files, threads and processes that earlier
 * requests used, and PerfView applies those names backwards too (see
 * dm_kdecode_rundown); FileDelete and Thread End in mid-trace count as well.
 * It asks the reader for the Process, Thread, FileIo, SysConfig and DiskIo
 * records only, and of DiskIo the Read and Write completions only
 * (dm_etl_select; DiskIo so that only the rundown file names some request
 * will use are kept, see dm_kdecode_rundown): the reader
 * walks every buffer but skips the other records at the cost of their
 * headers: they are neither merged nor decoded nor handed out. It returns
 * the picked ones
 * in the order the full merge gives them, which is the order
 * dm_kdecode_rundown must see them in. Then the reader is rewound and the
 * decoding pass takes every record, decodes and emits. A plain file is read
 * twice (the page cache serves the second), a compressed one inflated
 * twice: on generated traces the naming pass costs about half of the
 * decoding pass's instructions plain, three quarters compressed (it was two
 * thirds and four fifths while it took the Inits too). Memory stays one
 * buffer per CPU; the names learned go into the decoder's rundown tables,
 * nothing per event.
 *
 * Time 0 is the trace header record, as PerfView counts (docs/etw.md §3),
 * and the header's StartTime is the wall clock at that instant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "core/sink.h"
#include "decode/nt_kernel.h"
#include "diskmon.h"
#include "etl/etl.h"
#include "etl/replay.h"
#include "platform/platform.h"

/* FILETIME of 1970-01-01 (100 ns units since 1601). */
#define FILETIME_UNIX_EPOCH UINT64_C(116444736000000000)

/* LogFileMode EVENT_TRACE_COMPRESSED_MODE (docs/etw.md §1 and §4). */
#define MODE_COMPRESSED 0x04000000u

/* Report progress after this many buffers: cheap, and still several times a
 * second on a slow terminal (64 buffers of 64 KB = 4 MB of trace). */
#define PROGRESS_EVERY_BUFFERS 64

/* Distinct class GUIDs whose decoder class is kept (a kernel trace names
 * a dozen; the samples: 7). A miss only costs asking the decoder. */
#define GUID_CLASSES 16u

/* The decoder's class of every HookId group and of the GUIDs met so far,
 * asked once: both passes class every record they take. */
struct class_cache {
    uint8_t group_class[256];
    uint8_t guid[GUID_CLASSES][16];
    uint8_t guid_class[GUID_CLASSES];
    unsigned guids, evict;
};

struct replay {
    struct dm_etl *etl;
    struct dm_kdecoder *kd;
    uint64_t file_size;
    int compressed;          /* LogFileMode says the buffers are compressed */
    struct class_cache classes;
};

/*
 * Events the trace says it lost: EventsLost (no free buffer) plus
 * BuffersLost (buffers never written, each holding at least one event). When
 * both are 0 but buffers carry the EVENTS_LOST/BUFFER_LOST flag, which says
 * that events were lost but not how many, count one per such buffer so the
 * loss is still reported.
 */
static uint64_t trace_lost_events(const struct dm_etl_info *info)
{
    uint64_t lost = (uint64_t)info->events_lost + info->buffers_lost;

    return lost != 0 ? lost : info->buffers_flagged_lost;
}

/* dm_source.disk_size: the trace's own word (its SysConfig records, read
 * by the naming pass before the first request is emitted). */
static uint64_t replay_disk_size(const void *ctx, uint32_t disk, const char **from)
{
    const struct replay *r = ctx;

    return dm_kdecoder_disk_size(r->kd, disk, from);
}

static int replay_open(struct dm_source *src, const struct dm_options *opt)
{
    struct replay *r;
    const struct dm_etl_info *info;
    int rc;

    src->is_live = 0;
    src->has_files = 1; /* FileIo name records name the files */
    src->lost_events = 0;
    src->malformed = 0;
    src->start_wall_ns = 0;
    src->errmsg[0] = '\0';
    if (opt == NULL || opt->replay_path == NULL) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "no trace file given: use -r FILE.etl");
        return DM_EUSAGE;
    }
    r = calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "out of memory opening %s", opt->replay_path);
        return DM_ENOMEM;
    }
    src->impl = r;
    rc = dm_etl_open(&r->etl, opt->replay_path, src->errmsg, sizeof src->errmsg);
    if (rc < 0)
        return rc;
    info = dm_etl_info(r->etl);
    src->time_zone = info->time_zone; /* --clock: where the trace was taken */

    /* The clock is the reader's business (etl.h: it derives perf_freq from
     * the clock type and refuses a header whose rate is 0). Here only which
     * clocks replay accepts: the cycle counter is refused. DiskIo durations
     * are QPC ticks in every clock type, so they are divided by the
     * header's own PerfFreq, qpc_freq (docs/etw.md §3 and §7). PerfView
     * divides them by 10^7 in a system-time trace; it is no reference for
     * those. */
    switch (info->reserved_flags) {
    case 0: /* older writers leave it 0; QPC is the default clock */
    case DM_ETL_CLOCK_QPC:
    case DM_ETL_CLOCK_SYSTEM_TIME:
        break;
    case DM_ETL_CLOCK_CPU_CYCLES:
        snprintf(src->errmsg, sizeof src->errmsg,
                 "%s: the trace was recorded with the CPU cycle counter clock "
                 "(ClockType 3), whose timestamps cannot be turned into time "
                 "reliably; record it again with the default QPC clock",
                 opt->replay_path);
        return DM_EUNSUPPORTED;
    default:
        snprintf(src->errmsg, sizeof src->errmsg,
                 "%s: unknown clock type %u in the trace header (ReservedFlags); "
                 "only QPC (1) and system time (2) are supported",
                 opt->replay_path, (unsigned)info->reserved_flags);
        return DM_EUNSUPPORTED;
    }
    if (info->qpc_freq == 0) { /* possible with the system-time clock */
        snprintf(src->errmsg, sizeof src->errmsg,
                 "%s: the trace header gives a timer frequency (PerfFreq) of 0, "
                 "so request durations cannot be computed; the file is damaged",
                 opt->replay_path);
        return DM_ECORRUPT;
    }

    r->kd = dm_kdecoder_create(info->perf_freq, info->header_timestamp, info->qpc_freq);
    if (r->kd == NULL) {
        snprintf(src->errmsg, sizeof src->errmsg,
                 "out of memory for the decoder tables of %s", opt->replay_path);
        return DM_ENOMEM;
    }
    dm_kdecoder_name_partitions(r->kd, dm_options_read_partition(opt));
    src->disk_size = replay_disk_size;
    src->disk_size_ctx = r;
    r->file_size = info->file_size;
    r->compressed = (info->log_file_mode & MODE_COMPRESSED) != 0;
    src->lost_events = trace_lost_events(info);
    if (info->start_time > FILETIME_UNIX_EPOCH)
        src->start_wall_ns = (info->start_time - FILETIME_UNIX_EPOCH) * 100u;
    return 0;
}

/* rec as a dm_krecord of class kclass. */
static void to_krecord(const struct dm_etl_record *rec, enum dm_kclass kclass,
                       struct dm_krecord *kr)
{
    kr->kclass = kclass;
    kr->opcode = rec->opcode;
    kr->version = rec->version;
    kr->pointer_size = rec->pointer_size;
    kr->timestamp = rec->timestamp;
    kr->tid = rec->tid;
    kr->pid = rec->pid;
    kr->payload = rec->payload;
    kr->payload_len = rec->payload_len;
}

void dm_etl_krecord(const struct dm_etl_record *rec, struct dm_krecord *kr)
{
    to_krecord(rec, rec->has_guid ? dm_kclass_from_guid(rec->guid)
                                  : dm_kclass_from_group(rec->group), kr);
}

static void classes_init(struct class_cache *c)
{
    memset(c, 0, sizeof *c);
    for (unsigned group = 0; group < 256; group++)
        c->group_class[group] = (uint8_t)dm_kclass_from_group(group);
}

/* dm_etl_krecord's class, from the cache. */
static enum dm_kclass record_class(struct class_cache *c, const struct dm_etl_record *rec)
{
    unsigned i;

    if (!rec->has_guid)
        return (enum dm_kclass)c->group_class[rec->group & 0xFFu];
    for (i = 0; i < c->guids; i++)
        if (memcmp(c->guid[i], rec->guid, sizeof c->guid[i]) == 0)
            return (enum dm_kclass)c->guid_class[i];
    i = c->guids < GUID_CLASSES ? c->guids++ : c->evict++ % GUID_CLASSES;
    memcpy(c->guid[i], rec->guid, sizeof c->guid[i]);
    c->guid_class[i] = (uint8_t)dm_kclass_from_guid(rec->guid);
    return (enum dm_kclass)c->guid_class[i];
}

static void finish(struct dm_source *src, const struct replay *r)
{
    src->malformed = dm_kdecoder_malformed(r->kd);
    src->lost_events = trace_lost_events(dm_etl_info(r->etl));
    if (dm_kdecoder_replaced(r->kd) > 0)
        dm_note(&src->notes, DM_KDECODER_FULL_NOTE,
                (unsigned long long)dm_kdecoder_replaced(r->kd));
}

/* The records the naming pass takes: every class dm_kdecode_rundown()
 * takes, as the decoder classes them (Process, Thread, FileIo, SysConfig,
 * DiskIo); unknown classes are skipped. */
static int naming_class(enum dm_kclass c)
{
    return c != DM_K_OTHER;
}

static int naming_guid(const uint8_t guid[16])
{
    return naming_class(dm_kclass_from_guid(guid));
}

/* The selection, and by HookId the opcodes of those classes that
 * dm_kdecode_rundown() takes: not the DiskIo Inits, which are half of a
 * busy trace's records (opcodes: DM_ETL_HOOK_BYTES). */
static void naming_selection(struct dm_etl_select *sel, uint8_t *opcodes)
{
    memset(sel, 0, sizeof *sel);
    memset(opcodes, 0, DM_ETL_HOOK_BYTES);
    for (unsigned group = 0; group < 8 * sizeof sel->groups; group++) {
        enum dm_kclass c = dm_kclass_from_group(group);

        if (!naming_class(c))
            continue;
        sel->groups[group >> 3] |= (uint8_t)(1u << (group & 7u));
        for (unsigned op = 0; op < 256u; op++) {
            unsigned hook = group << 8 | op;

            if (!dm_kdecode_rundown_ignores(c, op))
                opcodes[hook >> 3] |= (uint8_t)(1u << (hook & 7u));
        }
    }
    sel->opcodes = opcodes;
    sel->guid_wanted = naming_guid;
}

/* Where a pass is, for the reader's per-buffer call (dm_etl_on_buffer). */
struct pass {
    const struct replay *r;
    struct dm_sink *sink;
    uint64_t base;       /* progress units before this pass */
    unsigned divisor;    /* bytes of the file per progress unit in this pass */
    unsigned buffers;
};

/* Progress units: the naming pass reads every byte of the file too, and
 * merges all but the unknown records and the DiskIo Inits (the DiskIo
 * completions too, for dm_kdecode_rundown), but decodes little and emits nothing, so a byte of
 * it counts less than a byte of the decoding pass. Measured with callgrind
 * on generated traces of 100,000 requests (the source thread's calls): on
 * a plain file the naming pass costs about half of the decoding pass (84M
 * instructions against 153M), on a compressed one, which it inflates in
 * full, about three quarters (182M against 251M); a byte counts 1/2 and 1. */
#define NAMING_DIVISOR_PLAIN 2u
#define NAMING_DIVISOR_COMPRESSED 1u

static unsigned naming_divisor(const struct replay *r)
{
    return r->compressed ? NAMING_DIVISOR_COMPRESSED : NAMING_DIVISOR_PLAIN;
}

static uint64_t progress_total(const struct replay *r)
{
    return r->file_size / naming_divisor(r) + r->file_size;
}

/* Each buffer read: stop when asked (a pass that returns few records still
 * stops quickly), and report progress every PROGRESS_EVERY_BUFFERS. */
static int on_buffer(void *ctx, uint64_t bytes_done)
{
    struct pass *p = ctx;

    if (dm_sink_stopping(p->sink))
        return 1;
    if (++p->buffers % PROGRESS_EVERY_BUFFERS == 0)
        dm_sink_progress(p->sink, p->base + bytes_done / p->divisor,
                         progress_total(p->r));
    return 0;
}

/*
 * The naming pass: feed every naming record to dm_kdecode_rundown, in the
 * order the decoding pass will meet them, then rewind the reader for that
 * pass. A reader error ends this pass quietly: the decoding pass meets the
 * same error at the same place, after emitting everything before it, and
 * reports it; the selecting reader stops where the full merge would, so
 * both passes see the same records. Returns 0, 1 when asked to stop, or the
 * error of reading the file's first buffer again.
 */
static int naming_pass(struct dm_source *src, struct replay *r, struct pass *p)
{
    struct dm_etl_select sel;
    struct dm_etl_record rec;
    struct dm_krecord kr;
    uint8_t opcodes[DM_ETL_HOOK_BYTES];
    char err[512];
    int rc;

    naming_selection(&sel, opcodes);
    dm_etl_select(r->etl, &sel);
    while ((rc = dm_etl_next(r->etl, &rec, err, sizeof err)) > 0) {
        to_krecord(&rec, record_class(&r->classes, &rec), &kr);
        (void)dm_kdecode_rundown(r->kd, &kr); /* damage: see above */
    }
    if (rc == DM_ESTOPPED)
        return 1;
    dm_etl_select(r->etl, NULL);
    p->base = r->file_size / naming_divisor(r);
    p->divisor = 1;
    rc = dm_etl_rewind(r->etl, src->errmsg, sizeof src->errmsg);
    if (rc == DM_ESTOPPED) {
        src->errmsg[0] = '\0';
        return 1;
    }
    return rc;
}

static int replay_run(struct dm_source *src, struct dm_sink *sink)
{
    struct replay *r = src->impl;
    struct dm_etl_record rec;
    struct dm_krecord kr;
    struct dm_event ev;
    struct pass p;
    int rc;

    if (r == NULL || r->etl == NULL || r->kd == NULL)
        return DM_EUSAGE;
    if (dm_sink_stopping(sink)) {
        finish(src, r);
        return 0;
    }
    p.r = r;
    p.sink = sink;
    p.base = 0;
    p.divisor = naming_divisor(r);
    p.buffers = 0;
    dm_etl_on_buffer(r->etl, on_buffer, &p);
    classes_init(&r->classes); /* for both passes */
    rc = naming_pass(src, r, &p);
    if (rc != 0) {
        finish(src, r);
        return rc < 0 ? rc : 0;
    }
    /* The decoding pass. Stops are seen per buffer (on_buffer) and by
     * dm_sink_emit, which waits for room and watches the stop flag. */
    while ((rc = dm_etl_next(r->etl, &rec, src->errmsg, sizeof src->errmsg)) > 0) {
        enum dm_kclass kclass = record_class(&r->classes, &rec);

        if (kclass == DM_K_OTHER)
            continue;
        to_krecord(&rec, kclass, &kr);
        if (dm_kdecode(r->kd, &kr, &ev) == 1 &&
            dm_sink_emit(sink, &ev) == DM_ESTOPPED) {
            rc = 1;
            break;
        }
    }
    if (rc == DM_ESTOPPED) {
        src->errmsg[0] = '\0';
        rc = 1;
    }
    if (rc == 0) /* the end of the trace, not a stop */
        dm_sink_progress(sink, progress_total(r), progress_total(r));
    finish(src, r);
    return rc < 0 ? rc : 0;
}

/* Nothing to wake: run() never blocks but in dm_sink_emit, which watches
 * the sink's stop flag itself (the dm_source_ops stop rule). */
static void replay_stop(struct dm_source *src)
{
    (void)src;
}

static void replay_close(struct dm_source *src)
{
    struct replay *r = src->impl;

    if (r == NULL)
        return;
    if (r->etl != NULL)
        dm_etl_close(r->etl);
    dm_kdecoder_destroy(r->kd);
    free(r);
    src->impl = NULL;
}

const struct dm_source_ops dm_replay_source = {
    "replay", replay_open, replay_run, replay_stop, replay_close, NULL,
};
