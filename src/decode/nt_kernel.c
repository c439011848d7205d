/*
 * nt_kernel.c - the NT kernel's trace records to dm_events (see nt_kernel.h).
 *
 * A DiskIo completion names neither its thread nor its process: the .etl
 * stores it with a PERFINFO header and live ETW reports -1 for both
 * (etw-facts.md s.2). So the decoder keeps what the other kernel records tell
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
 * no later than the record (see on_fileio).
 *
 * Device paths: FileIo names are NT paths (\Device\HarddiskVolume2\...).
 * A short list of NT-prefix -> DOS-prefix pairs (nt_paths.h), from SysConfig
 * VolumeMapping records or from dm_kdecoder_add_volume(), turns them into
 * C:\... paths.
 */
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "decode/diskio.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_paths.h"

/* Table sizes (slots; powers of two): what a table starts with, and its
 * cap. A table grows when half full, so it holds at least half its cap
 * without replacing anything (ktable.h). A busy desktop has a few thousand
 * threads and a few hundred processes; a Windows 11 desktop's start
 * rundown names about 26,000 files (etw-facts.md s.8), a file server far
 * more: the file table holds 1,048,576 file objects before it may replace
 * one, in at most 2,097,152 slots of 40 bytes (x64; 80 MB) plus the names.
 * The README's "Limits" gives these caps. */
#define THREAD_SLOTS 16384u
#define THREAD_MAX_SLOTS (1u << 20)
#define PROCESS_SLOTS 4096u
#define PROCESS_MAX_SLOTS (1u << 18)
#define FILE_SLOTS 8192u
#define FILE_MAX_SLOTS (2u * DM_KDECODER_FILES_MAX)
#define IRP_SLOTS 8192u
#define IRP_MAX_SLOTS (1u << 18)

/* UTF-16 -> UTF-8 room for the longest name a record can hold
 * (nt_paths.h, DM_NAME_UNITS_MAX). */
#define SCRATCH_SIZE (3u * DM_NAME_UNITS_MAX + 1u)

/* Opcodes of the other classes (etw-facts.md s.2). */
#define THREAD_START 1
#define THREAD_END 2
#define THREAD_DCSTART 3
#define THREAD_DCEND 4
#define PROCESS_START 1
#define PROCESS_END 2
#define PROCESS_DCSTART 3
#define PROCESS_DCEND 4
#define FILEIO_NAME 0
#define FILEIO_FILECREATE 32
#define FILEIO_FILEDELETE 35
#define FILEIO_FILERUNDOWN 36
/* SysConfig {9b79ee91-b5fd-41c0-a243-4248e266e9d0} opcode 35 VolumeMapping:
 * NtPath and DosPath, two NUL-terminated UTF-16 strings. Opcode and GUID
 * from PerfView KernelTraceEventParser.cs (SysConfigTaskGuid,
 * "VolumeMapping"); the layout was checked on the win8 sample, where e.g.
 * DataLen 58 = "\Device\HarddiskVolume2\" (25 units with NUL) + "C:\" (4). */
#define SYSCONFIG_VOLUME_MAPPING 35

#define NS_PER_SEC 1000000000u

/*
 * How long a thread's entry outlives its End event. Its I/O can complete
 * after the thread ended (etw-facts.md s.7). An I/O still outstanding at
 * End completes within its own service time, and 5 s is more than ten
 * times the slowest completion in the sample traces (0.40 s win8, 0.3 ms
 * win11). A new Start of the same thread id replaces the entry at once,
 * so a longer grace cannot attribute a reused id wrongly; it only keeps a
 * table slot a little longer.
 */
#define THREAD_GRACE_SEC 5u
#define THREAD_ALIVE UINT64_MAX /* thread_end of a thread that has not ended */
/* The table age of an ended thread: older than every entry written, which
 * get ages from 2 on (0 marks a free slot). */
#define AGE_ENDED 1u

/* The tables' slots: struct dm_kslot (key, age) first, then the value.
 * An age is the decoder's write clock when the entry was written. */
struct thread_slot {
    struct dm_kslot k;  /* key: thread id */
    uint64_t end;       /* timestamp of the End, or THREAD_ALIVE */
    uint32_t pid;
};

