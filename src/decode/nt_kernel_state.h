/*
 * nt_kernel_state.h - what the NT kernel decoder's files share (not part
 * of nt_kernel.h): the decoder's struct, the table slots, the limits the
 * handlers share and the calls between the files, named dm_kdecoder__
 * (internal, like dm_kmerge__replay).
 *
 * The decoder (nt_kernel.h) is layered, each file calling only down:
 *   nt_kernel.c           the entry points: creating and freeing a decoder,
 *                         and the one table of which class goes to which
 *                         handler;
 *   nt_kernel_diskio.c    DiskIo: Init records, completions into dm_events,
 *                         the lookups that attribute them and the clock
 *                         arithmetic;
 *   nt_kernel_process.c   Thread and Process records (thread -> process,
 *                         process -> image name);
 *   nt_kernel_file.c      FileIo name records (file object -> file name);
 *   nt_kernel_sysconfig.c SysConfig: VolumeMapping and LogDisk (device ->
 *                         drive, volume byte ranges per disk);
 *   nt_kernel_need.c      replay's naming pass: which rundown file names a
 *                         request will use (the others are dropped);
 *   nt_kernel_state.c     the shared state below them all: the tables'
 *                         sizes, creating and freeing them, the clocks'
 *                         scales.
 */
#ifndef DM_NT_KERNEL_STATE_H
#define DM_NT_KERNEL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_paths.h"
#include "base/partmap.h"

#define NS_PER_SEC 1000000000u

/* UTF-16 -> UTF-8 room for the longest name a record can hold
 * (nt_paths.h, DM_NAME_UNITS_MAX). */
#define SCRATCH_SIZE (3u * DM_NAME_UNITS_MAX + 1u)

/*
 * How long a thread's entry outlives its End event. Its I/O can complete
 * after the thread ended (docs/etw.md §7). An I/O still outstanding at
 * End completes within its own service time, and 5 s is more than ten
 * times the slowest completion in the sample traces (0.40 s win8, 0.3 ms
 * win11). A new Start of the same thread id replaces the entry at once,
 * so a longer grace cannot attribute a reused id wrongly; it only keeps a
 * table slot a little longer.
 */
#define THREAD_GRACE_SEC 5u
#define THREAD_ALIVE UINT64_MAX /* end of a thread or process still running */
/* The table age of an ended thread or process: older than every entry
 * written, which get ages from 2 on (0 marks a free slot). */
#define AGE_ENDED 1u

/* The tables' slots: struct dm_kslot (key, age) first, then the value.
 * An age is the decoder's write clock when the entry was written. Threads
 * and processes both have end right after the head, where the tables'
 * sweep looks for it (nt_kernel_state.c, ended_within_grace). */
struct thread_slot {
    struct dm_kslot k;  /* key: thread id */
    uint64_t end;       /* timestamp of the End, or THREAD_ALIVE */
    uint32_t pid;
};

struct process_slot {
    struct dm_kslot k;  /* key: process id */
    uint64_t end;       /* timestamp of the forward End, or THREAD_ALIVE */
    char name[DM_PROCESS_MAX];
    uint8_t name_len;   /* bytes, without the NUL */
};

struct file_slot {
    struct dm_kslot k;  /* key: FILE_OBJECT address */
    uint64_t until;     /* rundown tables: time of the FileDelete/FileRundown */
    uint8_t cut;        /* the start of the path was dropped */
    uint8_t mapped;     /* a volume mapping was applied */
    uint8_t needed;     /* rundown tables: a request will use the name
                         * (nt_kernel_need.c); 1 in the forward table */
    uint32_t volumes_generation; /* of kd->volumes when name was stored */
    uint16_t name_len;  /* bytes, without the NUL */
    /* Allocated to the name's length (name_len + 1): a slot holding
     * DM_FILE_MAX bytes in place would be 296 bytes, and a trace names
     * thousands of files, most with short paths. Owned by the slot: freed
     * when the entry is removed, replaced or the table freed. */
    char *name;
};

struct irp_slot {
    struct dm_kslot k;  /* key: IRP address */
    uint64_t timestamp; /* of the Init */
    uint32_t tid, pid;
    uint8_t has_tid, has_pid;
};

/* What the naming records tell: one set follows the trace forward, the
 * optional second holds rundown names (see the top of nt_kernel.c). */
struct names {
    struct dm_ktable threads;   /* struct thread_slot */
    struct dm_ktable processes; /* struct process_slot */
    struct dm_ktable files;     /* struct file_slot */
};

/* Ticks of a clock to nanoseconds. Both clocks usually tick at 10 MHz
 * (QPC on Windows 10 and later, and the FILETIME clock), 100 ns a tick: a
 * multiplication then gives the exact result, and the general
 * multiply-divide (two 64-bit divisions) is left for other rates. */
struct tick_scale {
    uint64_t freq;        /* ticks per second */
    uint64_t ns_per_tick; /* NS_PER_SEC / freq when that is whole, else 0 */
    uint64_t max_ticks;   /* UINT64_MAX / ns_per_tick: beyond, saturate */
};

struct dm_kneed; /* nt_kernel_need.c */

/* Disks whose size a trace can tell (more are not sized: their maps end
 * at the largest offset seen). */
#define DM_KDISK_SIZES_MAX 64

/* Which records a pass takes its names from. */
enum pass { PASS_FORWARD, PASS_RUNDOWN };

struct dm_kdecoder {
    struct tick_scale ts_scale;   /* record timestamps */
    struct tick_scale hrrt_scale; /* HighResResponseTime (QPC) */
    uint64_t start_ts;
    uint64_t thread_grace; /* THREAD_GRACE_SEC in timestamp ticks */
    uint64_t naming_ts;    /* timestamp of the Thread or Process record being
                            * decoded: "now" for the tables' sweeps */
    uint64_t clock; /* write clock for the tables' replacement order */
    uint64_t malformed;
    uint64_t diskio_counts[6];

