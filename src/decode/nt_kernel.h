/*
 * nt_kernel.h - turning the NT kernel's trace records (the MOF classes of
 * the NT Kernel Logger) into dm_events.
 *
 * Both the live ETW callback and the .etl reader describe each kernel record
 * with struct dm_krecord and pass it to dm_kdecode(). It keeps the tables
 * that attribution needs (thread -> process, process -> image name, file
 * object -> file name, IRP -> issuing thread from Init events) and fills a
 * dm_event for every completed Read, Write and FlushBuffers.
 *
 * Single-threaded: the source thread owns a dm_kdecoder. The tables are
 * bounded; entries are replaced, never grown without limit.
 */
#ifndef DM_NT_KERNEL_H
#define DM_NT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

/* Kernel MOF classes. ETW live gives a class GUID, an .etl system header a
 * HookId group (docs/etw.md §4: 1 DiskIo, 3 Process, 4 FileIo,
 * 5 Thread); both map to this. */
enum dm_kclass {
    DM_K_OTHER = 0,
    DM_K_DISKIO,
    DM_K_PROCESS,
    DM_K_THREAD,
    DM_K_FILEIO,
    /* SysConfig, the kernel's configuration records (nt_kernel_sysconfig.c),
     * comes two ways, apart because their opcodes differ: */
    DM_K_SYSCONFIG,      /* with the {9b79ee91-...} GUID: VolumeMapping */
    DM_K_SYSCONFIG_GROUP /* in system headers, HookId group 0x0B
                          * (EventTraceConfig; PerfView: SystemConfig): LogDisk */
};

/* SysConfig PhyDisk: a disk's number and geometry (nt_kernel_sysconfig.c). */
#define DM_SYSCONFIG_PHYDISK 11
/* SysConfig LogDisk: a volume's disk, byte range and drive letter. */
#define DM_SYSCONFIG_LOGDISK 12

#define DM_KNO_ID UINT32_MAX /* header carried no thread/process id */

struct dm_krecord {
    enum dm_kclass kclass;
    unsigned opcode;           /* MOF EventType */
    unsigned version;          /* MOF version */
    unsigned pointer_size;     /* 4 or 8 */
    uint64_t timestamp;        /* raw ticks of the session's clock */
    uint32_t tid;              /* header thread id, or DM_KNO_ID */
    uint32_t pid;              /* header process id, or DM_KNO_ID */
    const uint8_t *payload;
    size_t payload_len;
};

struct dm_kdecoder;

/*
 * Two clocks: record timestamps follow the session's clock type
 * (Wnode.ClientContext / the trace header's ReservedFlags: 1 QPC, 2 system
 * time in 100 ns units, 3 CPU cycles), but DiskIo's HighResResponseTime is
 * always in QueryPerformanceCounter ticks (MS diskio-typegroup1;
 * docs/etw.md §3 and §7).
 * ts_freq: ticks per second of rec->timestamp (time_ns); start_ts: the tick
 * that is time 0 (replay: the trace header event; live: the capture start);
 * hrrt_freq: ticks per second of HighResResponseTime (duration_ns): the
 * trace header's PerfFreq, or QueryPerformanceFrequency live. NULL when out
 * of memory or a frequency is 0.
 */
struct dm_kdecoder *dm_kdecoder_create(uint64_t ts_freq, uint64_t start_ts,
                                       uint64_t hrrt_freq);
void dm_kdecoder_destroy(struct dm_kdecoder *kd);

/*
 * Consume one record. Returns 1 when *ev was filled with a completed request
 * (DiskIo Read 10, Write 11, FlushBuffers 14), 0 when the record only
 * updated the tables or was of no interest, DM_ECORRUPT when a record of a
 * class we decode failed its size checks (counted in malformed, skipped).
 *
 * Records must come in timestamp order (live: through decode/reorder.h).
 * Names take effect forward, as a live session learns them: FileIo Name,
 * FileCreate and FileRundown name a file object from then on, FileDelete
 * ends the name (the address may be reused by another object). A Thread
 * End keeps the thread's process for a grace period (5 s of timestamp
 * ticks) for its last completions; a new Start of the id replaces it.
 * A version 2 (Windows 7) completion whose Init was not seen is attributed
 * to its header thread id, when the header has one.
 */
int dm_kdecode(struct dm_kdecoder *kd, const struct dm_krecord *rec,
               struct dm_event *ev);

/*
 * Whether dm_kdecode() does nothing at all with rec, whatever records come
 * before or after it: it returns 0 and changes no table and no count. True
 * for the classes and opcodes no handler decodes (DM_K_OTHER, Thread
 * CSwitch, FileIo Read/Write, DiskIo driver records, ...), false for every
 * record that can name, attribute, complete or be counted as malformed.
 * The live source drops such records before the reorder stage: their
 * order cannot matter, and holding them costs the stage a copy and a merge
 * (decode/reorder.h). Cheap: a few compares.
 */
int dm_kdecode_ignores(const struct dm_krecord *rec);