struct process_slot {
    struct dm_kslot k;  /* key: process id */
    char name[DM_PROCESS_MAX];
};

struct file_slot {
    struct dm_kslot k;  /* key: FILE_OBJECT address */
    uint64_t until;     /* rundown tables: time of the FileDelete/FileRundown */
    uint8_t cut;        /* the start of the path was dropped */
    uint8_t mapped;     /* a volume mapping was applied */
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
 * optional second holds rundown names (see the top of the file). */
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

/* Which records a pass takes its names from. */
enum pass { PASS_FORWARD, PASS_RUNDOWN };

struct dm_kdecoder {
    struct tick_scale ts_scale;   /* record timestamps */
    struct tick_scale hrrt_scale; /* HighResResponseTime (QPC) */
    uint64_t start_ts;
    uint64_t thread_grace; /* THREAD_GRACE_SEC in timestamp ticks */
    uint64_t clock; /* write clock for the tables' replacement order */
    uint64_t malformed;
    uint64_t diskio_counts[6];

    struct names names;
    struct names *rundown; /* NULL until dm_kdecode_rundown() is used */
    struct dm_ktable irps; /* struct irp_slot */

    struct dm_volumes volumes;

    char *scratch; /* SCRATCH_SIZE bytes for UTF-16 -> UTF-8 */
    /* A path being stored (translated, before its copy), or an event's
     * file when a volume mapping is applied at lookup: the event's names
     * are valid until the next dm_kdecode() (diskmon.h). */
    char path[DM_FILE_MAX];
};

/* ---- tables ---------------------------------------------------------------- */

static struct thread_slot *thread_at(const struct dm_ktable *t, size_t s)
{
    return (struct thread_slot *)dm_kt_slot(t, s);
}

static struct process_slot *process_at(const struct dm_ktable *t, size_t s)
{
    return (struct process_slot *)dm_kt_slot(t, s);
}

static struct file_slot *file_at(const struct dm_ktable *t, size_t s)
{
    return (struct file_slot *)dm_kt_slot(t, s);
}

static struct irp_slot *irp_at(const struct dm_ktable *t, size_t s)
{
    return (struct irp_slot *)dm_kt_slot(t, s);
}

static int names_init(struct names *n)
{
    int a = dm_kt_init_growing(&n->threads, THREAD_SLOTS, THREAD_MAX_SLOTS,
                               sizeof(struct thread_slot));
    int b = dm_kt_init_growing(&n->processes, PROCESS_SLOTS, PROCESS_MAX_SLOTS,
                               sizeof(struct process_slot));
    int c = dm_kt_init_growing(&n->files, FILE_SLOTS, FILE_MAX_SLOTS,
                               sizeof(struct file_slot));

    /* An ended thread (AGE_ENDED) makes room before the table grows: the
     * grace it is kept for is a courtesy to its last completions. */
    n->threads.spare_age = AGE_ENDED;
    return a < 0 || b < 0 || c < 0 ? DM_ENOMEM : 0;
}

static void names_free(struct names *n)
{
    if (n->files.mem != NULL)
        for (size_t s = 0; s <= n->files.mask; s++)
            if (dm_kt_slot(&n->files, s)->age != 0)
                free(file_at(&n->files, s)->name);
    dm_kt_free(&n->threads);
    dm_kt_free(&n->processes);
    dm_kt_free(&n->files);
}

/* ---- arithmetic ----------------------------------------------------------- */

/* hi:lo = a * b, from 32-bit halves (C11 has no 128-bit type). */
static void mul_64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);

    *lo = (p00 & 0xffffffffu) | (mid << 32);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* (hi:lo) / d by shift and subtract; requires hi < d so the quotient fits. */
static uint64_t div_128by64(uint64_t hi, uint64_t lo, uint64_t d)
{
    uint64_t rem = hi, q = 0;

    for (int i = 63; i >= 0; i--) {
        uint64_t carry = rem >> 63;
        rem = (rem << 1) | ((lo >> i) & 1u);
        q <<= 1;
        if (carry != 0 || rem >= d) {
            rem -= d;
            q |= 1u;
        }
    }
    return q;
}

