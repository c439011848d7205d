/*
 * gen_etl.c - writes a large synthetic .etl for the benchmark and for the
 * short check in tests/run.sh (tests/bench/run.sh drives it).
 *
 * The trace is what a Windows 8+ x64 kernel session with PROCESS, THREAD,
 * DISK_IO, DISK_IO_INIT and DISK_FILE_IO would write, laid out from
 * docs/etw.md:
 *   - buffer 0: the trace header record (SYSTEM64, HookId 0) holding a
 *     64-bit TRACE_LOGFILE_HEADER (docs/etw.md §4), BufferType HEADER;
 *   - then per-CPU buffers in the order they fill up, so the buffers of
 *     different CPUs overlap in time as in real files; records inside a CPU
 *     are in time order (docs/etw.md §4, "Ordering");
 *   - at the start, Process DCStart (PERFINFO64, v4) and Thread DCStart
 *     (SYSTEM64, v3) for the processes alive then; later Process Start and
 *     Thread Start/End (SYSTEM64) (docs/etw.md §2);
 *   - FileIo FileCreate/FileDelete (PERFINFO64, v2) naming many distinct
 *     files by NT path, and files that were open before the session which
 *     only the end-of-trace FileRundown names (PerfView applies those names
 *     backwards, so diskmon must too) (docs/etw.md §2);
 *   - DiskIo ReadInit/WriteInit/FlushInit (SYSTEM64, v3) and the completions
 *     Read/Write/FlushBuffers (PERFINFO64, v3, 64-bit layouts of docs/etw.md §3),
 *     a few requests in flight at once.
 * No SysConfig records: file names stay NT paths (\Device\HarddiskVolumeN\..).
 *
 * With --compressed every buffer but the header one is MS-XCA Plain LZ77
 * (docs/etw.md §4; [MS-XCA] 2.3/2.4) from the greedy hash-chain compressor below,
 * and LogFileMode carries EVENT_TRACE_COMPRESSED_MODE.
 *
 * The generator knows what every request is, so it prints the expected
 * result independently of diskmon: per disk and request, the count and the
 * bytes (the shape of diskmon -s), and with --expect FILE one CSV line per
 * request in completion order:
 *   time,duration,request,disk,offset,bytes,pid,tid,process,file
 * (diskmon -f csv columns 2,3,5,4,12,13,8,9,10,11).
 *
 * With --names N, processes also come and go through the trace (Process
 * End, then a Start with a new pid and a new image name, each issuing the
 * next request) until N distinct image names have done I/O: the memory
 * test of --metrics, whose state must not grow with them. --name-pool K
 * makes the same churn with only K new names, used in turn: the trace to
 * compare with, whose processes come and go alike.
 *
 * Usage: gen_etl [--ios N] [--processes N] [--threads N] [--files N]
 *                [--open N] [--cpus N] [--seed N] [--compressed] [--buffer-size N]
 *                [--names N] [--name-pool K] [--stretch K] [--expect FILE] OUT.etl
 * Defaults: 1000000 I/Os, 200 processes of 4 threads, a distinct file per
 * 10 I/Os with 512 open at a time, 4 CPUs, seed 1, 64 KiB buffers (the
 * records of a CPU fill --buffer-size bytes before the next buffer).
 * --stretch K makes every gap between records K times longer (ticks of
 * 100 ns: the default trace spans about 4 s per million requests), for
 * traces that span hours and latencies of milliseconds to seconds.
 * A test program, not part of diskmon.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout constants (docs/etw.md §2-§4) ----------------------------------- */

#define BUF_HDR 0x48u            /* WMI_BUFFER_HEADER */
#define BUF_SIZE 65536u          /* 64 KB buffers, as the samples use */
/* --buffer-size: Windows 8+ sessions take up to 16 MB buffers [MS-props]. */
#define BUF_SIZE_MAX (16u << 20)
static size_t buf_size = BUF_SIZE; /* the CPU buffers' size */
#define HEADER_BUF_COMPRESSED 512u /* header buffer of a compressed trace */
#define FLAG_FLUSH_MARKER 0x01u
#define FLAG_COMPRESSED 0x40u
#define TYPE_GENERIC 0u
#define TYPE_HEADER 4u
#define MODE_FILE_SEQUENTIAL 0x00000001u /* EVENT_TRACE_FILE_MODE_SEQUENTIAL */
#define MODE_COMPRESSED 0x04000000u      /* EVENT_TRACE_COMPRESSED_MODE */

#define HT_SYSTEM64 0x02u        /* 0x20-byte header with TID/PID */
#define HT_PERFINFO64 0x11u      /* 0x10-byte header, no TID/PID */

/* HookId = group << 8 | opcode. */
#define G_DISKIO 0x01u
#define G_PROCESS 0x03u
#define G_FILEIO 0x04u
#define G_THREAD 0x05u
#define OP_START 1u
#define OP_END 2u
#define OP_DCSTART 3u
#define OP_READ 10u
#define OP_WRITE 11u
#define OP_READ_INIT 12u
#define OP_WRITE_INIT 13u
#define OP_FLUSH 14u
#define OP_FLUSH_INIT 15u
#define OP_FILECREATE 32u
#define OP_FILEDELETE 35u
#define OP_FILERUNDOWN 36u