/*
 * Replay only, before the dm_kdecode() pass: learn names that the trace
 * gives only in hindsight, typically in its end-of-session rundown. Takes
 * Thread End/DCEnd (thread -> process), Process End/DCEnd (process -> image
 * name), FileIo FileRundown/FileDelete (file object -> name) and SysConfig
 * VolumeMapping, into separate tables that dm_kdecode() consults only when
 * its own (forward) tables have no entry; PerfView resolves names from
 * rundown the same way. A file name from here is used only when its record
 * is the first FileIo_Name record of that file object in the trace, and
 * only for requests completed no later than that record (a later object at
 * the same address is another file). Of those names, only the ones some
 * request will use are kept: the pass also takes the DiskIo Read and
 * Write completions, and follows which file objects the forward pass will
 * have named when each completes (nt_kernel_need.c), so a trace that
 * deletes many files does not keep every name. Feed it every record the
 * dm_kdecode() pass will see, DiskIo included, in the same (timestamp)
 * order, but for those dm_kdecode_rundown_ignores() names; the first
 * dm_kdecode() of a record other than DiskIo after it ends the pass (frees
 * its bookkeeping).
 * Returns 0, DM_ECORRUPT (not counted: the forward pass counts it) or
 * DM_ENOMEM (the first call allocates the tables).
 */
int dm_kdecode_rundown(struct dm_kdecoder *kd, const struct dm_krecord *rec);

/*
 * Whether dm_kdecode_rundown() does nothing with every record of this class
 * and opcode (it would return 0 or DM_ECORRUPT, and neither counts), so a
 * reader may leave them out of that pass unread: the DiskIo records other
 * than Read and Write completions (the Inits, half of a trace's DiskIo
 * records, and the flushes, which name no file).
 */
int dm_kdecode_rundown_ignores(enum dm_kclass kclass, unsigned opcode);

/*
 * Whether completions name the volume they fall in (ev->partition, from
 * the LogDisk ranges); on from dm_kdecoder_create(). A source turns it off
 * when nothing will read the name (dm_options_read_partition), so the
 * lookup costs nothing then; ev->partition is "" meanwhile.
 */
void dm_kdecoder_name_partitions(struct dm_kdecoder *kd, int on);

/* The size in bytes of disk as the trace's SysConfig records tell it,
 * learned by the naming pass (dm_kdecode_rundown; nt_kernel_sysconfig.c):
 * the PhyDisk geometry's product, or the end of the disk's last LogDisk
 * partition where that lies further; 0 when the trace has no PhyDisk
 * record of it. *from (may be NULL) says which. Read-only once the naming
 * pass is over (the forward pass does not change it), so another thread
 * may call it after the first request was handed on. */
uint64_t dm_kdecoder_disk_size(const struct dm_kdecoder *kd, uint32_t disk, const char **from);

/* Records that failed size checks so far. */
uint64_t dm_kdecoder_malformed(const struct dm_kdecoder *kd);
/* Live entries (a file's name, a thread's process, an I/O's start) the
 * tables dropped because they were at their cap (nt_kernel.c): some I/O
 * may then show no name. 0 on all but the busiest machines. */
uint64_t dm_kdecoder_replaced(const struct dm_kdecoder *kd);
/* The most file objects the file table holds without dropping one. */
#define DM_KDECODER_FILES_MAX 1048576u
/* The sources' note when dm_kdecoder_replaced() is not 0 (its one
 * argument, unsigned long long). */
#define DM_KDECODER_FULL_NOTE                                                \
    "diskmon: note: the decoder's tables were full (more than 1,048,576 "  \
    "open files or as many threads); %llu older entries were dropped, so "  \
    "some I/O shows no file or process name\n"

/* Counts per DiskIo opcode 10..15 decoded so far (index opcode - 10). */
void dm_kdecoder_diskio_counts(const struct dm_kdecoder *kd, uint64_t counts[6]);

/*
 * Translate file names that start with the NT device path nt_prefix
 * ("\\Device\\HarddiskVolume2" or with a trailing backslash) to dos_prefix
 * ("C:" or "C:\\"). The live ETW backend feeds this from QueryDosDevice;
 * replay learns the same pairs from SysConfig VolumeMapping events, which
 * nt_kernel_file.c adds to the table itself (dm_volumes_add). A later
 * call for the same nt_prefix replaces the earlier one; an empty dos_prefix
 * is ignored. Returns 0, DM_EUSAGE (empty or overlong prefix) or DM_ENOMEM
 * (the fixed table of mappings is full).
 */
int dm_kdecoder_add_volume(struct dm_kdecoder *kd, const char *nt_prefix,
                           const char *dos_prefix);

/*
 * Name the requests of disk that lie wholly inside [first, first + bytes)
 * after the volume name ("C:"): the live ETW backend's extents from
 * IOCTL_VOLUME_GET_VOLUME_DISK_EXTENTS; replay learns the same from the
 * trace's LogDisk records (nt_kernel_sysconfig.c). Returns 0, or -1 when
 * the map is full or the range is empty (then not named).
 */
int dm_kdecoder_add_disk_volume(struct dm_kdecoder *kd, uint32_t disk, uint64_t first,
                                uint64_t bytes, const char *name);

/* The class of a record that names its MOF class by GUID (16 bytes as
 * stored in an .etl or in EVENT_HEADER.ProviderId: little-endian Data1..3),
 * and of an .etl system header by its HookId group. DM_K_OTHER if neither. */
enum dm_kclass dm_kclass_from_guid(const uint8_t guid[16]);
enum dm_kclass dm_kclass_from_group(unsigned group);

#endif /* DM_NT_KERNEL_H */