/*
 * a * b / c without overflow in the intermediate product: a = q*c + r gives
 * a*b/c = q*b + r*b/c, and r*b/c < b. The common case (r*b fits in 64 bits,
 * true for any clock below 18 GHz) is two divisions; otherwise the 128-bit
 * path runs. A result beyond 64 bits (only from nonsense timestamps)
 * saturates.
 */
static uint64_t mul_div_u64(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t q = a / c, r = a % c, whole, part;

    if (b != 0 && q > UINT64_MAX / b)
        return UINT64_MAX;
    whole = q * b;
    if (b == 0 || r <= UINT64_MAX / b) {
        part = r * b / c;
    } else {
        uint64_t hi, lo;
        mul_64x64(r, b, &hi, &lo);
        part = div_128by64(hi, lo, c);
    }
    return whole > UINT64_MAX - part ? UINT64_MAX : whole + part;
}

static void tick_scale_init(struct tick_scale *sc, uint64_t freq)
{
    sc->freq = freq;
    sc->ns_per_tick = NS_PER_SEC % freq == 0 ? NS_PER_SEC / freq : 0;
    sc->max_ticks = sc->ns_per_tick != 0 ? UINT64_MAX / sc->ns_per_tick : 0;
}

/* ticks * NS_PER_SEC / freq, rounded down, saturating: the same result as
 * mul_div_u64, by one multiplication when the rate allows. */
static uint64_t ticks_to_ns(const struct tick_scale *sc, uint64_t ticks)
{
    if (sc->ns_per_tick != 0)
        return ticks > sc->max_ticks ? UINT64_MAX : ticks * sc->ns_per_tick;
    return mul_div_u64(ticks, NS_PER_SEC, sc->freq);
}

/* ---- the record classes --------------------------------------------------- */

/* A record that failed its size checks. Counted once: on the forward pass
 * (a replay's rundown pass sees the same records again). */
static int malformed(struct dm_kdecoder *kd, enum pass pass)
{
    if (pass == PASS_FORWARD)
        kd->malformed++;
    return DM_ECORRUPT;
}

/*
 * Thread_TypeGroup1: ProcessId 0, TThreadId 4 from version 1 on; version 0
 * had them the other way round (PerfView ThreadTraceData comments).
 * Forward: Start/DCStart add (replacing an ended entry of a reused id at
 * once), End only marks the entry ended: it serves the thread's last I/O
 * for THREAD_GRACE_SEC more. Rundown: End/DCEnd add.
 * [etw-facts.md s.2 and s.7; MS thread-typegroup1]
 */
static int on_thread(struct dm_kdecoder *kd, struct names *nm,
                     const struct dm_krecord *rec, enum pass pass)
{
    unsigned op = rec->opcode;
    uint32_t pid, tid;
    struct thread_slot *t;

    if (pass == PASS_FORWARD ? op != THREAD_START && op != THREAD_DCSTART &&
                                   op != THREAD_END
                             : op != THREAD_END && op != THREAD_DCEND)
        return 0;
    if (rec->payload_len < 8)
        return malformed(kd, pass);
    pid = dm_le32(rec->payload + (rec->version >= 1 ? 0 : 4));
    tid = dm_le32(rec->payload + (rec->version >= 1 ? 4 : 0));
    t = thread_at(&nm->threads, dm_kt_put(&nm->threads, tid, ++kd->clock));
    t->pid = pid;
    t->end = THREAD_ALIVE;
    if (pass == PASS_FORWARD && op == THREAD_END) {
        t->end = rec->timestamp;
        /* Oldest possible age: when a probe window is full, an ended
         * thread makes room before any live one (dm_kt_put replaces the
         * oldest). */
        t->k.age = AGE_ENDED;
    }
    return 0;
}

