/*
 * nt_kernel.c - the NT kernel's trace records to dm_events (see nt_kernel.h).
 *
 * A DiskIo completion names neither its thread nor its process: the .etl
 * stores it with a PERFINFO header and live ETW reports -1 for both
 * (docs/etw.md §2). So the decoder keeps what the other kernel records tell
 * it, in four tables:
 *
 *   thread id   -> process id      Thread Start/DCStart (End starts a
 *                                  grace period, see THREAD_GRACE_SEC)
 *   process id  -> image name      Process Start/DCStart (kept after End
 *                                  until the id is reused)
 *   file object -> file name       FileIo Name/FileCreate/FileRundown
 *                                  (FileDelete removes)
 *   IRP         -> issuing thread, DiskIo ReadInit/WriteInit/FlushInit
 *                  header pid, time  (removed by the completion)
 *
 * The tables are open-addressing hash tables (decode/ktable.h) that grow
 * as needed up to a cap (the *_MAX_SLOTS below): a key lives within
 * DM_KT_PROBE_LEN slots of its hash; only at the cap is the entry written
 * longest ago replaced, and dm_kdecoder_replaced() counts those, for the
 * sources' note. Each slot holds key and value together, so a lookup
 * touches one slot.
 *
 * Traces written by a session often name things only at their end: the
 * kernel's end-of-session rundown (Thread/Process DCEnd, FileIo
 * FileRundown) describes what was still alive, and PerfView applies those
 * names backwards. For that, a replay may first feed the whole trace to
 * dm_kdecode_rundown(), which fills a second set of the same tables from
 * records that describe the past (DCEnd, End, FileRundown, FileDelete); the
 * main tables are always asked first. A rundown file name is the name an
 * object had up to that record, so it is used only for requests completed
 * no later than the record (see nt_kernel_file.c).
 *
 * This file holds the entry points and which class goes to which handler;
 * each class has its handler in a file of its own, and the state they
 * share (the tables, their sizes, creating and freeing them) is in
 * nt_kernel_state.c, below them all (nt_kernel_state.h lists the files).
 *
 * Device paths: FileIo names are NT paths (\Device\HarddiskVolume2\...).
 * A short list of NT-prefix -> DOS-prefix pairs (nt_paths.h), from SysConfig
 * VolumeMapping records or from dm_kdecoder_add_volume(), turns them into
 * C:\... paths.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "decode/diskio.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"
#include "decode/nt_paths.h"

/* ---- public --------------------------------------------------------------- */

struct dm_kdecoder *dm_kdecoder_create(uint64_t ts_freq, uint64_t start_ts,
                                       uint64_t hrrt_freq)
{
    struct dm_kdecoder *kd;

    if (ts_freq == 0 || hrrt_freq == 0)
        return NULL;
    kd = calloc(1, sizeof *kd);
    if (kd == NULL)
        return NULL;
    if (dm_kdecoder__state_init(kd, ts_freq, start_ts, hrrt_freq) < 0) {
        dm_kdecoder_destroy(kd);
        return NULL;
    }
    return kd;
}

void dm_kdecoder_destroy(struct dm_kdecoder *kd)
{
    if (kd == NULL)
        return;
    dm_kdecoder__need_free(kd);
    dm_kdecoder__state_free(kd);
    free(kd);
}

#if defined(__GNUC__) || defined(__clang__)
#define DM_NOINLINE __attribute__((noinline))
#else
#define DM_NOINLINE
#endif

/*
 * Which handler takes each class, and the opcodes the forward pass takes
 * (bit n: opcode n; the others the handler ignores or, for DiskIo, calls
 * DM_ENOTFOUND before any check): DiskIo Read 10 .. FlushInit 15
 * (diskio.h), Thread Start 1, End 2, DCStart 3 and Process Start 1, End 2,
 * DCStart 3 (nt_kernel_process.c: DCEnd and Defunct are rundown-only),
 * FileIo Name 0, FileCreate 32, FileDelete 35, FileRundown 36
 * (nt_kernel_file.c), SysConfig VolumeMapping 35, PhyDisk 11 and LogDisk 12
 * (nt_kernel_sysconfig.c). DiskIo has no handler here: dm_kdecode and
 * dm_kdecode_rundown take it before the table.
 */
#define OP(n) ((uint64_t)1 << (n))
typedef int naming_fn(struct dm_kdecoder *kd, struct names *nm,
                      const struct dm_krecord *rec, enum pass pass);

static int no_naming(struct dm_kdecoder *kd, struct names *nm,
                     const struct dm_krecord *rec, enum pass pass)
{
    (void)kd, (void)nm, (void)rec, (void)pass;
    return 0;
}