    struct names names;
    struct names *rundown; /* NULL until dm_kdecode_rundown() is used */
    /* The naming pass's account of which rundown file names a request
     * will use (nt_kernel_need.c): from the first dm_kdecode_rundown() to
     * the first dm_kdecode() of a record other than DiskIo, else NULL. */
    struct dm_kneed *need;
    struct dm_ktable irps; /* struct irp_slot */

    struct dm_volumes volumes;
    struct dm_partmap disk_volumes; /* LogDisk: volume byte ranges per disk */
    /* PhyDisk and LogDisk in the naming pass: each disk's size (nt_kernel_sysconfig.c) */
    struct dm_kdisk_size {
        uint32_t disk;
        uint64_t geometry;       /* bytes per sector x sectors x tracks x cylinders; 0: none */
        uint64_t partitions_end; /* the end of its last LogDisk partition */
    } disk_sizes[DM_KDISK_SIZES_MAX];
    int n_disk_sizes;
    int skip_partitions; /* nothing reads ev->partition: leave it ""
                          * (dm_kdecoder_name_partitions) */

    char *scratch; /* SCRATCH_SIZE bytes for UTF-16 -> UTF-8 */
    /* A path being stored (translated, before its copy), or an event's
     * file when a volume mapping is applied at lookup: the event's names
     * are valid until the next dm_kdecode() (diskmon.h). */
    char path[DM_FILE_MAX];
};

/* Typed views of the tables' slots. */
static inline struct thread_slot *thread_at(const struct dm_ktable *t, size_t s)
{
    return (struct thread_slot *)dm_kt_slot(t, s);
}

static inline struct process_slot *process_at(const struct dm_ktable *t, size_t s)
{
    return (struct process_slot *)dm_kt_slot(t, s);
}

static inline struct file_slot *file_at(const struct dm_ktable *t, size_t s)
{
    return (struct file_slot *)dm_kt_slot(t, s);
}

static inline struct irp_slot *irp_at(const struct dm_ktable *t, size_t s)
{
    return (struct irp_slot *)dm_kt_slot(t, s);
}

/* A record that failed its size checks. Counted once: on the forward pass
 * (a replay's rundown pass sees the same records again). */
static inline int malformed(struct dm_kdecoder *kd, enum pass pass)
{
    if (pass == PASS_FORWARD)
        kd->malformed++;
    return DM_ECORRUPT;
}

/* The handlers, one per class: 0 when the record only updated the tables
 * or was of no interest, 1 when *ev was filled (DiskIo), DM_ECORRUPT when
 * the record failed its size checks (counted by malformed()). */
int dm_kdecoder__on_thread(struct dm_kdecoder *kd, struct names *nm,
                           const struct dm_krecord *rec, enum pass pass);
int dm_kdecoder__on_process(struct dm_kdecoder *kd, struct names *nm,
                            const struct dm_krecord *rec, enum pass pass);
int dm_kdecoder__on_fileio(struct dm_kdecoder *kd, struct names *nm,
                           const struct dm_krecord *rec, enum pass pass);
int dm_kdecoder__on_volume_mapping(struct dm_kdecoder *kd, struct names *nm,
                                   const struct dm_krecord *rec, enum pass pass);
int dm_kdecoder__on_diskio(struct dm_kdecoder *kd, const struct dm_krecord *rec,
                           struct dm_event *ev);
int dm_kdecoder__on_sysconfig_disk(struct dm_kdecoder *kd, struct names *nm,
                                   const struct dm_krecord *rec, enum pass pass);
/* The DiskIo Inits (ReadInit, WriteInit, FlushInit): 0 or DM_ECORRUPT. */
int dm_kdecoder__on_diskio_init(struct dm_kdecoder *kd, const struct dm_krecord *rec);

/* nt_kernel_need.c: keeping only the rundown file names a request will
 * use. init: DM_ENOMEM or 0; at: settle the entries on probation older
 * than ts; request: a DiskIo completion on
 * file_object; named: the forward table names file_object from here
 * (named 1) or ends its name (0); is_dead: an end-of-life record of
 * file_object was met and its name dropped; first_end: f was just stored
 * for file_object's first end-of-life record, at ts. */
int dm_kdecoder__need_init(struct dm_kdecoder *kd);
void dm_kdecoder__need_free(struct dm_kdecoder *kd);
void dm_kdecoder__need_at(struct dm_kdecoder *kd, uint64_t ts);
void dm_kdecoder__need_request(struct dm_kdecoder *kd, uint64_t file_object,
                               uint64_t ts);
void dm_kdecoder__need_named(struct dm_kdecoder *kd, uint64_t file_object, int named);
int dm_kdecoder__need_is_dead(const struct dm_kdecoder *kd, uint64_t file_object);
void dm_kdecoder__need_first_end(struct dm_kdecoder *kd, uint64_t file_object,
                                 uint64_t ts, struct file_slot *f);

/* nt_kernel_state.c: the decoder's tables, scratch and clocks (state_init:
 * 0 or DM_ENOMEM, after which state_free is still to be called), and one
 * set of naming tables (names_init: 0 or DM_ENOMEM; names_free frees what
 * names_init got, even after a failure). */
int dm_kdecoder__state_init(struct dm_kdecoder *kd, uint64_t ts_freq, uint64_t start_ts,
                            uint64_t hrrt_freq);
void dm_kdecoder__state_free(struct dm_kdecoder *kd);
int dm_kdecoder__names_init(struct names *n, const struct dm_kdecoder *kd);
void dm_kdecoder__names_free(struct names *n);

#endif /* DM_NT_KERNEL_STATE_H */