/*
 * Process_TypeGroup1 Start/DCStart, with P the pointer size:
 *   UniqueProcessKey 0 (ptr), ProcessId P, ParentId P+4, SessionId P+8,
 *   ExitStatus P+12, then
 *   v2: UserSID at P+16                               (24 x64, 20 x86)
 *   v3: DirectoryTableBase P+16 (ptr), UserSID 2P+16  (32 x64, 24 x86)
 *   v4+: DirectoryTableBase, Flags 2P+16, UserSID 2P+20 (36 x64, 28 x86)
 * The SID field is 4 zero bytes when absent; otherwise a TOKEN_USER (two
 * pointers) followed by the SID: 8 bytes (Revision, SubAuthorityCount at
 * byte 1, IdentifierAuthority) plus 4 per sub-authority. ImageFileName, a
 * NUL-terminated 8-bit string, follows. Later fields (CommandLine, ...) are
 * not needed. End and DCEnd have the same layout.
 * [etw-facts.md s.2; MS process-typegroup1; PerfView ProcessTraceData, SkipSID]
 */
static int on_process(struct dm_kdecoder *kd, struct names *nm,
                      const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, ps = rec->pointer_size;
    size_t sid_off, name_off, end;
    uint32_t pid;
    char *dst;

    if (pass == PASS_FORWARD ? rec->opcode != PROCESS_START &&
                                   rec->opcode != PROCESS_DCSTART
                             : rec->opcode != PROCESS_END &&
                                   rec->opcode != PROCESS_DCEND)
        return 0;       /* forward: End, DCEnd, Defunct keep the name */
    if (rec->version < 2)
        return 0;       /* pre-Vista layouts are not decoded */
    if (rec->version == 2)
        sid_off = ps + 16;
    else if (rec->version == 3)
        sid_off = 2 * ps + 16;
    else
        sid_off = 2 * ps + 20;
    if (len < sid_off + 4)
        return malformed(kd, pass);
    pid = dm_le32(b + ps);
    if (dm_le32(b + sid_off) == 0) {
        name_off = sid_off + 4;
    } else {
        size_t sid = sid_off + 2 * ps;
        if (len < sid + 8)
            return malformed(kd, pass);
        name_off = sid + 8 + 4 * (size_t)b[sid + 1];
    }
    for (end = name_off; end < len && b[end] != 0; end++)
        ;
    if (end >= len)
        return malformed(kd, pass); /* no NUL: the name is cut off */

    dst = process_at(&nm->processes,
                     dm_kt_put(&nm->processes, pid, ++kd->clock))->name;
    for (size_t i = 0; i < DM_PROCESS_MAX - 1 && name_off + i < end; i++) {
        unsigned char c = b[name_off + i];
        /* The name is in the system's 8-bit code page, which we cannot
         * convert portably: keep ASCII, mark the rest. Control bytes are
         * kept too: each output shows them its own way (text as \x1b,
         * json escaped, csv quoted; core/escape.h), as for file names. */
        dst[i] = c < 0x80 ? (char)c : '?';
        dst[i + 1] = '\0';
    }
    if (end == name_off)
        dst[0] = '\0';
    return 0;
}

/*
 * FileIo_Name (Name 0, FileCreate 32, FileDelete 35, FileRundown 36):
 * FileObject 0 (ptr), then the NT path as NUL-terminated UTF-16 at P.
 * A FileObject is the address of a kernel FILE_OBJECT, which is reused
 * once the object is freed; Microsoft's FileIo_Name page matches it to
 * DiskIo's FileObject, and its FileIo class page says FileRundown
 * "enumerates all open files on the computer at the end of the trace
 * session" (they are still open then).
 *
 * Forward (what a live session sees, in time order): Name, FileCreate and
 * FileRundown name the object from then on; FileDelete ends the mapping:
 * the object is gone, and a later object at the same address is another
 * file. (PerfView, which works on whole files, keeps the deleted name in
 * force after FileDelete: its HistoryDictionary adds every FileIo_Name
 * record from its time onward.)
 *
 * Rundown (replay's first pass): FileDelete and FileRundown describe the
 * name an object had before them (PerfView's isRundown: opcodes 35, 36).
 * The first such record of an address names the first object that lived
 * there: every request on that address up to the record's time (until)
 * gets it, unless the forward table names it. Later objects at the same
 * address were created during the trace and are named forward by their
 * FileCreate; a request of theirs after the first record's time never gets
 * the first object's name. PerfView, too, applies a rundown name backwards
 * only when nothing named the address before (HistoryDictionary.Add,
 * isEndRundown), but from time 0 and without the end. We take the first
 * FileDelete/FileRundown even after a FileCreate of the same address: the
 * win8 sample reads a directory through its new file object 0.12 ms before
 * that object's FileCreate is logged (the create's own I/O).
 * [etw-facts.md s.2; MS fileio-name, fileio; PerfView
 * KernelTraceEventParser.cs FileIONameTraceData callback, HistoryDictionary.cs]
 */
