/*
 * etl.h - a portable reader of .etl trace files.
 *
 * Walks the file's buffers (WMI_BUFFER_HEADER), inflates compressed ones
 * (MS-XCA Plain LZ77), and returns every record in timestamp order by
 * merging the per-CPU buffer streams; or only the records a selection
 * picks, in the same order, at little more than the cost of walking the
 * record headers (dm_etl_select). Layouts: docs/etw.md
 * §4. Memory stays bounded: a window of one buffer per CPU stream
 * (a plain buffer read through it, a compressed one inflated into it as a
 * stream), and the whole within DM_ETL_BUDGET_BYTES.
 */
#ifndef DM_ETL_H
#define DM_ETL_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

struct dm_etl;

/*
 * The most bytes of buffers (inflated records, and records or compressed
 * bytes read from the file) the reader holds at once. A CPU's stream holds
 * a window of its buffer, not the buffer: at most 96 KiB of a plain one,
 * 104 KiB of a compressed one (with the 8 KiB of output its LZ77 matches
 * may reach) and 16 KiB of its compressed bytes, because no record is
 * larger than 64 KiB (etl_internal.h). So any BufferSize up to 16 MiB with
 * up to 2,048 CPUs (all a trace can name) holds at most 240 MiB, and a
 * 27 KB file whose compressed buffers claim 16 MiB each for 256 CPUs holds
 * a few MiB, not 4 GiB. Open still sums, over the CPUs, what each one's
 * largest buffer would hold, and refuses a trace whose sum passes this
 * before allocating any of it (the error names the buffer that passed it,
 * its claim and the budget); with these windows no trace does.
 */
#define DM_ETL_BUDGET_BYTES (256u << 20)

/* From TRACE_LOGFILE_HEADER, the payload of the first record. */
/* TRACE_LOGFILE_HEADER.ReservedFlags, the session's clock type
 * (docs/etw.md §3, [MS-wnode] ClientContext); older writers leave 0,
 * which means QPC. */
#define DM_ETL_CLOCK_QPC 1u
#define DM_ETL_CLOCK_SYSTEM_TIME 2u  /* record timestamps in FILETIME units */
#define DM_ETL_CLOCK_CPU_CYCLES 3u   /* CPU cycles, at CpuSpeedInMHz */

struct dm_etl_info {
    uint64_t file_size;
    uint32_t buffer_size;        /* bytes, from the header */
    uint32_t log_file_mode;
    uint32_t pointer_size;       /* of the capturing system; records may differ */
    uint32_t number_of_processors;
    uint32_t events_lost;
    uint32_t buffers_lost;
    uint32_t os_version;         /* TRACE_LOGFILE_HEADER.Version */
    uint32_t provider_version;   /* OS build number */
    uint32_t reserved_flags;     /* clock type: 1 QPC, 2 system time, 3 cycles */
    uint64_t perf_freq;          /* ticks per second of record timestamps: PerfFreq,
                                  * or 10,000,000 for the system-time clock and
                                  * CpuSpeedInMHz * 1e6 for the cycle clock */
    uint64_t qpc_freq;           /* PerfFreq as the header gives it: QPC ticks per
                                  * second, the unit of DiskIo HighResResponseTime
                                  * whatever the clock type; 0 if the header says 0 */
    uint64_t start_time;         /* FILETIME of the session start */
    uint64_t header_timestamp;   /* timestamp of the header record: time 0 */
    uint32_t buffers_flagged_lost; /* buffers with BufferFlag EVENTS_LOST/BUFFER_LOST */
    struct dm_time_zone time_zone; /* TRACE_LOGFILE_HEADER.TimeZone */
};

/* One record, valid until the next dm_etl_next() call. */
struct dm_etl_record {
    unsigned header_type;        /* marker byte 2: 0x01..0x15 */
    unsigned pointer_size;       /* 4 or 8, from header_type */
    unsigned group;              /* system headers: HookId >> 8; else 0 */
    unsigned opcode;             /* HookId & 0xFF, or EventDescriptor/Class type */
    unsigned version;            /* MOF version */
    int has_guid;                /* FULL_HEADER / EVENT_HEADER records */
    uint8_t guid[16];            /* provider/class GUID, as stored (little-endian fields) */
    uint32_t tid, pid;           /* UINT32_MAX when the header has none */
    uint64_t timestamp;
    unsigned cpu;
    const uint8_t *payload;
    size_t payload_len;
    uint64_t buffer_file_offset; /* where the record's buffer starts in the file */
};