static const struct {
    naming_fn *on;
    uint64_t forward_opcodes;
} naming_handler[] = {
    [DM_K_OTHER] = {no_naming, 0},
    [DM_K_DISKIO] = {no_naming, OP(DM_DISKIO_READ) | OP(DM_DISKIO_WRITE) |
                                    OP(DM_DISKIO_READ_INIT) | OP(DM_DISKIO_WRITE_INIT) |
                                    OP(DM_DISKIO_FLUSH_BUFFERS) | OP(DM_DISKIO_FLUSH_INIT)},
    [DM_K_PROCESS] = {dm_kdecoder__on_process, OP(1) | OP(2) | OP(3)},
    [DM_K_THREAD] = {dm_kdecoder__on_thread, OP(1) | OP(2) | OP(3)},
    [DM_K_FILEIO] = {dm_kdecoder__on_fileio, OP(0) | OP(32) | OP(35) | OP(36)},
    [DM_K_SYSCONFIG] = {dm_kdecoder__on_volume_mapping, OP(35)},
    [DM_K_SYSCONFIG_GROUP] = {dm_kdecoder__on_sysconfig_disk,
                              OP(DM_SYSCONFIG_PHYDISK) | OP(DM_SYSCONFIG_LOGDISK)},
};

#define CLASSES (sizeof naming_handler / sizeof naming_handler[0])

/* The handler of a class; a class beyond the table is no naming class. */
static naming_fn *naming_of(enum dm_kclass kclass)
{
    return (unsigned)kclass < CLASSES ? naming_handler[kclass].on : no_naming;
}

static int decode_naming(struct dm_kdecoder *kd, const struct dm_krecord *rec);

int dm_kdecode(struct dm_kdecoder *kd, const struct dm_krecord *rec,
               struct dm_event *ev)
{
    if ((rec->pointer_size != 4 && rec->pointer_size != 8) ||
        (rec->payload == NULL && rec->payload_len > 0))
        return rec->kclass == DM_K_OTHER ? 0 : malformed(kd, PASS_FORWARD);
    /* The one class a busy disk multiplies goes first, its Inits apart. */
    if (rec->kclass == DM_K_DISKIO) {
        if (rec->opcode == DM_DISKIO_READ_INIT || rec->opcode == DM_DISKIO_WRITE_INIT ||
            rec->opcode == DM_DISKIO_FLUSH_INIT)
            return dm_kdecoder__on_diskio_init(kd, rec);
        return dm_kdecoder__on_diskio(kd, rec, ev);
    }
    return rec->kclass == DM_K_OTHER ? 0 : decode_naming(kd, rec);
}

/* dm_kdecode's records other than DiskIo: the naming classes. Apart, so
 * that dm_kdecode's DiskIo path stays a plain jump (no stack frame). */
static DM_NOINLINE int decode_naming(struct dm_kdecoder *kd, const struct dm_krecord *rec)
{
    /* The naming pass is over: settle the names on probation and free its
     * bookkeeping (nt_kernel_need.c). Only memory depends on when: an
     * entry on probation names its requests as a kept one does. */
    if (kd->need != NULL) {
        dm_kdecoder__need_at(kd, UINT64_MAX);
        dm_kdecoder__need_free(kd);
    }
    return naming_of(rec->kclass)(kd, &kd->names, rec, PASS_FORWARD);
}

/* The forward pass's opcodes are the table's (naming_handler). A record
 * with a bad header is never ignored: dm_kdecode counts it as malformed
 * whatever its opcode. */
int dm_kdecode_ignores(const struct dm_krecord *rec)
{
    if (rec->kclass == DM_K_OTHER)
        return 1;
    if ((rec->pointer_size != 4 && rec->pointer_size != 8) ||
        (rec->payload == NULL && rec->payload_len > 0))
        return 0;
    if ((unsigned)rec->kclass >= CLASSES || rec->opcode >= 64)
        return 1;
    return (naming_handler[rec->kclass].forward_opcodes >> rec->opcode & 1u) == 0;
}

int dm_kdecode_rundown_ignores(enum dm_kclass kclass, unsigned opcode)
{
    /* As the DiskIo branch of dm_kdecode_rundown below. */
    return kclass == DM_K_DISKIO && opcode != DM_DISKIO_READ &&
           opcode != DM_DISKIO_WRITE;
}