static int on_fileio(struct dm_kdecoder *kd, struct names *nm,
                     const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, ps = rec->pointer_size, units, n, s;
    const uint8_t *name;
    uint64_t file_object;
    struct file_slot *f;
    int terminated, cut, had_entry;
    uint8_t mapped = 0;
    char *copy;

    if (rec->opcode != FILEIO_FILEDELETE && rec->opcode != FILEIO_FILERUNDOWN &&
        rec->opcode != FILEIO_NAME && rec->opcode != FILEIO_FILECREATE)
        return 0;
    if (len < ps)
        return malformed(kd, pass);
    file_object = dm_le_ptr(b, (unsigned)ps);
    if (pass == PASS_FORWARD && rec->opcode == FILEIO_FILEDELETE) {
        s = dm_kt_find(&nm->files, file_object);
        if (s != DM_KT_NONE) {
            free(file_at(&nm->files, s)->name);
            dm_kt_remove(&nm->files, s);
        }
        return 0;
    }
    if (pass == PASS_RUNDOWN &&
        (rec->opcode == FILEIO_NAME || rec->opcode == FILEIO_FILECREATE ||
         dm_kt_find(&nm->files, file_object) != DM_KT_NONE))
        return 0; /* not the address's first end-of-life record: see above */
    units = dm_utf16_units(b + ps, len - ps, &terminated);
    if (units == 0)
        return 0;
    name = b + ps;
    cut = 0;
    if (units > DM_NAME_UNITS_MAX) { /* cannot happen in a 64 KB record */
        name += 2 * (units - DM_NAME_UNITS_MAX);
        units = DM_NAME_UNITS_MAX;
        cut = 1;
    }
    n = dm_utf16_to_utf8(name, units, kd->scratch);
    cut |= dm_volumes_store_path(&kd->volumes, kd->path, DM_FILE_MAX, kd->scratch, n,
                                 &mapped);
    n = strlen(kd->path);
    copy = malloc(n + 1);
    s = dm_kt_claim(&nm->files, file_object, ++kd->clock, &had_entry);
    f = file_at(&nm->files, s);
    if (had_entry)
        free(f->name);
    if (copy == NULL) {
        /* Out of memory: the object goes unnamed, as when its entry is
         * replaced; its requests are still shown. */
        dm_kt_remove(&nm->files, s);
        return 0;
    }
    memcpy(copy, kd->path, n + 1);
    f->name = copy;
    f->name_len = (uint16_t)n;
    f->until = rec->timestamp;
    f->cut = (uint8_t)cut;
    f->mapped = mapped;
    f->volumes_generation = kd->volumes.generation;
    return 0;
}

/* SysConfig VolumeMapping: NtPath, DosPath (see SYSCONFIG_VOLUME_MAPPING). */
static int on_sysconfig(struct dm_kdecoder *kd, const struct dm_krecord *rec,
                        enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, nt_units, dos_units;
    char nt[DM_VOLUME_NT_MAX * 3], dos[DM_VOLUME_DOS_MAX * 3];
    int terminated;

    if (rec->opcode != SYSCONFIG_VOLUME_MAPPING)
        return 0;
    nt_units = dm_utf16_units(b, len, &terminated);
    if (!terminated)
        return malformed(kd, pass);
    dos_units = dm_utf16_units(b + 2 * (nt_units + 1), len - 2 * (nt_units + 1),
                            &terminated);
    if (nt_units >= DM_VOLUME_NT_MAX || dos_units >= DM_VOLUME_DOS_MAX)
        return 0; /* longer than any real device prefix: ignore */
    dm_utf16_to_utf8(b, nt_units, nt);
    dm_utf16_to_utf8(b + 2 * (nt_units + 1), dos_units, dos);
    (void)dm_kdecoder_add_volume(kd, nt, dos); /* a full table keeps the first */
    return 0;
}