/*
 * Open and validate the trace header. On failure returns a negative dm_err and
 * writes a message naming the file and, for bad data, the file offset; a
 * trace over the budget (DM_ETL_BUDGET_BYTES) is DM_ENOMEM.
 */
int dm_etl_open(struct dm_etl **out, const char *path, char *err, size_t errlen);

/* 1 when the first len bytes of a file look like an .etl trace: buffer 0's
 * first record, right after the buffer header, is a trace header (a
 * SYSTEM32 or SYSTEM64 header of version 2, docs/etw.md §1). For -r's
 * choice of reader (src/input); dm_etl_open checks the whole header. */
int dm_etl_sniff(const void *head, size_t len);
/*
 * The same over a trace already in memory (tests, fuzzing); name is used in
 * messages. data must stay valid until dm_etl_close.
 */
int dm_etl_open_mem(struct dm_etl **out, const void *data, size_t len,
                    const char *name, char *err, size_t errlen);
const struct dm_etl_info *dm_etl_info(const struct dm_etl *etl);

/*
 * Next record in time order. Returns 1 with *rec filled, 0 at the end of the
 * trace, or a negative dm_err (DM_ECORRUPT, DM_ETRUNCATED, DM_EIO, or
 * DM_ESTOPPED from dm_etl_on_buffer) with a message naming the file offset;
 * records returned before stay valid output.
 * Records of unknown header kinds are skipped by their size and counted.
 * The records of the first buffer (the trace header event first) come before
 * all others; ties in time keep file order. A bad record ends the trace
 * where it lies; a bad or cut buffer header is reported after the records of
 * the buffers before it. Once it failed, every later call fails the same way.
 */
int dm_etl_next(struct dm_etl *etl, struct dm_etl_record *rec, char *err,
                size_t errlen);

/*
 * Which records dm_etl_next() returns: those of a system header whose HookId
 * group has its bit set in groups (bit g & 7 of byte g >> 3), and those
 * named by a GUID (FULL, INSTANCE and EVENT headers) for which guid_wanted
 * answers nonzero (asked once per distinct GUID; NULL takes none).
 * opcodes, when not NULL, narrows the system-header records further: one
 * picked by its group is taken only if its HookId (group << 8 | opcode)
 * has its bit set there too (bit h & 7 of byte h >> 3, DM_ETL_HOOK_BYTES
 * bytes). dm_etl_select copies it.
 */
#define DM_ETL_HOOK_BYTES (65536u / 8u)
struct dm_etl_select {
    uint8_t groups[32];
    const uint8_t *opcodes;
    int (*guid_wanted)(const uint8_t guid[16]);
};

/*
 * From now on return only the records sel picks (NULL: every record again),
 * in the same order and with the same fields as without a selection: the
 * picked records are merged alone, each stream keyed by every decodable
 * record it passed, so they come out where the full merge puts them. A
 * record the selection skips costs its header only (no merge, no copy).
 * Failures are the same too, reported where the full merge would meet them:
 * after the picked records that come before that place. Call it right
 * after dm_etl_open or dm_etl_rewind, before the first dm_etl_next.
 */
void dm_etl_select(struct dm_etl *etl, const struct dm_etl_select *sel);

/*
 * Start again from the trace header record, keeping the buffer index and
 * the selection (set a new one with dm_etl_select). Clears a failure: the
 * next pass meets it again at the same place. Returns 0, or a negative
 * dm_err when buffer 0 cannot be read again (the file changed); then
 * dm_etl_next keeps failing with that message.
 */
int dm_etl_rewind(struct dm_etl *etl, char *err, size_t errlen);

/*
 * Call fn(ctx, dm_etl_bytes_done()) each time a buffer has been read (for a
 * progress line, and to stop a pass that returns few records: a selecting
 * one). When fn answers nonzero, that dm_etl_next returns DM_ESTOPPED,
 * and every later one too (until dm_etl_rewind). NULL: no calls.
 */
void dm_etl_on_buffer(struct dm_etl *etl, int (*fn)(void *ctx, uint64_t bytes_done),
                      void *ctx);

/* Bytes of the file consumed so far (for the progress line). */
uint64_t dm_etl_bytes_done(const struct dm_etl *etl);
/* The most bytes of buffers (windows, inflated and compressed buffers) the
 * reader has held at once so far: what the budget bounds (tests). */
uint64_t dm_etl_held_peak(const struct dm_etl *etl);
/* Records skipped because their header kind is not decoded. */
uint64_t dm_etl_skipped(const struct dm_etl *etl);

void dm_etl_close(struct dm_etl *etl);

#endif /* DM_ETL_H */