#define PERF_FREQ 10000000u      /* QPC ticks per second (10 MHz, as win8 sample) */
#define START_FILETIME UINT64_C(0x01DA3C0F8F000000) /* 2024-01-01 */
#define CLOCK_QPC 1u             /* ReservedFlags: clock type */
#define IRP_INFLIGHT 16u         /* requests between an Init and its completion */
#define IRP_POOL 256u            /* IRP addresses, reused (> IRP_INFLIGHT) */
#define MAX_CPUS 64u
#define NDISKS 3u

/* ---- output --------------------------------------------------------------- */

static FILE *out;
static uint64_t file_pos, buffers_written, sequence;
static int compressed;

static void die(const char *what)
{
    fprintf(stderr, "gen_etl: %s\n", what);
    exit(1);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void write_bytes(const void *p, size_t n)
{
    if (n != 0 && fwrite(p, 1, n, out) != n)
        die("write failed (disk full?)");
    file_pos += n;
}

/* ---- MS-XCA Plain LZ77 compressor ([MS-XCA] 2.3) --------------------------
 * Greedy: at each position the longest match among the last CHAIN_MAX
 * positions with the same 3-byte hash, within the 8192-byte window that the
 * 13-bit distance field allows. Flag words are reserved before the items
 * they describe and filled in when 32 items are out; the last one is padded
 * with 1 bits, which the decoder takes as the end. Long lengths use the
 * shared nibble, then a byte, then a 16-bit field holding length - 3. */

#define XCA_WINDOW 8192u
#define XCA_MIN 3u
#define XCA_MAX_LEN 65538u /* the 16-bit field's limit: 65535 + 3 */
#define HASH_BITS 14
#define CHAIN_MAX 16

struct xca {
    uint8_t *o;
    size_t len;
    size_t flag_at;  /* where the current flag word goes */
    uint32_t flags;
    unsigned nflags;
    size_t half_at;  /* byte whose high nibble the next long match uses */
    int half_open;
};

static void xca_flag(struct xca *z, unsigned bit)
{
    if (z->nflags == 32) {
        put_le(z->o + z->flag_at, z->flags, 4);
        z->flag_at = z->len;
        z->len += 4;
        z->flags = 0;
        z->nflags = 0;
    }
    z->flags = z->flags << 1 | bit;
    z->nflags++;
}

static void xca_match(struct xca *z, size_t dist, size_t len)
{
    size_t m = len - XCA_MIN;

    xca_flag(z, 1);
    if (m < 7) {
        put_le(z->o + z->len, (dist - 1) << 3 | m, 2);
        z->len += 2;
        return;
    }
    put_le(z->o + z->len, (dist - 1) << 3 | 7, 2);
    z->len += 2;
    m -= 7;
    {
        unsigned nib = m < 15 ? (unsigned)m : 15u;
        if (z->half_open) {
            z->o[z->half_at] = (uint8_t)(z->o[z->half_at] | nib << 4);
            z->half_open = 0;
        } else {
            z->half_at = z->len;
            z->o[z->len++] = (uint8_t)nib;
            z->half_open = 1;
        }
    }
    if (m < 15)
        return;
    m -= 15;
    if (m < 255) {
        z->o[z->len++] = (uint8_t)m;
        return;
    }
    z->o[z->len++] = 255;
    put_le(z->o + z->len, len - XCA_MIN, 2);
    z->len += 2;
}

/* Compress n bytes of src into dst (room for n + n/32*4 + 8 bytes: the
 * literal-only worst case); returns the compressed length. */
static size_t xca_compress(const uint8_t *src, size_t n, uint8_t *dst)
{
    static int32_t head[1u << HASH_BITS];
    static int32_t *prev;
    struct xca z = {dst, 4, 0, 0, 0, 0, 0};
    size_t i = 0;

    if (prev == NULL && (prev = malloc(buf_size * sizeof *prev)) == NULL)
        die("out of memory");
    memset(head, 0xFF, sizeof head);
    while (i < n) {
        size_t best = 0, best_dist = 0;

        if (i + XCA_MIN <= n) {
            uint32_t h = ((uint32_t)src[i] | (uint32_t)src[i + 1] << 8 |
                          (uint32_t)src[i + 2] << 16) * 2654435761u >> (32 - HASH_BITS);
            int32_t c = head[h];
            size_t limit = n - i < XCA_MAX_LEN ? n - i : XCA_MAX_LEN;

            for (int d = 0; c >= 0 && d < CHAIN_MAX; d++, c = prev[c]) {
                size_t dist = i - (size_t)c, k = 0;
                if (dist > XCA_WINDOW)
                    break;
                while (k < limit && src[(size_t)c + k] == src[i + k])
                    k++;
                if (k > best) {
                    best = k;
                    best_dist = dist;
                    if (k == limit)
                        break;
                }
            }
            prev[i] = head[h];
            head[h] = (int32_t)i;
        }
        if (best >= XCA_MIN) {
            xca_match(&z, best_dist, best);
            /* Index the positions inside the match too. */
            for (size_t j = i + 1; j < i + best && j + XCA_MIN <= n; j++) {
                uint32_t h = ((uint32_t)src[j] | (uint32_t)src[j + 1] << 8 |
                              (uint32_t)src[j + 2] << 16) * 2654435761u >> (32 - HASH_BITS);
                prev[j] = head[h];
                head[h] = (int32_t)j;
            }
            i += best;
        } else {
            xca_flag(&z, 0);
            dst[z.len++] = src[i++];
        }
    }
    /* Pad the last flag word with 1 bits; a full one gets an all-ones word
     * after it so that the stream does not end where a flag word is due
     * without saying so (the decoder accepts both; this is what [MS-XCA]
     * 2.3's compressor writes). */
    if (z.nflags == 32) {
        put_le(dst + z.flag_at, z.flags, 4);
        z.flag_at = z.len;
        z.len += 4;
        z.flags = 0;
        z.nflags = 0;
    }
    z.flags = (uint32_t)((uint64_t)z.flags << (32 - z.nflags)) |
              (uint32_t)((UINT64_C(1) << (32 - z.nflags)) - 1);
    put_le(dst + z.flag_at, z.flags, 4);
    return z.len;
}

/* ---- buffers ---------------------------------------------------------------- */

struct cpubuf {
    uint8_t *data;          /* header + records: buf_size bytes */
    size_t len;             /* filled bytes, header included */
};

static struct cpubuf *cpus;
static unsigned n_cpus;
static uint64_t stored_bytes; /* bytes of records (uncompressed) */

static void write_buffer(const uint8_t *recs, size_t filled, unsigned cpu,
                         unsigned type, unsigned flags, size_t plain_size)
{
    static uint8_t *z, *pad;
    uint8_t h[BUF_HDR];
    size_t body = filled - BUF_HDR, zlen = 0, disk;

    if (z == NULL && ((z = malloc(buf_size + buf_size / 8 + 64)) == NULL ||
                      (pad = malloc(buf_size)) == NULL))
        die("out of memory");
    if (flags & FLAG_COMPRESSED) {
        zlen = xca_compress(recs, body, z);
        disk = BUF_HDR + zlen;
    } else {
        disk = plain_size;
    }
    memset(h, 0, sizeof h);
    put_le(h + 0x00, disk, 4);                 /* BufferSize (on disk) */
    put_le(h + 0x04, filled, 4);               /* SavedOffset */
    put_le(h + 0x08, filled, 4);               /* CurrentOffset */
    put_le(h + 0x10, START_FILETIME + sequence, 8); /* TimeStamp: FILETIME */
    put_le(h + 0x18, ++sequence, 8);           /* SequenceNumber */
    h[0x28] = (uint8_t)cpu;                    /* ProcessorNumber */
    put_le(h + 0x2A, 0xFFFF, 2);               /* LoggerId: kernel logger */
    put_le(h + 0x30, filled, 4);               /* Offset: filled bytes */
    put_le(h + 0x34, flags, 2);                /* BufferFlag */
    put_le(h + 0x36, type, 2);                 /* BufferType */
    write_bytes(h, sizeof h);
    if (flags & FLAG_COMPRESSED) {
        write_bytes(z, zlen);
    } else {
        /* Unused tail: 0xFF, which reads as the end marker (docs/etw.md §4). */
        write_bytes(recs, body);
        memset(pad, 0xFF, disk - filled);
        write_bytes(pad, disk - filled);
    }
    buffers_written++;
}

static void flush_cpu(unsigned cpu)
{
    struct cpubuf *b = &cpus[cpu];

    if (b->len == BUF_HDR)
        return;
    write_buffer(b->data + BUF_HDR, b->len, cpu, TYPE_GENERIC,
                 compressed ? FLAG_COMPRESSED : 0, buf_size);
    b->len = BUF_HDR;
}

/* ---- records ----------------------------------------------------------------- */

#define HEADER_TS 1000u      /* QPC ticks: the header record, time 0 */
static uint64_t now = HEADER_TS;
static uint64_t n_records;
static uint64_t rng_state;

static uint64_t rng(void)
{
    /* xorshift64*: reproducible from --seed on every platform. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static uint64_t below(uint64_t n)
{
    return n ? rng() % n : 0;
}

/* The next record's time: strictly after the previous one, so that every
 * record has its own timestamp and the merged order is the generated one. */
static uint64_t stretch = 1;  /* --stretch K: every gap K times longer */

static uint64_t tick(void)
{
    now += (1 + below(20)) * stretch;
    return now;
}

/* Append one record to a random CPU's buffer. sys: SYSTEM64 header with
 * tid/pid, else PERFINFO64. The stride is the size rounded up to 8. */
static void record_at(uint64_t ts, int sys, unsigned group, unsigned opcode,
                      unsigned version, uint32_t tid, uint32_t pid,
                      const uint8_t *payload, size_t plen)
{
    unsigned cpu = (unsigned)below(n_cpus);
    size_t hdr = sys ? 0x20u : 0x10u, size = hdr + plen, stride = (size + 7) & ~(size_t)7;
    struct cpubuf *b = &cpus[cpu];
    uint8_t *p;

    if (b->len + stride > buf_size)
        flush_cpu(cpu);
    p = b->data + b->len;
    memset(p, 0, stride);
    put_le(p, 0xC0000000u | (sys ? HT_SYSTEM64 : HT_PERFINFO64) << 16 | version, 4);
    put_le(p + 4, size, 2);
    put_le(p + 6, group << 8 | opcode, 2);
    if (sys) {
        put_le(p + 8, tid, 4);
        put_le(p + 0x0C, pid, 4);
        put_le(p + 0x10, ts, 8);
        put_le(p + 0x18, below(1u << 20), 4); /* KernelTime */
        put_le(p + 0x1C, below(1u << 20), 4); /* UserTime */
    } else {
        put_le(p + 8, ts, 8);
    }
    memcpy(p + hdr, payload, plen);
    b->len += stride;
    stored_bytes += stride;
    n_records++;
}

static void record(int sys, unsigned group, unsigned opcode, unsigned version,
                   uint32_t tid, uint32_t pid, const uint8_t *payload, size_t plen)
{
    record_at(tick(), sys, group, opcode, version, tid, pid, payload, plen);
}

static size_t put_utf16(uint8_t *p, const char *s)
{
    size_t n = 0;

    for (; *s; s++, n += 2)
        put_le(p + n, (unsigned char)*s, 2);
    put_le(p + n, 0, 2);
    return n + 2;
}

/* ---- the simulated machine --------------------------------------------------- */

struct proc {
    uint32_t pid;
    char name[16];   /* ImageFileName: at most 14 characters and NUL */
    int alive;
    uint32_t *tids;  /* its live threads */
};

struct file {
    uint64_t object; /* FILE_OBJECT address, never reused here */
    unsigned disk;
    char name[160];
};

static struct proc *procs;
static unsigned n_procs, threads_per_proc;
static uint32_t next_tid = 1000;

/* Process_TypeGroup1 v4, x64 (docs/etw.md §2): UniqueProcessKey 0, ProcessId 8,
 * ParentId 12, SessionId 16, ExitStatus 20, DirectoryTableBase 24, Flags 32,
 * UserSID 36 (TOKEN_USER: two pointers, then a SID with 5 sub-authorities),
 * ImageFileName (ANSI), CommandLine, PackageFullName, ApplicationId (UTF-16). */
static void emit_process(struct proc *pr, unsigned opcode)
{
    uint8_t b[512];
    size_t n;

    memset(b, 0, sizeof b);
    put_le(b + 0, UINT64_C(0xFFFFA00000000000) + (uint64_t)pr->pid * 0x80, 8);
    put_le(b + 8, pr->pid, 4);
    put_le(b + 12, 4, 4);
    put_le(b + 16, 1, 4);
    put_le(b + 20, 0x103, 4);            /* STATUS_PENDING: still running */
    put_le(b + 24, UINT64_C(0x1AD000) + pr->pid, 8);
    put_le(b + 32, 0, 4);
    put_le(b + 36, UINT64_C(0xFFFFB00000001000), 8); /* TOKEN_USER.Sid */
    put_le(b + 44, 0, 8);                /* TOKEN_USER.Attributes */
    b[52] = 1;                           /* SID Revision */
    b[53] = 5;                           /* SubAuthorityCount */
    b[59] = 5;                           /* IdentifierAuthority: NT */
    put_le(b + 60, 21, 4);
    put_le(b + 64, 0x1234567, 4);
    put_le(b + 68, 0x2345678, 4);
    put_le(b + 72, 0x3456789, 4);
    put_le(b + 76, 1000 + pr->pid, 4);
    n = 80;
    memcpy(b + n, pr->name, strlen(pr->name) + 1);
    n += strlen(pr->name) + 1;
    {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "C:\\Bench\\%s --worker", pr->name);
        n += put_utf16(b + n, cmd);
    }
    n += put_utf16(b + n, "");
    n += put_utf16(b + n, "");
    if (opcode == OP_DCSTART)
        record(0, G_PROCESS, opcode, 4, 0, 0, b, n);
    else
        record(1, G_PROCESS, opcode, 4, procs[0].tids[0], procs[0].pid, b, n);
}

/* Thread_TypeGroup1 v3, x64 (docs/etw.md §2): ProcessId 0, TThreadId 4, seven
 * pointers from 8, SubProcessTag 64, priorities and flags 68-71: 72 bytes. */
static void emit_thread(uint32_t pid, uint32_t tid, unsigned opcode)
{
    uint8_t b[72];

    memset(b, 0, sizeof b);
    put_le(b + 0, pid, 4);
    put_le(b + 4, tid, 4);
    for (int i = 0; i < 7; i++)
        put_le(b + 8 + 8 * i, UINT64_C(0xFFFFF80000000000) + (uint64_t)tid * 0x1000 + (uint64_t)i * 8, 8);
    b[68] = 8;  /* BasePriority */
    b[69] = 5;  /* PagePriority */
    b[70] = 2;  /* IoPriority */
    record(1, G_THREAD, opcode, 3, tid, pid, b, sizeof b);
}

/* FileIo_Name v2, x64 (docs/etw.md §2): FileObject 0, UTF-16 NT path at 8. */
static void emit_fileio(const struct file *f, unsigned opcode)
{
    uint8_t b[8 + 2 * sizeof f->name];
    size_t n;

    put_le(b, f->object, 8);
    n = 8 + put_utf16(b + 8, f->name);
    record(0, G_FILEIO, opcode, 2, 0, 0, b, n);
}

static uint64_t next_object = UINT64_C(0xFFFFC10000000000);
static uint64_t files_named;

static void new_file(struct file *f)
{
    static const char *const dirs[] = {
        "Users\\bench\\AppData\\Local\\Temp",
        "ProgramData\\Bench\\Logs",
        "Windows\\System32\\config",
        "bench\\data\\a\\much\\deeper\\folder\\tree\\used\\for\\longer\\names",
        "db",
    };
    unsigned d = (unsigned)below(sizeof dirs / sizeof dirs[0]);

    f->object = next_object;
    next_object += 0x150;
    f->disk = (unsigned)below(NDISKS);
    snprintf(f->name, sizeof f->name, "\\Device\\HarddiskVolume%u\\%s\\f%07" PRIu64 ".dat",
             f->disk + 2, dirs[d], files_named++);
}

/* ---- expected results ------------------------------------------------------- */

static uint64_t exp_count[NDISKS][3], exp_bytes[NDISKS][3];
static FILE *expect;

static const char *const req_name[3] = {"Read", "Write", "Flush"};

struct inflight {
    uint64_t irp, offset, init_ts;
    uint32_t size, tid;
    unsigned req, disk;
    const struct proc *pr;
    const struct file *f; /* NULL: a flush */
    char fname[160];
};

/* DiskIo completion, v3 x64 (docs/etw.md §3): Read/Write: DiskNumber 0, IrpFlags 4,
 * TransferSize 8, Reserved 12, ByteOffset 16, FileObject 24, Irp 32,
 * HighResResponseTime 40, IssuingThreadId 48 (52 bytes). FlushBuffers:
 * DiskNumber 0, IrpFlags 4, HRRT 8, Irp 16, IssuingThreadId 24 (28 bytes).
 * HRRT counts QPC ticks from the Init (docs/etw.md §3): the same clock here. */
static void complete(const struct inflight *io)
{
    uint8_t b[52];
    uint64_t ts = tick();

    memset(b, 0, sizeof b);
    put_le(b + 0, io->disk, 4);
    if (io->req == 2) {
        put_le(b + 4, 0x60000u, 4);       /* I/O priority bits only */
        put_le(b + 8, ts - io->init_ts, 8);
        put_le(b + 16, io->irp, 8);
        put_le(b + 24, io->tid, 4);
        record_at(ts, 0, G_DISKIO, OP_FLUSH, 3, 0, 0, b, 28);
    } else {
        /* NOCACHE | SYNCHRONOUS_API | INPUT | READ or WRITE, priority 3 */
        put_le(b + 4, io->req == 0 ? 0x60145u : 0x60245u, 4);
        put_le(b + 8, io->size, 4);
        put_le(b + 16, io->offset, 8);
        put_le(b + 24, io->f->object, 8);
        put_le(b + 32, io->irp, 8);
        put_le(b + 40, ts - io->init_ts, 8);
        put_le(b + 48, io->tid, 4);
        record_at(ts, 0, G_DISKIO, io->req == 0 ? OP_READ : OP_WRITE, 3, 0, 0, b, 52);
    }
    exp_count[io->disk][io->req]++;
    exp_bytes[io->disk][io->req] += io->req == 2 ? 0 : io->size;
    if (expect != NULL) {
        /* Time from the header record, duration from the Init, in ns:
         * ticks of 100 ns at PERF_FREQ. */
        uint64_t t_ns = (ts - HEADER_TS) * (1000000000u / PERF_FREQ);
        uint64_t d_ns = (ts - io->init_ts) * (1000000000u / PERF_FREQ);
        fprintf(expect, "%" PRIu64 ".%09" PRIu64 ",%" PRIu64 ".%09" PRIu64 ",",
                t_ns / 1000000000u, t_ns % 1000000000u, d_ns / 1000000000u,
                d_ns % 1000000000u);
        fprintf(expect, "%s,%u,%" PRIu64 ",%u,%u,%u,%s,%s\n", req_name[io->req], io->disk,
                io->req == 2 ? 0 : io->offset, io->req == 2 ? 0u : io->size,
                io->pr->pid, io->tid, io->pr->name, io->req == 2 ? "" : io->fname);
    }
}

/* DiskIo_TypeGroup2 v3, x64 (docs/etw.md §3): Irp 0, IssuingThreadId 8. */
static void emit_init(struct inflight *io)
{
    uint8_t b[12];
    unsigned op = io->req == 0 ? OP_READ_INIT : io->req == 1 ? OP_WRITE_INIT : OP_FLUSH_INIT;

    put_le(b, io->irp, 8);
    put_le(b + 8, io->tid, 4);
    io->init_ts = tick();
    record_at(io->init_ts, 1, G_DISKIO, op, 3, io->tid, io->pr->pid, b, sizeof b);
}

/* ---- the trace header ------------------------------------------------------- */

/* Buffer 0: the header record, a 64-bit TRACE_LOGFILE_HEADER (docs/etw.md §4):
 * everything from 0x40 sits 8 bytes later than in the 32-bit layout. */
static void write_header(uint64_t end_ts)
{
    static uint8_t buf[BUF_SIZE];
    uint8_t *r = buf + BUF_HDR, *t = r + 0x20;
    size_t size = compressed ? HEADER_BUF_COMPRESSED : BUF_SIZE;
    size_t tlh_len = 0x118, rec;
    uint64_t span = (end_ts - HEADER_TS) * (10000000u / PERF_FREQ); /* FILETIME units */

    memset(buf, 0, sizeof buf);
    put_le(t + 0x00, buf_size, 4);               /* BufferSize */
    put_le(t + 0x04, 0x0501000Au, 4);            /* Version: 10.0, format 0x0501 */
    put_le(t + 0x08, 19041, 4);                  /* ProviderVersion: build */
    put_le(t + 0x0C, n_cpus, 4);                 /* NumberOfProcessors */
    put_le(t + 0x10, START_FILETIME + span, 8);  /* EndTime */
    put_le(t + 0x18, 156250, 4);                 /* TimerResolution: 15.625 ms */
    put_le(t + 0x20, MODE_FILE_SEQUENTIAL | (compressed ? MODE_COMPRESSED : 0), 4);
    put_le(t + 0x24, buffers_written + 1, 4);    /* BuffersWritten */
    put_le(t + 0x2C, 8, 4);                      /* PointerSize */
    put_le(t + 0x34, 3000, 4);                   /* CpuSpeedInMHz */
    put_le(t + 0xF8, START_FILETIME - UINT64_C(36000000000), 8); /* BootTime */
    put_le(t + 0x100, PERF_FREQ, 8);             /* PerfFreq */
    put_le(t + 0x108, START_FILETIME, 8);        /* StartTime */
    put_le(t + 0x110, CLOCK_QPC, 4);             /* ReservedFlags: clock */
    tlh_len += put_utf16(t + 0x118, "NT Kernel Logger");
    tlh_len += put_utf16(t + tlh_len, "C:\\bench.etl");
    rec = 0x20 + tlh_len;
    put_le(r, 0xC0000000u | HT_SYSTEM64 << 16 | 2, 4); /* version 2 */
    put_le(r + 4, rec, 2);
    put_le(r + 6, 0, 2);                         /* HookId 0: header */
    put_le(r + 8, 4, 4);
    put_le(r + 0x0C, 4, 4);
    put_le(r + 0x10, HEADER_TS, 8);              /* time 0 of the trace */
    rec = (rec + 7) & ~(size_t)7;
    if (fseek(out, 0, SEEK_SET) != 0)
        die("cannot seek back to the header");
    write_buffer(r, BUF_HDR + rec, 0, TYPE_HEADER, FLAG_FLUSH_MARKER, size);
}

/* ---- main ------------------------------------------------------------------- */

static uint64_t arg_u64(const char *opt, const char *v)
{
    char *end;
    unsigned long long x;

    if (v == NULL)
        die("an option needs a value");
    x = strtoull(v, &end, 10);
    if (*v == '\0' || *end != '\0') {
        fprintf(stderr, "gen_etl: %s takes a number, not '%s'\n", opt, v);
        exit(2);
    }
    return x;
}

static int in_flight_uses(const struct inflight *q, unsigned n, const struct file *f,
                          uint32_t tid)
{
    for (unsigned i = 0; i < n; i++)
        if ((f != NULL && q[i].f == f) || (tid != 0 && q[i].tid == tid))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t ios = 1000000, n_files = 0, seed = 1, open_files = 512, n_names = 0;
    uint64_t name_pool = 0;
    uint64_t renamed = 0;
    uint32_t next_pid = 1000000; /* above every pid of the fixed set */
    int favour = -1;             /* the process that issues the next request */
    const char *path = NULL, *expect_path = NULL;
    struct file *open_set;
    struct inflight q[IRP_INFLIGHT];
    unsigned qn = 0, qhead = 0, n_late, started, n_rundown_only;
    uint64_t churns, churned = 0;

    n_procs = 200;
    threads_per_proc = 4;
    n_cpus = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--ios") == 0) ios = arg_u64(a, v), i++;
        else if (strcmp(a, "--processes") == 0) n_procs = (unsigned)arg_u64(a, v), i++;
        else if (strcmp(a, "--threads") == 0) threads_per_proc = (unsigned)arg_u64(a, v), i++;
        else if (strcmp(a, "--files") == 0) n_files = arg_u64(a, v), i++;
        else if (strcmp(a, "--open") == 0) open_files = arg_u64(a, v), i++;
        else if (strcmp(a, "--cpus") == 0) n_cpus = (unsigned)arg_u64(a, v), i++;
        else if (strcmp(a, "--seed") == 0) seed = arg_u64(a, v), i++;
        else if (strcmp(a, "--expect") == 0) expect_path = v, i++;
        else if (strcmp(a, "--names") == 0) n_names = arg_u64(a, v), i++;
        else if (strcmp(a, "--name-pool") == 0) name_pool = arg_u64(a, v), i++;
        else if (strcmp(a, "--compressed") == 0) compressed = 1;
        else if (strcmp(a, "--buffer-size") == 0) buf_size = (size_t)arg_u64(a, v), i++;
        else if (strcmp(a, "--stretch") == 0) stretch = arg_u64(a, v), i++;
        else if (a[0] == '-' || path != NULL) {
            fprintf(stderr, "usage: gen_etl [--ios N] [--processes N] [--threads N] "
                            "[--files N] [--open N] [--cpus N] [--seed N] "
                            "[--compressed] [--buffer-size N] [--names N] [--name-pool K] "
                            "[--stretch K] [--expect FILE] OUT.etl\n");
            return 2;
        } else path = a;
    }
    if (stretch == 0) {
        fprintf(stderr, "gen_etl: --stretch must be at least 1\n");
        return 2;
    }
    if (n_files == 0) /* default: a new file per 10 requests */
        n_files = ios / 10 > open_files ? ios / 10 : open_files;
    /* Limits that keep every request attributable: diskmon's name tables
     * are fixed-size (4096 processes, 16384 threads, 8192 open files), so
     * the live sets stay well inside them; the distinct totals do not. */
    /* The lower limits leave more files to replace and threads to end than
     * requests in flight, which must keep theirs. */
    if (path == NULL || n_cpus < 1 || n_cpus > MAX_CPUS || n_procs < 4 ||
        n_procs > 2000 || threads_per_proc < 1 || threads_per_proc > 8 ||
        n_procs * threads_per_proc < 4 * IRP_INFLIGHT ||
        open_files < 4 * IRP_INFLIGHT || open_files > 2048 || n_files < open_files ||
        ios == 0 || buf_size < BUF_SIZE || buf_size > BUF_SIZE_MAX || buf_size % 8 != 0)
        die("need OUT.etl; 1-64 CPUs, 4-2000 processes, 1-8 threads each and "
            "at least 64 threads, 64-2048 open files, files >= open files, ios >= 1, "
            "a buffer size of 64 KiB to 16 MiB in multiples of 8");
    rng_state = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    out = fopen(path, "wb");
    if (out == NULL)
        die("cannot create the output file");
    if (expect_path != NULL && (expect = fopen(expect_path, "w")) == NULL)
        die("cannot create the --expect file");
    cpus = calloc(n_cpus, sizeof *cpus);
    procs = calloc(n_procs, sizeof *procs);
    open_set = calloc(open_files, sizeof *open_set);
    if (cpus == NULL || procs == NULL || open_set == NULL)
        die("out of memory");
    for (unsigned c = 0; c < n_cpus; c++) {
        cpus[c].len = BUF_HDR;
        if ((cpus[c].data = malloc(buf_size)) == NULL)
            die("out of memory");
    }

    /* Room for the header buffer, written last (it holds totals). */
    {
        static uint8_t zero[BUF_SIZE];
        write_bytes(zero, compressed ? HEADER_BUF_COMPRESSED : BUF_SIZE);
        buffers_written = 0;
    }

    /* Processes: a quarter start during the trace, the rest are running. */
    n_late = n_procs / 4;
    for (unsigned p = 0; p < n_procs; p++) {
        struct proc *pr = &procs[p];
        pr->pid = p == 0 ? 4 : 400 + 4 * p;
        if (p == 0)
            snprintf(pr->name, sizeof pr->name, "System");
        else
            snprintf(pr->name, sizeof pr->name, "%s%04u.exe",
                     p % 3 == 0 ? "svc" : p % 3 == 1 ? "app" : "worker", p % 10000u);
        pr->tids = calloc(threads_per_proc, sizeof *pr->tids);
        if (pr->tids == NULL)
            die("out of memory");
        for (unsigned k = 0; k < threads_per_proc; k++)
            pr->tids[k] = (next_tid += 4);
    }
    for (unsigned p = 0; p < n_procs - n_late; p++) {
        procs[p].alive = 1;
        emit_process(&procs[p], OP_DCSTART);
        for (unsigned k = 0; k < threads_per_proc; k++)
            emit_thread(procs[p].pid, procs[p].tids[k], OP_DCSTART);
    }

    /* Files: a quarter were open before the trace and are named only by the
     * FileRundown at its end; the others are created now, and replaced
     * (FileDelete, FileCreate) through the trace up to n_files names. */
    n_rundown_only = (unsigned)(open_files / 4);
    for (unsigned s = 0; s < open_files; s++) {
        new_file(&open_set[s]);
        if (s >= n_rundown_only)
            emit_fileio(&open_set[s], OP_FILECREATE);
    }
    churns = n_files - open_files;

    started = 0;
    for (uint64_t i = 0; i < ios; i++) {
        struct inflight io;
        unsigned p, r;

        while (started < n_late && i >= (started + 1) * ios / (n_late + 1)) {
            struct proc *pr = &procs[n_procs - n_late + started++];
            pr->alive = 1;
            emit_process(pr, OP_START);
            for (unsigned k = 0; k < threads_per_proc; k++)
                emit_thread(pr->pid, pr->tids[k], OP_START);
        }
        while (churned < (i + 1) * churns / ios) {
            struct file *f;
            do
                f = &open_set[n_rundown_only + below(open_files - n_rundown_only)];
            while (in_flight_uses(q, qn, f, 0));
            emit_fileio(f, OP_FILEDELETE);
            new_file(f);
            emit_fileio(f, OP_FILECREATE);
            churned++;
        }
        if (i % 997 == 996) {
            /* A thread ends and its process starts another. */
            struct proc *pr;
            unsigned k;
            do {
                pr = &procs[below(n_procs)];
                k = (unsigned)below(threads_per_proc);
            } while (!pr->alive || in_flight_uses(q, qn, NULL, pr->tids[k]));
            emit_thread(pr->pid, pr->tids[k], OP_END);
            pr->tids[k] = (next_tid += 4);
            emit_thread(pr->pid, pr->tids[k], OP_START);
        }

        /* --names: a process ends and one with a new name takes its
         * place, often enough that n_names distinct names do I/O. */
        if (n_names > n_procs && renamed < (i + 1) * (n_names - n_procs) / ios) {
            struct proc *pr = NULL;
            unsigned k, tries;
            /* One whose threads have no request in flight; when every one
             * has, the rename waits for a later request. */
            for (tries = 0; tries < 64 && pr == NULL; tries++) {
                int busy;
                p = 1 + (unsigned)below(n_procs - 1); /* never System */
                busy = !procs[p].alive;
                for (k = 0; k < threads_per_proc && !busy; k++)
                    busy = in_flight_uses(q, qn, NULL, procs[p].tids[k]);
                if (!busy)
                    pr = &procs[p];
            }
            if (pr != NULL) {
                /* 10 ms between two process ends, so 100,000 of them span
                 * about 17 minutes: a machine's churn, not a fork bomb. The
                 * decoder keeps an ended thread or process for a grace of
                 * 5 s (nt_kernel_state.h), so faster churn would show the
                 * tables holding ended threads, not what --metrics keeps. */
                now += PERF_FREQ / 100u;
                for (k = 0; k < threads_per_proc; k++)
                    emit_thread(pr->pid, pr->tids[k], OP_END);
                emit_process(pr, OP_END);
                pr->pid = (next_pid += 4);
                snprintf(pr->name, sizeof pr->name, "n%07u.exe",
                         (unsigned)(renamed % (name_pool ? name_pool : 10000000u)));
                emit_process(pr, OP_START);
                for (k = 0; k < threads_per_proc; k++) {
                    pr->tids[k] = (next_tid += 4);
                    emit_thread(pr->pid, pr->tids[k], OP_START);
                }
                favour = (int)p;
                renamed++;
            }
        }
        memset(&io, 0, sizeof io);
        if (favour >= 0) {
            p = (unsigned)favour;
            favour = -1;
        } else {
            do
                p = (unsigned)below(n_procs);
            while (!procs[p].alive);
        }
        io.pr = &procs[p];
        io.tid = procs[p].tids[below(threads_per_proc)];
        r = (unsigned)below(100);
        io.req = r < 60 ? 0 : r < 95 ? 1 : 2;
        io.irp = UINT64_C(0xFFFFD00000000000) + (i % IRP_POOL) * 0x4B0;
        if (io.req == 2) {
            io.disk = (unsigned)below(NDISKS);
        } else {
            io.f = &open_set[below(open_files)];
            io.disk = io.f->disk;
            memcpy(io.fname, io.f->name, sizeof io.fname);
            io.offset = below(UINT64_C(1) << 31) * 512;
            io.size = below(8) == 0 ? (uint32_t)(512 * (1 + below(8)))
                                    : (uint32_t)(4096 * (1 + below(64)));
        }
        emit_init(&io);
        if (qn == IRP_INFLIGHT) {
            complete(&q[qhead]);
            q[qhead] = io;
            qhead = (qhead + 1) % IRP_INFLIGHT;
        } else {
            q[qn++] = io;
        }
    }
    for (unsigned k = 0; k < qn; k++)
        complete(&q[(qhead + k) % qn]);

    /* End of session: the rundown of every file still open. */
    for (unsigned s = 0; s < open_files; s++)
        emit_fileio(&open_set[s], OP_FILERUNDOWN);

    for (unsigned c = 0; c < n_cpus; c++)
        flush_cpu(c);
    {
        uint64_t size = file_pos;
        write_header(now);
        file_pos = size;
    }
    if (fclose(out) != 0 || (expect != NULL && fclose(expect) != 0))
        die("write failed (disk full?)");

    printf("# gen_etl: %" PRIu64 " ios, %" PRIu64 " records, %" PRIu64
           " record bytes, %" PRIu64 " file bytes, %" PRIu64 " buffers, %s\n",
           ios, n_records + 1, stored_bytes, file_pos, buffers_written,
           compressed ? "compressed" : "plain");
    for (unsigned d = 0; d < NDISKS; d++)
        for (unsigned q2 = 0; q2 < 3; q2++)
            if (exp_count[d][q2] != 0)
                printf("%u %s %" PRIu64 " %" PRIu64 "\n", d, req_name[q2],
                       exp_count[d][q2], exp_bytes[d][q2]);
    for (unsigned p = 0; p < n_procs; p++)
        free(procs[p].tids);
    free(procs);
    free(open_set);
    for (unsigned c = 0; c < n_cpus; c++)
        free(cpus[c].data);
    free(cpus);
    return 0;
}