/* The process of thread tid at time ts: forward tables first (an ended
 * thread within its grace), then rundown ones. */
static int lookup_thread(const struct dm_kdecoder *kd, uint32_t tid,
                         uint64_t ts, uint32_t *pid)
{
    size_t s = dm_kt_find(&kd->names.threads, tid);

    if (s != DM_KT_NONE) {
        const struct thread_slot *t = thread_at(&kd->names.threads, s);
        if (t->end == THREAD_ALIVE || ts <= t->end ||
            ts - t->end <= kd->thread_grace) {
            *pid = t->pid;
            return 1;
        }
    }
    if (kd->rundown != NULL &&
        (s = dm_kt_find(&kd->rundown->threads, tid)) != DM_KT_NONE) {
        *pid = thread_at(&kd->rundown->threads, s)->pid;
        return 1;
    }
    return 0;
}

/* The image name of pid, or NULL when unknown or empty. */
static const char *lookup_process(const struct dm_kdecoder *kd, uint32_t pid)
{
    const struct names *nm[2] = {&kd->names, kd->rundown};

    for (int i = 0; i < 2 && nm[i] != NULL; i++) {
        size_t s = dm_kt_find(&nm[i]->processes, pid);
        if (s != DM_KT_NONE) {
            const char *name = process_at(&nm[i]->processes, s)->name;
            if (name[0] != '\0')
                return name;
        }
    }
    return NULL;
}

/* The name of file_object for a request completed at ts: the forward
 * table's, else a rundown name still in force then. */
static const struct file_slot *lookup_file(const struct dm_kdecoder *kd,
                                           uint64_t file_object, uint64_t ts)
{
    size_t s = dm_kt_find(&kd->names.files, file_object);
    const struct file_slot *f;

    if (s != DM_KT_NONE)
        return file_at(&kd->names.files, s);
    if (kd->rundown != NULL &&
        (s = dm_kt_find(&kd->rundown->files, file_object)) != DM_KT_NONE &&
        ts <= (f = file_at(&kd->rundown->files, s))->until)
        return f;
    return NULL;
}

/*
 * DiskIo: Init events remember the IRP; completions become a dm_event.
 * Attribution, in order of trust:
 *   tid  IssuingThreadId of the completion (version 3), else the tid the
 *        IRP's Init event recorded (its IssuingThreadId, or for version 2
 *        its header thread id);
 *   pid  the thread table for that tid, else the Init header's process id,
 *        else the completion's own header process id, if it has one.
 */
static int on_diskio(struct dm_kdecoder *kd, const struct dm_krecord *rec,
                     struct dm_event *ev)
{
    struct dm_diskio d;
    const struct irp_slot *init = NULL;
    const struct file_slot *f;
    const char *name;
    int rc, has_tid = 0, has_pid = 0;
    uint32_t tid = 0, pid = 0;
    size_t irp_slot;

    if (rec->opcode == DM_DISKIO_READ_INIT || rec->opcode == DM_DISKIO_WRITE_INIT ||
        rec->opcode == DM_DISKIO_FLUSH_INIT) {
        /* Half of all DiskIo records: decoded on their own (the pointer
         * size was checked by dm_kdecode). */
        struct irp_slot *e;

        if (dm_diskio_decode_init(rec->version, rec->pointer_size, rec->payload,
                                  rec->payload_len, &d) < 0)
            return malformed(kd, PASS_FORWARD);
        kd->diskio_counts[rec->opcode - DM_DISKIO_READ]++;
        e = irp_at(&kd->irps, dm_kt_put(&kd->irps, d.irp, ++kd->clock));
        e->timestamp = rec->timestamp;
        e->has_tid = d.has_issuing_tid || rec->tid != DM_KNO_ID;
        e->tid = d.has_issuing_tid ? d.issuing_tid : rec->tid;
        e->has_pid = rec->pid != DM_KNO_ID;
        e->pid = rec->pid;
        return 0;
    }
    rc = dm_diskio_decode_inline(rec->opcode, rec->version, rec->pointer_size,
                                 rec->payload, rec->payload_len, &d);
    if (rc == DM_ENOTFOUND)
        return 0; /* DiskIo's driver and split events: not ours */
    if (rc < 0)
        return malformed(kd, PASS_FORWARD);
    kd->diskio_counts[rec->opcode - DM_DISKIO_READ]++;