int dm_kdecode_rundown(struct dm_kdecoder *kd, const struct dm_krecord *rec)
{
    if (rec->kclass == DM_K_OTHER)
        return 0;
    if ((rec->pointer_size != 4 && rec->pointer_size != 8) ||
        (rec->payload == NULL && rec->payload_len > 0))
        return DM_ECORRUPT;
    if (kd->rundown == NULL) {
        kd->rundown = calloc(1, sizeof *kd->rundown);
        if (kd->rundown == NULL)
            return DM_ENOMEM;
        if (dm_kdecoder__names_init(kd->rundown, kd) < 0 || dm_kdecoder__need_init(kd) < 0) {
            dm_kdecoder__names_free(kd->rundown);
            free(kd->rundown);
            kd->rundown = NULL;
            return DM_ENOMEM;
        }
    }
    if (rec->kclass == DM_K_DISKIO) {
        struct dm_diskio d;

        /* Read and Write completions name a file object (diskio.h). */
        if ((rec->opcode == DM_DISKIO_READ || rec->opcode == DM_DISKIO_WRITE) &&
            dm_diskio_decode_inline(rec->opcode, rec->version, rec->pointer_size,
                                    rec->payload, rec->payload_len, &d) == 0 &&
            d.file_object != 0)
            dm_kdecoder__need_request(kd, d.file_object, rec->timestamp);
        return 0;
    }
    return naming_of(rec->kclass)(kd, kd->rundown, rec, PASS_RUNDOWN);
}

void dm_kdecoder_name_partitions(struct dm_kdecoder *kd, int on)
{
    kd->skip_partitions = !on;
}

uint64_t dm_kdecoder_replaced(const struct dm_kdecoder *kd)
{
    uint64_t n = kd->names.threads.replaced + kd->names.processes.replaced +
                 kd->names.files.replaced + kd->irps.replaced;

    if (kd->rundown != NULL)
        n += kd->rundown->threads.replaced + kd->rundown->processes.replaced +
             kd->rundown->files.replaced;
    return n;
}

uint64_t dm_kdecoder_malformed(const struct dm_kdecoder *kd)
{
    return kd->malformed;
}

void dm_kdecoder_diskio_counts(const struct dm_kdecoder *kd, uint64_t counts[6])
{
    memcpy(counts, kd->diskio_counts, sizeof kd->diskio_counts);
}

int dm_kdecoder_add_volume(struct dm_kdecoder *kd, const char *nt_prefix,
                           const char *dos_prefix)
{
    return dm_volumes_add(&kd->volumes, nt_prefix, dos_prefix);
}

/*
 * Class GUIDs as stored: Data1 (4 bytes), Data2, Data3 little-endian, then
 * Data4 as is. [docs/etw.md §2; PerfView SysConfigTaskGuid]
 */
static const struct {
    uint8_t guid[16];
    enum dm_kclass kclass;
} class_guids[] = {
    /* {3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c} DiskIo */
    {{0xd4, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
      0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}, DM_K_DISKIO},
    /* {3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c} Process */
    {{0xd0, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
      0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}, DM_K_PROCESS},
    /* {3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c} Thread */
    {{0xd1, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
      0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}, DM_K_THREAD},
    /* {90cbdc39-4a3e-11d1-84f4-0000f80464e3} FileIo */
    {{0x39, 0xdc, 0xcb, 0x90, 0x3e, 0x4a, 0xd1, 0x11,
      0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}, DM_K_FILEIO},
    /* {9b79ee91-b5fd-41c0-a243-4248e266e9d0} SysConfig (VolumeMapping) */
    {{0x91, 0xee, 0x79, 0x9b, 0xfd, 0xb5, 0xc0, 0x41,
      0xa2, 0x43, 0x42, 0x48, 0xe2, 0x66, 0xe9, 0xd0}, DM_K_SYSCONFIG},
};

enum dm_kclass dm_kclass_from_guid(const uint8_t guid[16])
{
    for (size_t i = 0; i < sizeof class_guids / sizeof class_guids[0]; i++)
        if (memcmp(guid, class_guids[i].guid, 16) == 0)
            return class_guids[i].kclass;
    return DM_K_OTHER;
}

/*
 * HookId groups of .etl system headers (docs/etw.md §4, [phnt]). Group
 * 0x0B (SysConfig in system headers) is a class apart from the records
 * with the SysConfig GUID: its opcode 35 is a processor record on the
 * win11 sample, not VolumeMapping, which comes only with the GUID; of
 * group 0x0B only LogDisk is decoded (nt_kernel_sysconfig.c).
 */
enum dm_kclass dm_kclass_from_group(unsigned group)
{
    switch (group) {
    case 1:
        return DM_K_DISKIO;
    case 3:
        return DM_K_PROCESS;
    case 4:
        return DM_K_FILEIO;
    case 5:
        return DM_K_THREAD;
    case 0x0B:
        return DM_K_SYSCONFIG_GROUP;
    default:
        return DM_K_OTHER;
    }
}