    irp_slot = dm_kt_find(&kd->irps, d.irp);
    /* An Init stamped after this completion belongs to the IRP's next use
     * (live sessions do not sort across CPUs); leave it for that one. */
    if (irp_slot != DM_KT_NONE &&
        irp_at(&kd->irps, irp_slot)->timestamp <= rec->timestamp)
        init = irp_at(&kd->irps, irp_slot);

    /* Every field written once (no clearing first); the numbers are the
     * first DM_EVENT_FIXED_BYTES, which the ring copies as they are.
     * HighResResponseTime counts QPC ticks whatever the session's clock
     * (MS diskio-typegroup1; etw-facts.md s.3 and s.7). */
    ev->time_ns = rec->timestamp > kd->start_ts
                      ? ticks_to_ns(&kd->ts_scale, rec->timestamp - kd->start_ts)
                      : 0;
    ev->duration_ns = ticks_to_ns(&kd->hrrt_scale, d.high_res_response_time);
    ev->queue_ns = 0;
    ev->byte_offset = d.byte_offset;
    ev->irp = d.irp;
    ev->transfer_size = d.transfer_size;
    ev->disk = d.disk_number;
    ev->irp_flags = d.irp_flags;
    ev->pid = 0;
    ev->tid = 0;
    ev->flags = DM_EV_HAS_IRP_FLAGS;
    ev->request = rec->opcode == DM_DISKIO_READ    ? DM_REQ_READ
                  : rec->opcode == DM_DISKIO_WRITE ? DM_REQ_WRITE
                                                   : DM_REQ_FLUSH;
    ev->reserved = 0;
    ev->disk_name = "";
    ev->process = "";
    ev->file = "";

    /* (uint32_t)-1 is ETW's "no thread" (etw-facts.md s.2). */
    if (d.has_issuing_tid && d.issuing_tid != UINT32_MAX) {
        tid = d.issuing_tid;
        has_tid = 1;
    } else if (init != NULL && init->has_tid && init->tid != UINT32_MAX) {
        tid = init->tid;
        has_tid = 1;
    } else if (!d.has_issuing_tid && rec->tid != DM_KNO_ID &&
               rec->tid != UINT32_MAX) {
        /* Windows 7 (version 2) without its Init: the completion has no
         * IssuingThreadId field, and its own header thread is the best
         * account left (etw-facts.md s.2: a header ThreadId of -1 means
         * none, as PerfView's DiskIOTraceData.FixupData treats it). */
        tid = rec->tid;
        has_tid = 1;
    }
    if (has_tid && lookup_thread(kd, tid, rec->timestamp, &pid)) {
        has_pid = 1;
    } else if (init != NULL && init->has_pid) {
        pid = init->pid;
        has_pid = 1;
    } else if (rec->pid != DM_KNO_ID) {
        pid = rec->pid;
        has_pid = 1;
    }
    if (has_tid) {
        ev->tid = tid;
        ev->flags |= DM_EV_HAS_TID;
    }
    if (has_pid) {
        ev->pid = pid;
        ev->flags |= DM_EV_HAS_PID;
        name = lookup_process(kd, pid);
        if (name != NULL) {
            ev->process = name;
            ev->flags |= DM_EV_HAS_PROCESS;
        }
    }
    if (d.file_object != 0 &&
        (f = lookup_file(kd, d.file_object, rec->timestamp)) != NULL) {
        uint8_t mapped = f->mapped;
        int cut = f->cut;

        /* A mapping learnt after the name was stored still applies. With
         * no change to the mappings since, the name is as it would be
         * translated now. */
        if (!mapped && !cut && f->volumes_generation != kd->volumes.generation) {
            cut = dm_volumes_store_path(&kd->volumes, kd->path, DM_FILE_MAX,
                                        f->name, f->name_len, &mapped);
            ev->file = kd->path;
        } else {
            ev->file = f->name;
        }
        ev->flags |= DM_EV_HAS_FILE;
        if (cut)
            ev->flags |= DM_EV_FILE_CUT;
    }
    if (init != NULL)
        dm_kt_remove(&kd->irps, irp_slot);
    return 1;
}

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
    tick_scale_init(&kd->ts_scale, ts_freq);
    tick_scale_init(&kd->hrrt_scale, hrrt_freq);
    kd->clock = AGE_ENDED; /* every entry written is younger than that */
    kd->start_ts = start_ts;
    kd->thread_grace = ts_freq > UINT64_MAX / THREAD_GRACE_SEC
                           ? UINT64_MAX
                           : ts_freq * THREAD_GRACE_SEC;
    kd->scratch = malloc(SCRATCH_SIZE);
    if (names_init(&kd->names) < 0 ||
        dm_kt_init_growing(&kd->irps, IRP_SLOTS, IRP_MAX_SLOTS,
                           sizeof(struct irp_slot)) < 0 ||
        kd->scratch == NULL) {
        dm_kdecoder_destroy(kd);
        return NULL;
    }
    return kd;
}

void dm_kdecoder_destroy(struct dm_kdecoder *kd)
{
    if (kd == NULL)
        return;
    names_free(&kd->names);
    if (kd->rundown != NULL)
        names_free(kd->rundown);
    free(kd->rundown);
    dm_kt_free(&kd->irps);
    free(kd->scratch);
    free(kd);
}

int dm_kdecode(struct dm_kdecoder *kd, const struct dm_krecord *rec,
               struct dm_event *ev)
{
    if ((rec->pointer_size != 4 && rec->pointer_size != 8) ||
        (rec->payload == NULL && rec->payload_len > 0))
        return rec->kclass == DM_K_OTHER ? 0 : malformed(kd, PASS_FORWARD);
    /* The one class a busy disk multiplies goes first. */
    if (rec->kclass == DM_K_DISKIO)
        return on_diskio(kd, rec, ev);
    switch (rec->kclass) {
    case DM_K_THREAD:
        return on_thread(kd, &kd->names, rec, PASS_FORWARD);
    case DM_K_PROCESS:
        return on_process(kd, &kd->names, rec, PASS_FORWARD);
    case DM_K_FILEIO:
        return on_fileio(kd, &kd->names, rec, PASS_FORWARD);
    case DM_K_SYSCONFIG:
        return on_sysconfig(kd, rec, PASS_FORWARD);
    default:
        return 0;
    }
}

int dm_kdecode_rundown(struct dm_kdecoder *kd, const struct dm_krecord *rec)
{
    if (rec->kclass == DM_K_OTHER || rec->kclass == DM_K_DISKIO)
        return 0;
    if ((rec->pointer_size != 4 && rec->pointer_size != 8) ||
        (rec->payload == NULL && rec->payload_len > 0))
        return DM_ECORRUPT;
    if (kd->rundown == NULL) {
        kd->rundown = calloc(1, sizeof *kd->rundown);
        if (kd->rundown == NULL)
            return DM_ENOMEM;
        if (names_init(kd->rundown) < 0) {
            names_free(kd->rundown);
            free(kd->rundown);
            kd->rundown = NULL;
            return DM_ENOMEM;
        }
    }
    switch (rec->kclass) {
    case DM_K_THREAD:
        return on_thread(kd, kd->rundown, rec, PASS_RUNDOWN);
    case DM_K_PROCESS:
        return on_process(kd, kd->rundown, rec, PASS_RUNDOWN);
    case DM_K_FILEIO:
        return on_fileio(kd, kd->rundown, rec, PASS_RUNDOWN);
    case DM_K_SYSCONFIG:
        return on_sysconfig(kd, rec, PASS_RUNDOWN);
    default:
        return 0;
    }
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
 * Data4 as is. [etw-facts.md s.2; PerfView SysConfigTaskGuid]
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
 * HookId groups of .etl system headers (etw-facts.md s.4, [phnt]). Group
 * 0x0B (config) is deliberately absent: its opcode 35 in system headers is a
 * processor record on the win11 sample, not VolumeMapping, which comes only
 * with the SysConfig GUID.
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
    default:
        return DM_K_OTHER;
    }
}
