/*
 * test_diskio.c - DiskIo payload decoding (decode/diskio.c) and kernel
 * record attribution (decode/nt_kernel.c), from hand-built payloads.
 *
 * Offsets and sizes in these payloads are written out from docs/etw.md
 * §2 and §3, not taken from the decoder; expected times are worked
 * out by hand in the comments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/diskio.h"
#include "decode/ktable.h"
#include "decode/nt_kernel_state.h"
#include "decode/nt_paths.h"
#include "decode/nt_kernel.h"
#include "diskmon.h"
#include "dmtest.h"

/* ---- payload writers ------------------------------------------------------ */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_ptr(uint8_t *p, unsigned ps, uint64_t v)
{
    if (ps == 8)
        put_u64(p, v);
    else
        put_u32(p, (uint32_t)v);
}

/* UTF-16 units, NUL included, at p; returns bytes written. */
static size_t put_wide(uint8_t *p, const uint_least16_t *s)
{
    size_t n = 0;

    do {
        put_u16(p + 2 * n, (uint16_t)s[n]);
    } while (s[n++] != 0);
    return 2 * n;
}

/* TypeGroup1 with the offsets of docs/etw.md §3 (P = ps):
 * 0 disk, 4 flags, 8 size, 12 reserved, 16 offset, 24 file object,
 * 24+P irp, 24+2P hrrt, 32+2P itid (v3). */
static size_t tg1(uint8_t *b, unsigned ps, unsigned ver, uint32_t disk,
                  uint32_t flags, uint32_t size, uint64_t offset, uint64_t fo,
                  uint64_t irp, uint64_t hrrt, uint32_t itid)
{
    size_t n = 32 + 2 * ps + (ver >= 3 ? 4 : 0);

    memset(b, 0, n);
    put_u32(b + 0, disk);
    put_u32(b + 4, flags);
    put_u32(b + 8, size);
    put_u64(b + 16, offset);
    put_ptr(b + 24, ps, fo);
    put_ptr(b + 24 + ps, ps, irp);
    put_u64(b + 24 + 2 * ps, hrrt);
    if (ver >= 3)
        put_u32(b + 32 + 2 * ps, itid);
    return n;
}

/* TypeGroup2: 0 irp, P itid (v3). */
static size_t tg2(uint8_t *b, unsigned ps, unsigned ver, uint64_t irp,
                  uint32_t itid)
{
    put_ptr(b, ps, irp);
    if (ver >= 3)
        put_u32(b + ps, itid);
    return ps + (ver >= 3 ? 4 : 0);
}

/* TypeGroup3: 0 disk, 4 flags, 8 hrrt, 16 irp, 16+P itid (v3). */
static size_t tg3(uint8_t *b, unsigned ps, unsigned ver, uint32_t disk,
                  uint32_t flags, uint64_t hrrt, uint64_t irp, uint32_t itid)
{
    put_u32(b + 0, disk);
    put_u32(b + 4, flags);
    put_u64(b + 8, hrrt);
    put_ptr(b + 16, ps, irp);
    if (ver >= 3)
        put_u32(b + 16 + ps, itid);
    return 16 + ps + (ver >= 3 ? 4 : 0);
}

/* Thread_TypeGroup1 v3: ProcessId 0, TThreadId 4; 72 bytes x64, 44 x86. */
static size_t thread_rec(uint8_t *b, unsigned ps, uint32_t pid, uint32_t tid)
{
    size_t n = ps == 8 ? 72 : 44;

    memset(b, 0, n);
    put_u32(b + 0, pid);
    put_u32(b + 4, tid);
    return n;
}

enum sid_form { SID_NULL, SID_USER };

/*
 * Process_TypeGroup1 (docs/etw.md §2). x64: key 0, pid 8, parent 12,
 * session 16, exit 20, then v2 SID 24; v3 DTB 24, SID 32; v4 Flags 32,
 * SID 36. x86: key 0, pid 4, ..., v2 SID 20; v3 SID 24; v4 SID 28.
 * SID_USER writes TOKEN_USER (2 pointers, first non-zero) and a SID with
 * n_sub sub-authorities; then the name, NUL, and a UTF-16 command line.
 */
static size_t process_rec(uint8_t *b, unsigned ps, unsigned ver, uint32_t pid,
                          enum sid_form form, unsigned n_sub, const char *name)
{
    size_t sid_off, o;

    if (ps == 8)
        sid_off = ver == 2 ? 24 : ver == 3 ? 32 : 36;
    else
        sid_off = ver == 2 ? 20 : ver == 3 ? 24 : 28;
    memset(b, 0, 512);
    put_ptr(b, ps, UINT64_C(0xfffffa830007e4c0));
    put_u32(b + ps, pid);
    put_u32(b + ps + 4, 4);          /* parent */
    put_u32(b + ps + 12, 259);       /* ExitStatus STILL_ACTIVE */
    if (form == SID_NULL) {
        o = sid_off + 4;             /* 4 zero bytes */
    } else {
        put_ptr(b + sid_off, ps, UINT64_C(0xfffff8a000123450));
        put_ptr(b + sid_off + ps, ps, 0);
        o = sid_off + 2 * ps;
        b[o] = 1;                    /* Revision */
        b[o + 1] = (uint8_t)n_sub;   /* SubAuthorityCount */
        b[o + 7] = 5;                /* IdentifierAuthority NT */
        for (unsigned i = 0; i < n_sub; i++)
            put_u32(b + o + 8 + 4 * i, 21 + i);
        o += 8 + 4 * n_sub;
    }
    memcpy(b + o, name, strlen(name) + 1);
    o += strlen(name) + 1;
    {
        static const uint_least16_t cmd[] = u"cmd /c";
        o += put_wide(b + o, cmd);
    }
    return o;
}

/* FileIo_Name: FileObject 0, UTF-16 name at P. */
static size_t fileio_rec(uint8_t *b, unsigned ps, uint64_t fo,
                         const uint_least16_t *name)
{
    put_ptr(b, ps, fo);
    return ps + put_wide(b + ps, name);
}

static struct dm_krecord krec(enum dm_kclass c, unsigned op, unsigned ver,
                              unsigned ps, uint64_t ts, uint32_t tid,
                              uint32_t pid, const uint8_t *p, size_t n)
{
    struct dm_krecord r;

    memset(&r, 0, sizeof r);
    r.kclass = c;
    r.opcode = op;
    r.version = ver;
    r.pointer_size = ps;
    r.timestamp = ts;
    r.tid = tid;
    r.pid = pid;
    r.payload = p;
    r.payload_len = n;
    return r;
}

/* ---- dm_diskio_decode ----------------------------------------------------- */

DM_TEST(tg1_x64_v3)
{
    /* Row 3 of perfview-net452-x64-win8.diskio.csv, bytes at the offsets
     * of docs/etw.md §3 x64: 52 bytes. */
    uint8_t b[52] = {0};
    struct dm_diskio d;

    put_u32(b + 0, 0);
    put_u32(b + 4, 0x20043);
    put_u32(b + 8, 4096);
    put_u32(b + 12, 1);
    put_u64(b + 16, UINT64_C(6109835264));
    put_u64(b + 24, UINT64_C(0xfffff8a0045ffc50));
    put_u64(b + 32, UINT64_C(0xfffffa830047e8f0));
    put_u64(b + 40, 9284);
    put_u32(b + 48, 44);
    DM_ASSERT_EQ_INT(dm_diskio_decode(11, 3, 8, b, sizeof b, &d), 0);
    DM_ASSERT_EQ_INT(d.opcode, 11);
    DM_ASSERT_EQ_INT(d.version, 3);
    DM_ASSERT_EQ_INT(d.has_issuing_tid, 1);
    DM_ASSERT_EQ_U64(d.disk_number, 0);
    DM_ASSERT_EQ_U64(d.irp_flags, 0x20043);
    DM_ASSERT_EQ_U64(d.transfer_size, 4096);
    DM_ASSERT_EQ_U64(d.reserved, 1);
    DM_ASSERT_EQ_U64(d.byte_offset, UINT64_C(6109835264));
    DM_ASSERT_EQ_U64(d.file_object, UINT64_C(0xfffff8a0045ffc50));
    DM_ASSERT_EQ_U64(d.irp, UINT64_C(0xfffffa830047e8f0));
    DM_ASSERT_EQ_U64(d.high_res_response_time, 9284);
    DM_ASSERT_EQ_U64(d.issuing_tid, 44);
}

DM_TEST(tg1_x86_v3)
{
    /* x86: FileObject 24, Irp 28, HRRT 32, ITID 40; 44 bytes. */
    uint8_t b[44] = {0};
    struct dm_diskio d;

    put_u32(b + 0, 2);
    put_u32(b + 4, 0x60043);
    put_u32(b + 8, 8704);
    put_u64(b + 16, UINT64_C(5412451328));
    put_u32(b + 24, 0x8a001300u);
    put_u32(b + 28, 0x83b20b80u);
    put_u64(b + 32, 31943);
    put_u32(b + 40, 1716);
    DM_ASSERT_EQ_INT(dm_diskio_decode(10, 3, 4, b, sizeof b, &d), 0);
    DM_ASSERT_EQ_U64(d.disk_number, 2);
    DM_ASSERT_EQ_U64(d.irp_flags, 0x60043);
    DM_ASSERT_EQ_U64(d.transfer_size, 8704);
    DM_ASSERT_EQ_U64(d.byte_offset, UINT64_C(5412451328));
    DM_ASSERT_EQ_U64(d.file_object, 0x8a001300u);
    DM_ASSERT_EQ_U64(d.irp, 0x83b20b80u);
    DM_ASSERT_EQ_U64(d.high_res_response_time, 31943);
    DM_ASSERT_EQ_U64(d.issuing_tid, 1716);
}

DM_TEST(tg1_v2_both_pointer_sizes)
{
    /* v2 has no IssuingThreadId: 48 bytes x64, 40 x86. */
    uint8_t b[48] = {0};
    struct dm_diskio d;

    put_u64(b + 32, UINT64_C(0xfffffa8300dbc5b0)); /* x64 Irp */
    put_u64(b + 40, 17812);                         /* x64 HRRT */
    DM_ASSERT_EQ_INT(dm_diskio_decode(11, 2, 8, b, 48, &d), 0);
    DM_ASSERT_EQ_INT(d.has_issuing_tid, 0);
    DM_ASSERT_EQ_U64(d.issuing_tid, 0);
    DM_ASSERT_EQ_U64(d.irp, UINT64_C(0xfffffa8300dbc5b0));
    DM_ASSERT_EQ_U64(d.high_res_response_time, 17812);

    memset(b, 0, sizeof b);
    put_u32(b + 28, 0x12345678u); /* x86 Irp */
    put_u64(b + 32, 777);         /* x86 HRRT */
    DM_ASSERT_EQ_INT(dm_diskio_decode(10, 2, 4, b, 40, &d), 0);
    DM_ASSERT_EQ_INT(d.has_issuing_tid, 0);
    DM_ASSERT_EQ_U64(d.irp, 0x12345678u);
    DM_ASSERT_EQ_U64(d.high_res_response_time, 777);
}

DM_TEST(tg2_all_forms)
{
    uint8_t b[12] = {0};
    struct dm_diskio d;

    put_u64(b, UINT64_C(0xfffffa8302a1dc60));
    put_u32(b + 8, 44);
    DM_ASSERT_EQ_INT(dm_diskio_decode(12, 3, 8, b, 12, &d), 0);
    DM_ASSERT_EQ_U64(d.irp, UINT64_C(0xfffffa8302a1dc60));
    DM_ASSERT_EQ_U64(d.issuing_tid, 44);
    DM_ASSERT_EQ_INT(dm_diskio_decode(13, 2, 8, b, 8, &d), 0);
    DM_ASSERT_EQ_U64(d.irp, UINT64_C(0xfffffa8302a1dc60));
    DM_ASSERT_EQ_INT(d.has_issuing_tid, 0);

    memset(b, 0, sizeof b);
    put_u32(b, 0x8302a1dcu);
    put_u32(b + 4, 412);
    DM_ASSERT_EQ_INT(dm_diskio_decode(15, 3, 4, b, 8, &d), 0);
    DM_ASSERT_EQ_U64(d.irp, 0x8302a1dcu);
    DM_ASSERT_EQ_U64(d.issuing_tid, 412);
    DM_ASSERT_EQ_INT(dm_diskio_decode(12, 2, 4, b, 4, &d), 0);
    DM_ASSERT_EQ_U64(d.irp, 0x8302a1dcu);
}

DM_TEST(tg3_all_forms)
{
    /* x64 v3: disk 0, flags 4, HRRT 8, Irp 16, ITID 24; 28 bytes. */
    uint8_t b[28] = {0};
    struct dm_diskio d;

    put_u32(b + 0, 1);
    put_u32(b + 4, 0x20000);
    put_u64(b + 8, 786839);
    put_u64(b + 16, UINT64_C(0xfffffa83017ffb80));
    put_u32(b + 24, 2012);
    DM_ASSERT_EQ_INT(dm_diskio_decode(14, 3, 8, b, 28, &d), 0);
    DM_ASSERT_EQ_U64(d.disk_number, 1);
    DM_ASSERT_EQ_U64(d.irp_flags, 0x20000);
    DM_ASSERT_EQ_U64(d.high_res_response_time, 786839);
    DM_ASSERT_EQ_U64(d.irp, UINT64_C(0xfffffa83017ffb80));
    DM_ASSERT_EQ_U64(d.issuing_tid, 2012);
    DM_ASSERT_EQ_U64(d.transfer_size, 0);
    DM_ASSERT_EQ_INT(dm_diskio_decode(14, 2, 8, b, 24, &d), 0);
    DM_ASSERT_EQ_INT(d.has_issuing_tid, 0);

    /* x86 v3: Irp 16 (4 bytes), ITID 20; 24 bytes. */
    memset(b, 0, sizeof b);
    put_u64(b + 8, 1097765);
    put_u32(b + 16, 0x83017ffbu);
    put_u32(b + 20, 96);
    DM_ASSERT_EQ_INT(dm_diskio_decode(14, 3, 4, b, 24, &d), 0);
    DM_ASSERT_EQ_U64(d.high_res_response_time, 1097765);
    DM_ASSERT_EQ_U64(d.irp, 0x83017ffbu);
    DM_ASSERT_EQ_U64(d.issuing_tid, 96);
    DM_ASSERT_EQ_INT(dm_diskio_decode(14, 2, 4, b, 20, &d), 0);
    DM_ASSERT_EQ_U64(d.irp, 0x83017ffbu);
}

DM_TEST(sizes_short_and_long)
{
    /* The sizes table of docs/etw.md §3. */
    static const struct {
        unsigned opcode, version, ps;
        size_t size;
    } t[] = {
        {10, 3, 8, 52}, {11, 3, 4, 44}, {10, 2, 8, 48}, {11, 2, 4, 40},
        {12, 3, 8, 12}, {13, 3, 4, 8},  {15, 2, 8, 8},  {12, 2, 4, 4},
        {14, 3, 8, 28}, {14, 3, 4, 24}, {14, 2, 8, 24}, {14, 2, 4, 20},
    };
    uint8_t b[128];
    struct dm_diskio d;

    memset(b, 0x5A, sizeof b);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        DM_ASSERT_EQ_INT(dm_diskio_decode(t[i].opcode, t[i].version, t[i].ps, b,
                                          t[i].size, &d), 0);
        DM_ASSERT_EQ_INT(dm_diskio_decode(t[i].opcode, t[i].version, t[i].ps, b,
                                          t[i].size - 1, &d), DM_ECORRUPT);
        /* A newer version may append fields: accepted. */
        DM_ASSERT_EQ_INT(dm_diskio_decode(t[i].opcode, t[i].version + 1, t[i].ps,
                                          b, t[i].size + 8, &d), 0);
        DM_ASSERT_EQ_INT(dm_diskio_decode(t[i].opcode, t[i].version, t[i].ps, b,
                                          t[i].size + 1, &d), 0);
    }
    DM_ASSERT_EQ_INT(dm_diskio_decode(10, 3, 8, NULL, 0, &d), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(dm_diskio_decode(16, 3, 8, b, 52, &d), DM_ENOTFOUND);
    DM_ASSERT_EQ_INT(dm_diskio_decode(9, 3, 8, b, 52, &d), DM_ENOTFOUND);
    DM_ASSERT_EQ_INT(dm_diskio_decode(10, 1, 8, b, 52, &d), DM_ECORRUPT);
    DM_ASSERT_EQ_INT(dm_diskio_decode(10, 3, 2, b, 52, &d), DM_ECORRUPT);
}

/* ---- dm_kdecode ----------------------------------------------------------- */

#define FREQ UINT64_C(10000000)      /* 10 MHz, as both samples */
#define START UINT64_C(1942608875)   /* header timestamp of the win8 sample */

/* Decodes r; an event it gives carries its names' lengths
 * (DM_EV_NAME_LENS), which must be what strlen says, or the ring would
 * cut or overrun a name: a wrong one fails the running case. */
static int feed(struct dm_kdecoder *kd, struct dm_krecord r, struct dm_event *ev)
{
    int rc = dm_kdecode(kd, &r, ev);

    if (rc == 1 &&
        (!(ev->flags & DM_EV_NAME_LENS) || ev->disk_name_len != strlen(ev->disk_name) ||
         ev->process_len != strlen(ev->process) || ev->file_len != strlen(ev->file) ||
         ev->partition_len != strlen(ev->partition) || ev->cgroup_len != strlen(ev->cgroup)))
        dmt_fail_at(__FILE__, __LINE__, "name lengths: flag %d, file %u for %zu bytes, "
                    "process %u for %zu", (ev->flags & DM_EV_NAME_LENS) != 0,
                    (unsigned)ev->file_len, strlen(ev->file), (unsigned)ev->process_len,
                    strlen(ev->process));
    return rc;
}

/* One volume mapping record: NtPath, DosPath as UTF-16. */
static size_t volume_rec(uint8_t *b, const uint_least16_t *nt,
                         const uint_least16_t *dos)
{
    size_t n = put_wide(b, nt);

    return n + put_wide(b + n, dos);
}

DM_TEST(attribution_v3_issuing_thread)
{
    /* The first Read of the win8 sample, rebuilt by hand: thread 44 of
     * process 4 "System"; ReadInit from header thread 412 of process 4 with
     * IssuingThreadId 44; Read completion at 1955368307 with
     * HighResResponseTime 258208. */
    static const uint_least16_t nt[] = u"\\Device\\HarddiskVolume2\\";
    static const uint_least16_t dos[] = u"C:\\";
    static const uint_least16_t path[] =
        u"\\Device\\HarddiskVolume2\\Users\\brianrob\\AppData\\x.log";
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, START, FREQ);
    uint8_t b[512];
    struct dm_event ev;
    size_t n;
    uint64_t counts[6];

    DM_ASSERT(kd != NULL);
    n = volume_rec(b, nt, dos);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_SYSCONFIG, 35, 0, 8, START, 0, 0, b, n), &ev), 0);
    n = thread_rec(b, 8, 4, 44);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 3, 3, 8, START + 1, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
    n = process_rec(b, 8, 4, 4, SID_NULL, 0, "System");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 3, 4, 8, START + 2, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
    n = fileio_rec(b, 8, UINT64_C(0xfffff8a0028e0140), path);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 36, 2, 8, START + 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
    n = tg2(b, 8, 3, UINT64_C(0xfffffa8302a1dc60), 44);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 3, 8, 1955110091, 412, 4, b, n), &ev), 0);
    n = tg1(b, 8, 3, 0, 0x20002, 16384, UINT64_C(849788928),
            UINT64_C(0xfffff8a0028e0140), UINT64_C(0xfffffa8302a1dc60), 258208, 44);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 1955368307, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);

    /* (1955368307 - 1942608875) = 12759432 ticks at 10 MHz = 100 ns each:
     * 1275943200 ns, PerfView's 1,275.943 ms. 258208 ticks = 25820800 ns. */
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(1275943200));
    DM_ASSERT_EQ_U64(ev.duration_ns, UINT64_C(25820800));
    DM_ASSERT_EQ_INT(ev.request, DM_REQ_READ);
    DM_ASSERT_EQ_U64(ev.byte_offset, UINT64_C(849788928));
    DM_ASSERT_EQ_U64(ev.transfer_size, 16384);
    DM_ASSERT_EQ_U64(ev.disk, 0);
    DM_ASSERT_EQ_U64(ev.irp, UINT64_C(0xfffffa8302a1dc60));
    DM_ASSERT_EQ_U64(ev.irp_flags, 0x20002);
    DM_ASSERT_EQ_U64(ev.tid, 44);
    DM_ASSERT_EQ_U64(ev.pid, 4);
    DM_ASSERT_STR_EQ(ev.process, "System");
    DM_ASSERT_STR_EQ(ev.file, "C:\\Users\\brianrob\\AppData\\x.log");
    DM_ASSERT_EQ_INT(ev.flags, DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS |
                                   DM_EV_HAS_FILE | DM_EV_HAS_IRP_FLAGS |
                                   DM_EV_HAS_PRIORITY | DM_EV_NAME_LENS);
    /* IrpFlags 0x20002: IRP_PAGING_IO (0x2), priority field (bits 17-19) 1. */
    DM_ASSERT_EQ_INT(ev.req_flags, DM_RQ_PAGING);
    DM_ASSERT_EQ_INT(ev.priority, 1);

    /* The completion consumed the IRP; a FlushBuffers on it now still
     * carries its own IssuingThreadId. */
    n = tg3(b, 8, 3, 0, 0, 786839, UINT64_C(0xfffffa8302a1dc60), 44);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 14, 3, 8, START + 10000000, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.request, DM_REQ_FLUSH);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(1000000000));  /* 10^7 ticks = 1 s */
    DM_ASSERT_EQ_U64(ev.duration_ns, UINT64_C(78683900)); /* 786839 * 100 */
    DM_ASSERT_EQ_U64(ev.tid, 44);
    DM_ASSERT_EQ_U64(ev.pid, 4);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);

    dm_kdecoder_diskio_counts(kd, counts);
    DM_ASSERT_EQ_U64(counts[0], 1); /* Read */
    DM_ASSERT_EQ_U64(counts[1], 0);
    DM_ASSERT_EQ_U64(counts[2], 1); /* ReadInit */
    DM_ASSERT_EQ_U64(counts[4], 1); /* FlushBuffers */
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 0);
    dm_kdecoder_destroy(kd);
}

DM_TEST(attribution_v2_init_header)
{
    /* Version 2 (x86): no IssuingThreadId anywhere, so the Init's header
     * thread is the issuer. The thread table wins over the Init header's
     * pid; without a thread entry, the Init header pid is used. */
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[512];
    struct dm_event ev;
    size_t n;

    DM_ASSERT(kd != NULL);
    n = thread_rec(b, 4, 144, 1716);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 2, 4, 5, 1, 1, b, n), &ev), 0);
    n = process_rec(b, 4, 2, 144, SID_USER, 1, "svchost.exe");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 1, 2, 4, 6, 1, 1, b, n), &ev), 0);

    n = tg2(b, 4, 2, 0x1000, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 2, 4, 100, 1716, 999, b, n), &ev), 0);
    n = tg2(b, 4, 2, 0x2000, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 13, 2, 4, 110, 555, 777, b, n), &ev), 0);

    n = tg1(b, 4, 2, 1, 0, 512, 4096, 0, 0x1000, 30, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 4, 130, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.tid, 1716);
    DM_ASSERT_EQ_U64(ev.pid, 144);
    DM_ASSERT_STR_EQ(ev.process, "svchost.exe");
    DM_ASSERT_EQ_U64(ev.time_ns, 13000);     /* 130 ticks * 100 ns */
    DM_ASSERT_EQ_U64(ev.duration_ns, 3000);  /* 30 ticks */
    DM_ASSERT_EQ_U64(ev.disk, 1);

    n = tg1(b, 4, 2, 1, 0, 512, 8192, 0, 0x2000, 30, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 11, 2, 4, 140, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.request, DM_REQ_WRITE);
    DM_ASSERT_EQ_U64(ev.tid, 555);
    DM_ASSERT_EQ_U64(ev.pid, 777);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_PROCESS, 0);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_PID | DM_EV_HAS_TID),
                     DM_EV_HAS_PID | DM_EV_HAS_TID);

    /* Same IRP again: its Init was consumed, nothing is known... */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 11, 2, 4, 150, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS), 0);
    /* ...unless the completion's own header has a process id. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 11, 2, 4, 160, DM_KNO_ID, 144, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS),
                     DM_EV_HAS_PID | DM_EV_HAS_PROCESS);
    DM_ASSERT_EQ_U64(ev.pid, 144);

    /* An Init stamped after the completion is for the IRP's next use. */
    n = tg2(b, 4, 2, 0x3000, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 2, 4, 500, 1716, 144, b, n), &ev), 0);
    n = tg1(b, 4, 2, 1, 0, 512, 0, 0, 0x3000, 30, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 4, 400, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_TID, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 4, 600, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.tid, 1716);

    /* Once the thread has ended and its grace (5 s) is over, the Init
     * header pid takes over. */
    n = thread_rec(b, 4, 144, 1716);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 2, 4, 700, 1716, 144, b, n), &ev), 0);
    n = tg2(b, 4, 2, 0x4000, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 2, 4, 710 + 6 * FREQ, 1716, 999, b, n), &ev), 0);
    n = tg1(b, 4, 2, 1, 0, 512, 0, 0, 0x4000, 30, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 4, 720 + 6 * FREQ, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 999);
    dm_kdecoder_destroy(kd);
}

/* Map pid to a thread, issue a v3 x64 read by it and return the event. */
static int read_by_pid(struct dm_kdecoder *kd, uint32_t pid, struct dm_event *ev)
{
    uint8_t b[128];
    size_t n = thread_rec(b, 8, pid, pid + 1);
    int rc = feed(kd, krec(DM_K_THREAD, 1, 3, 8, 1, DM_KNO_ID, DM_KNO_ID, b, n), ev);

    if (rc != 0)
        return -1000 + rc;
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, 0x9000, 1, pid + 1);
    return feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 2, DM_KNO_ID, DM_KNO_ID, b, n), ev);
}

DM_TEST(process_sid_forms)
{
    static const struct {
        unsigned ps, ver;
        enum sid_form form;
        unsigned n_sub;
        uint32_t pid;
        const char *name;
    } t[] = {
        {8, 4, SID_NULL, 0, 100, "smss.exe"},
        {8, 4, SID_USER, 5, 101, "explorer.exe"},  /* S-1-5-21-a-b-c-1001 */
        {8, 3, SID_NULL, 0, 102, "csrss.exe"},
        {8, 3, SID_USER, 1, 103, "services.exe"},  /* S-1-5-18 */
        {8, 2, SID_USER, 2, 104, "lsass.exe"},
        {4, 4, SID_USER, 5, 105, "notepad.exe"},
        {4, 3, SID_NULL, 0, 106, "winlogon.exe"},
        {4, 2, SID_USER, 1, 107, "wininit.exe"},
        {4, 2, SID_NULL, 0, 108, "dwm.exe"},
        /* Version 5 keeps the v4 prefix and appends fields. */
        {8, 5, SID_USER, 5, 109, "SearchIndexer.exe"},
    };
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[512];
    struct dm_event ev;

    DM_ASSERT(kd != NULL);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t n = process_rec(b, t[i].ps, t[i].ver, t[i].pid, t[i].form,
                               t[i].n_sub, t[i].name);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, i % 2 ? 1 : 3, t[i].ver, t[i].ps,
                                       1, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(read_by_pid(kd, t[i].pid, &ev), 1);
        DM_ASSERT_EQ_U64(ev.pid, t[i].pid);
        DM_ASSERT_STR_EQ(ev.process, t[i].name);
    }

    /* End and Defunct keep the name; a new Start for the pid replaces it. */
    {
        size_t n = process_rec(b, 8, 4, 100, SID_NULL, 0, "smss.exe");
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 2, 4, 8, 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 39, 4, 8, 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(read_by_pid(kd, 100, &ev), 1);
        DM_ASSERT_STR_EQ(ev.process, "smss.exe");
        n = process_rec(b, 8, 4, 100, SID_NULL, 0, "a.exe");
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 1, 4, 8, 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(read_by_pid(kd, 100, &ev), 1);
        DM_ASSERT_STR_EQ(ev.process, "a.exe");
    }
    /* A name longer than DM_PROCESS_MAX - 1 is cut; non-ASCII is marked. */
    {
        size_t n = process_rec(b, 8, 4, 200, SID_NULL, 0,
                               "a-very-long-process-image-name-here.exe");
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 1, 4, 8, 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(read_by_pid(kd, 200, &ev), 1);
        DM_ASSERT_STR_EQ(ev.process, "a-very-long-process-image-name-");
        n = process_rec(b, 8, 4, 201, SID_NULL, 0, "caf\xe9.exe");
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 1, 4, 8, 3, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(read_by_pid(kd, 201, &ev), 1);
        DM_ASSERT_STR_EQ(ev.process, "caf?.exe");
    }
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 0);
    dm_kdecoder_destroy(kd);
}

DM_TEST(malformed_records)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[512];
    struct dm_event ev;
    size_t n;

    DM_ASSERT(kd != NULL);
    memset(b, 0, sizeof b);
    /* Thread: fewer than 8 bytes. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 3, 3, 8, 1, 0, 0, b, 7), &ev), DM_ECORRUPT);
    /* Process v4 x64: the SID field (36..40) is cut. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 3, 4, 8, 1, 0, 0, b, 39), &ev), DM_ECORRUPT);
    /* Process: a SID that claims 255 sub-authorities runs past the end. */
    n = process_rec(b, 8, 4, 7, SID_USER, 1, "x.exe");
    b[36 + 16 + 1] = 255;
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 3, 4, 8, 1, 0, 0, b, n), &ev), DM_ECORRUPT);
    /* Process: image name without its NUL. */
    n = process_rec(b, 8, 3, 7, SID_NULL, 0, "abc");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 3, 3, 8, 1, 0, 0, b, 36 + 3), &ev), DM_ECORRUPT);
    /* FileIo: shorter than its FileObject. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 1, 0, 0, b, 7), &ev), DM_ECORRUPT);
    /* DiskIo: one byte short. */
    n = tg1(b, 8, 3, 0, 0, 0, 0, 0, 1, 1, 1);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 1, 0, 0, b, n - 1), &ev), DM_ECORRUPT);
    /* A bad pointer size. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 6, 1, 0, 0, b, n), &ev), DM_ECORRUPT);
    /* SysConfig VolumeMapping without a terminated NT path. */
    put_u16(b, 'A');
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_SYSCONFIG, 35, 0, 8, 1, 0, 0, b, 2), &ev), DM_ECORRUPT);
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 8);

    /* Not ours: other classes, other opcodes, old process versions. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_OTHER, 10, 3, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 34, 3, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 64, 2, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 36, 5, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 3, 1, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_SYSCONFIG, 33, 0, 8, 1, 0, 0, b, 1), &ev), 0);
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 8);
    dm_kdecoder_destroy(kd);
}

/* Random bytes of random lengths into every class: no crash (ASan watches),
 * and only the documented return values. */
DM_TEST(random_payloads)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(3579545, 0, 3579545);
    uint32_t seed = 12345;
    uint8_t *b = malloc(300);
    struct dm_event ev;

    DM_ASSERT(kd != NULL && b != NULL);
    for (int i = 0; i < 50000; i++) {
        size_t n;
        int rc;
        seed = seed * 1103515245u + 12345u;
        n = (seed >> 16) % 300;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            b[k] = (uint8_t)(seed >> 24);
        }
        /* Small sub-authority counts reach the name more often. */
        if (n > 38 && (i & 1))
            b[37] = (uint8_t)(i % 4);
        rc = feed(kd, krec((enum dm_kclass)(1 + i % 5), (unsigned)(i % 40),
                           (unsigned)(i % 6), i % 3 ? 8 : 4, (uint64_t)seed << 20,
                           (uint32_t)i, i % 7 ? DM_KNO_ID : 4u, b, n), &ev);
        if (rc != 0 && rc != 1 && rc != DM_ECORRUPT) {
            DM_ASSERT_EQ_INT(rc, 0);
        }
        if (rc == 1) {
            DM_ASSERT(strlen(ev.process) < DM_PROCESS_MAX);
            DM_ASSERT(strlen(ev.file) < DM_FILE_MAX);
        }
    }
    DM_ASSERT(dm_kdecoder_malformed(kd) > 0);
    free(b);
    dm_kdecoder_destroy(kd);
}

/* The Init records' own decoder (the hot path's) agrees with the general
 * one on every version, pointer size, length and content. */
DM_TEST(init_decode_matches_full)
{
    static const unsigned init_ops[3] = {DM_DISKIO_READ_INIT, DM_DISKIO_WRITE_INIT,
                                         DM_DISKIO_FLUSH_INIT};
    uint32_t seed = 99;
    uint8_t b[16];

    for (int i = 0; i < 20000; i++) {
        struct dm_diskio full, init;
        unsigned version = (unsigned)(i % 6), ps = i % 2 ? 8 : 4;
        size_t len = (size_t)(i / 6) % 17;
        int rc_full, rc_init;

        for (size_t k = 0; k < sizeof b; k++) {
            seed = seed * 1103515245u + 12345u;
            b[k] = (uint8_t)(seed >> 24);
        }
        rc_full = dm_diskio_decode(init_ops[i % 3], version, ps, b, len, &full);
        rc_init = dm_diskio_decode_init(version, ps, b, len, &init);
        DM_ASSERT_EQ_INT(rc_init, rc_full);
        if (rc_full != 0)
            continue;
        DM_ASSERT_EQ_U64(init.irp, full.irp);
        DM_ASSERT_EQ_INT(init.has_issuing_tid, full.has_issuing_tid);
        DM_ASSERT_EQ_U64(init.issuing_tid, full.issuing_tid);
    }
}

/* UTF-8 of the n units at u, one unit at a time (RFC 3629 section 3;
 * unpaired surrogates as U+FFFD): the reference for the word-at-a-time
 * paths of dm_utf16_units and dm_utf16_to_utf8. */
static size_t ref_utf8(const uint16_t *u, size_t n, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t c = u[i];

        if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && u[i + 1] >= 0xDC00 &&
            u[i + 1] <= 0xDFFF)
            c = 0x10000 + ((c - 0xD800) << 10) + (u[++i] - 0xDC00);
        else if (c >= 0xD800 && c <= 0xDFFF)
            c = 0xFFFD;
        if (c < 0x80) {
            out[o++] = (char)c;
        } else if (c < 0x800) {
            out[o++] = (char)(0xC0 | c >> 6);
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | c >> 12);
            out[o++] = (char)(0x80 | (c >> 6 & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | c >> 18);
            out[o++] = (char)(0x80 | (c >> 12 & 0x3F));
            out[o++] = (char)(0x80 | (c >> 6 & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[o] = '\0';
    return o;
}

DM_TEST(utf16_random_against_reference)
{
    static const uint16_t pool[] = {'a', 'Z', '\\', '.', 0x7F, 0x80, 0xE9,
                                    0x7FF, 0x800, 0x65E5, 0xD83D, 0xDE00, 0xDBFF,
                                    0xDC00, 0xFFFF, 0x0100, 0x8000, 0};
    uint16_t u[40];
    uint8_t b[80];
    char got[200], want[200];
    uint32_t seed = 77;

    for (int round = 0; round < 20000; round++) {
        size_t n, len, units, ref_units, k;
        int term, ref_term = 0;

        seed = seed * 1103515245u + 12345u;
        n = (seed >> 16) % 40;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            /* Mostly ASCII, as paths are, so the fast paths run. */
            u[i] = (seed >> 16) % 4 ? (uint16_t)('a' + (seed >> 20) % 26)
                                   : pool[(seed >> 20) % (sizeof pool / sizeof pool[0])];
            b[2 * i] = (uint8_t)u[i];
            b[2 * i + 1] = (uint8_t)(u[i] >> 8);
        }
        len = 2 * n - (n > 0 && (seed >> 28) % 2); /* odd lengths too */
        if (n == 0)
            len = 0;
        for (ref_units = 0; 2 * ref_units + 1 < len; ref_units++)
            if (u[ref_units] == 0) {
                ref_term = 1;
                break;
            }
        units = dm_utf16_units(b, len, &term);
        DM_ASSERT_EQ_U64(units, ref_units);
        DM_ASSERT_EQ_INT(term, ref_term);
        k = dm_utf16_to_utf8(b, n, got);
        DM_ASSERT_EQ_U64(k, ref_utf8(u, n, want));
        DM_ASSERT_STR_EQ(got, want);
    }
}

DM_TEST(utf16_names)
{
    /* "\Device\HarddiskVolume3\Donn<e-acute>es\<U+65E5><U+672C>
     *  <U+1F600>.txt" then an unpaired high surrogate.
     * UTF-8 by hand: e-acute C3 A9, U+65E5 E6 97 A5, U+672C E6 9C AC,
     * U+1F600 (D83D DE00) F0 9F 98 80, lone D800 -> U+FFFD EF BF BD. */
    static const uint_least16_t head[] =
        u"\\Device\\HarddiskVolume3\\Donn\u00e9es\\\u65e5\u672c\U0001F600.txt";
    uint_least16_t name[64];
    size_t k = 0;
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[512];
    struct dm_event ev;
    size_t n;

    DM_ASSERT(kd != NULL);
    while (head[k] != 0) {
        name[k] = head[k];
        k++;
    }
    name[k++] = 0xD800;
    name[k++] = 'z';
    name[k] = 0;
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\Device\\HarddiskVolume3", "E:"), 0);
    n = fileio_rec(b, 4, 0x8a0011e0u, name);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 4, 1, 0, 0, b, n), &ev), 0);
    n = tg1(b, 4, 3, 0, 0, 512, 0, 0x8a0011e0u, 0x77, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 4, 2, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "E:\\Donn\xc3\xa9" "es\\\xe6\x97\xa5\xe6\x9c\xac"
                              "\xf0\x9f\x98\x80.txt\xef\xbf\xbdz");
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_FILE_CUT, 0);

    /* A name that runs to the end of the record without a NUL is kept. */
    n = fileio_rec(b, 8, 0x1234, u"\\??\\C:\\pagefile.sys");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 32, 2, 8, 3, 0, 0, b, n - 2), &ev), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x1234, 0x78, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 11, 3, 8, 4, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\??\\C:\\pagefile.sys");
    dm_kdecoder_destroy(kd);
}

DM_TEST(path_cut_and_mapping)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint_least16_t name[600];
    uint8_t *b = malloc(2048);
    struct dm_event ev;
    size_t n, k = 0;
    const char *prefix = "\\Device\\HarddiskVolume9\\";

    DM_ASSERT(kd != NULL && b != NULL);
    /* 1. "\Device\HarddiskVolume9\" (24) + 300 'a' + "\end.txt" (8) = 332
     *    bytes, no mapping: the last DM_FILE_MAX - 1 = 263 bytes stay,
     *    which are 255 'a' and "\end.txt". */
    for (const char *p = prefix; *p; p++)
        name[k++] = (uint_least16_t)*p;
    for (int i = 0; i < 300; i++)
        name[k++] = 'a';
    for (const char *p = "\\end.txt"; *p; p++)
        name[k++] = (uint_least16_t)*p;
    name[k] = 0;
    n = fileio_rec(b, 8, 0x100, name);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 1, 0, 0, b, n), &ev), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x100, 0x1, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 2, 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(strlen(ev.file), 263);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_FILE | DM_EV_FILE_CUT),
                     DM_EV_HAS_FILE | DM_EV_FILE_CUT);
    DM_ASSERT_STR_EQ(ev.file + 255, "\\end.txt");
    DM_ASSERT_EQ_INT(ev.file[0], 'a');

    /* 2. 200 e-acute (400 bytes) + ".txt" = 404 bytes: dropping 141 bytes
     *    would split a character (odd offset), so 142 go: 129 e-acute
     *    (258 bytes) + ".txt" = 262 bytes remain, starting with C3. */
    k = 0;
    for (int i = 0; i < 200; i++)
        name[k++] = 0x00e9;
    for (const char *p = ".txt"; *p; p++)
        name[k++] = (uint_least16_t)*p;
    name[k] = 0;
    n = fileio_rec(b, 8, 0x200, name);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 3, 0, 0, b, n), &ev), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x200, 0x2, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 4, 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(strlen(ev.file), 262);
    DM_ASSERT_EQ_INT((unsigned char)ev.file[0], 0xC3);
    DM_ASSERT_EQ_INT((unsigned char)ev.file[1], 0xA9);
    DM_ASSERT_STR_EQ(ev.file + 258, ".txt");
    DM_ASSERT(ev.flags & DM_EV_FILE_CUT);

    /* 3. "\Device\HarddiskVolume2\" (24) + 250 'b' = 274 bytes does not fit
     *    as an NT path, but "C:\" + 250 'b' = 253 bytes does once mapped. */
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\Device\\HarddiskVolume2\\", "C:\\"), 0);
    k = 0;
    for (const char *p = "\\Device\\HarddiskVolume2\\"; *p; p++)
        name[k++] = (uint_least16_t)*p;
    for (int i = 0; i < 250; i++)
        name[k++] = 'b';
    name[k] = 0;
    n = fileio_rec(b, 8, 0x300, name);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 5, 0, 0, b, n), &ev), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x300, 0x3, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 6, 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(strlen(ev.file), 253);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_FILE_CUT, 0);
    DM_ASSERT(memcmp(ev.file, "C:\\bbb", 6) == 0);

    /* 4. A name stored before its mapping is known is mapped when used;
     *    the prefix compare ignores ASCII case and stops at a backslash. */
    n = fileio_rec(b, 8, 0x400, u"\\DEVICE\\HarddiskVolume5\\x\\y.dat");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 7, 0, 0, b, n), &ev), 0);
    n = fileio_rec(b, 8, 0x500, u"\\Device\\HarddiskVolume55\\z.dat");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 0, 2, 8, 7, 0, 0, b, n), &ev), 0);
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\Device\\HarddiskVolume5", "D:"), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x400, 0x4, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 8, 0, 0, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "D:\\x\\y.dat");
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x500, 0x5, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 9, 0, 0, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\Device\\HarddiskVolume55\\z.dat");
    /* A later change of the mapping applies to the next request too. */
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\Device\\HarddiskVolume5", "E:"), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x400, 0x7, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 9, 0, 0, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "E:\\x\\y.dat");

    /* 5. Redirector mapping as in the win8 sample: "\Device\Mup\" -> "\\". */
    n = volume_rec(b, u"\\Device\\Mup\\", u"\\\\");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_SYSCONFIG, 35, 0, 8, 9, 0, 0, b, n), &ev), 0);
    n = fileio_rec(b, 8, 0x600, u"\\Device\\Mup\\server\\share\\f.txt");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_FILEIO, 36, 2, 8, 10, 0, 0, b, n), &ev), 0);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0x600, 0x6, 1, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 11, 0, 0, b, n), &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\\\server\\share\\f.txt");

    /* add_volume's own checks. */
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "", "C:"), DM_EUSAGE);
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\", "C:"), DM_EUSAGE);
    DM_ASSERT_EQ_INT(dm_kdecoder_add_volume(kd, "\\??\\", ""), 0);
    free(b);
    dm_kdecoder_destroy(kd);
}

DM_TEST(time_arithmetic)
{
    struct dm_kdecoder *kd;
    uint8_t b[64];
    struct dm_event ev;
    size_t n = tg1(b, 8, 3, 0, 0, 512, 0, 0, 0x10, 0, 8);

    /* 10 MHz, start 0, completion at 10^13 ticks (11.6 days): 10^13 * 100 =
     * 10^15 ns. A naive ticks * 10^9 would need 10^22 > 2^64. */
    kd = dm_kdecoder_create(FREQ, 0, FREQ);
    DM_ASSERT(kd != NULL);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, UINT64_C(10000000000000), 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(1000000000000000));
    DM_ASSERT_EQ_U64(ev.duration_ns, 0);
    /* The largest tick count whose ns fit: floor((2^64 - 1) / 100) =
     * 184467440737095516 ticks = 18446744073709551600 ns; one tick more
     * saturates at 2^64 - 1. */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, UINT64_C(184467440737095516), 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(18446744073709551600));
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, UINT64_C(184467440737095517), 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_MAX);
    /* Before the start: clamped to 0. */
    dm_kdecoder_destroy(kd);
    kd = dm_kdecoder_create(FREQ, 1000, FREQ);
    DM_ASSERT(kd != NULL);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 999, 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, 0);
    dm_kdecoder_destroy(kd);

    /* ACPI PM timer, 3579545 Hz: 10^13 ticks -> floor(10^22 / 3579545) =
     * 2793651148400145 ns (10^22 / 3579545 = 2793651148400145.99...). */
    kd = dm_kdecoder_create(3579545, 0, 3579545);
    DM_ASSERT(kd != NULL);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, UINT64_C(10000000000000), 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(2793651148400145));
    dm_kdecoder_destroy(kd);

    /* A 2^40 Hz clock forces the 128-bit path: (2^40 - 1) ticks =
     * 10^9 - 10^9/2^40 ns = 999999999.9990905 -> 999999999; and
     * 2^40 + 2^39 ticks = 1.5 s = 1500000000 ns. HRRT 2^39 = 0.5 s. */
    kd = dm_kdecoder_create(UINT64_C(1) << 40, 0, UINT64_C(1) << 40);
    DM_ASSERT(kd != NULL);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, (UINT64_C(1) << 40) - 1, 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(999999999));
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, 0x10, UINT64_C(1) << 39, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, (UINT64_C(3) << 39), 0, 0, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(1500000000));
    DM_ASSERT_EQ_U64(ev.duration_ns, UINT64_C(500000000));
    dm_kdecoder_destroy(kd);

    /* perf_freq 0 is refused. */
    DM_ASSERT(dm_kdecoder_create(0, 0, FREQ) == NULL);
    DM_ASSERT(dm_kdecoder_create(FREQ, 0, 0) == NULL);
}

DM_TEST(tables_stay_bounded)
{
    /* 200000 threads through a fixed table: the newest are still there. */
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[128];
    struct dm_event ev;
    size_t n;
    uint32_t tid;

    DM_ASSERT(kd != NULL);
    for (tid = 1; tid <= 200000; tid++) {
        n = thread_rec(b, 8, tid + 7, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, 1, 0, 0, b, n), &ev), 0);
    }
    for (tid = 199900; tid <= 200000; tid++) {
        n = tg1(b, 8, 3, 0, 0, 512, 0, 0, tid, 1, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 2, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
        DM_ASSERT(ev.flags & DM_EV_HAS_PID);
        DM_ASSERT_EQ_U64(ev.pid, tid + 7);
    }
    /* 100000 Inits never completed, then one that is. */
    for (uint64_t irp = 1; irp <= 100000; irp++) {
        n = tg2(b, 8, 3, irp << 4, 5);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 3, 8, 3, 5, 6, b, n), &ev), 0);
    }
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, UINT64_C(100000) << 4, 1, 200000);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 4, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 200007); /* thread 200000, from the table */
    /* Thread 5 of the Inits is long evicted or not: either way the pid is
     * the thread table's (12) or the Init header's (6), never garbage. */
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, UINT64_C(99999) << 4, 1, 5);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 4, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT(ev.pid == 12 || ev.pid == 6);
    dm_kdecoder_destroy(kd);
}

/*
 * Thread churn: 200,000 threads start and end after 2,000 long-lived ones
 * (DCStart). Ended threads linger for their grace, but when the table is
 * full they make room first: every long-lived thread is still known.
 */
DM_TEST(ended_threads_make_room)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[128];
    struct dm_event ev;
    size_t n;
    uint32_t tid;

    DM_ASSERT(kd != NULL);
    for (tid = 1; tid <= 2000; tid++) {
        n = thread_rec(b, 8, 4, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 3, 3, 8, 1, 0, 0, b, n), &ev), 0);
    }
    for (tid = 10000; tid < 210000; tid++) {
        n = thread_rec(b, 8, tid + 7, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, 2, 0, 0, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 3, 8, 3, 0, 0, b, n), &ev), 0);
    }
    for (tid = 1; tid <= 2000; tid++) {
        n = tg1(b, 8, 3, 0, 0, 512, 0, 0, tid, 1, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 4, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
        DM_ASSERT(ev.flags & DM_EV_HAS_PID);
        DM_ASSERT_EQ_U64(ev.pid, 4);
    }
    dm_kdecoder_destroy(kd);
}

/* A v3 x64 Read of file object fo by thread itid, completed at ts. */
static int read_at(struct dm_kdecoder *kd, uint64_t ts, uint64_t fo,
                   uint64_t irp, uint32_t itid, struct dm_event *ev)
{
    uint8_t b[64];
    size_t n = tg1(b, 8, 3, 0, 0, 4096, 0, fo, irp, 100, itid);

    return feed(kd, krec(DM_K_DISKIO, 10, 3, 8, ts, DM_KNO_ID, DM_KNO_ID, b, n), ev);
}

/* The same Read, to replay's naming pass (dm_kdecode_rundown). */
static int rundown_read(struct dm_kdecoder *kd, uint64_t ts, uint64_t fo, uint64_t irp)
{
    uint8_t b[64];
    size_t n = tg1(b, 8, 3, 0, 0, 4096, 0, fo, irp, 100, 8);
    struct dm_krecord r = krec(DM_K_DISKIO, 10, 3, 8, ts, DM_KNO_ID, DM_KNO_ID, b, n);

    return dm_kdecode_rundown(kd, &r);
}

static int name_rec(struct dm_kdecoder *kd, unsigned op, uint64_t ts,
                    uint64_t fo, const uint_least16_t *name, int rundown)
{
    uint8_t b[256];
    size_t n = fileio_rec(b, 8, fo, name);
    struct dm_krecord r = krec(DM_K_FILEIO, op, 2, 8, ts, DM_KNO_ID, DM_KNO_ID, b, n);
    struct dm_event ev;

    return rundown ? dm_kdecode_rundown(kd, &r) : dm_kdecode(kd, &r, &ev);
}

/*
 * Forward naming, as live sees it: FileCreate (32), Name (0) and
 * FileRundown (36) name a file object from then on; FileDelete (35) ends
 * it, so a later object at the same address never gets the old name.
 */
DM_TEST(forward_file_names)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    struct dm_event ev;
    const uint64_t fo = UINT64_C(0xfffffa8001234560), other = fo + 0x100;

    DM_ASSERT(kd != NULL);
    DM_ASSERT_EQ_INT(read_at(kd, 5, fo, 1, 8, &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 10, fo, u"\\a.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 20, fo, 2, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\a.txt");
    DM_ASSERT(ev.flags & DM_EV_HAS_FILE);
    /* The object is freed: its address means nothing now. */
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 30, fo, u"\\a.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 40, fo, 3, 8, &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
    DM_ASSERT_STR_EQ(ev.file, "");
    /* A new object at the same address. */
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 50, fo, u"\\b.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 60, fo, 4, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\b.txt");
    /* FileRundown and Name name from then on, not before. */
    DM_ASSERT_EQ_INT(read_at(kd, 65, other, 5, 8, &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 36, 70, other, u"\\c.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 80, other, 6, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\c.txt");
    DM_ASSERT_EQ_INT(name_rec(kd, 0, 90, other, u"\\d.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 95, other, 7, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\d.txt");
    /* A FileDelete of an address never named is harmless. */
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 96, other + 0x100, u"\\e.txt", 0), 0);
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 0);
    dm_kdecoder_destroy(kd);
}

/*
 * dm_kdecode_ignores: false for exactly the opcodes Microsoft documents
 * for the events diskmon decodes (DiskIo_TypeGroup1-3: Read 10, Write 11,
 * ReadInit 12, WriteInit 13, FlushBuffers 14, FlushInit 15;
 * Thread_TypeGroup1 and Process_TypeGroup1: Start 1, End 2, DCStart 3,
 * the DCEnd 4 being rundown-only; FileIo_Name: Name 0, FileCreate 32,
 * FileDelete 35, FileRundown 36; SysConfig VolumeMapping 35), and every
 * record it ignores is one dm_kdecode returns 0 for without counting it,
 * even with a payload too short for any handler.
 */
DM_TEST(ignored_records_do_nothing)
{
    static const struct {
        enum dm_kclass c;
        unsigned ops[6];
        unsigned n;
    } handled[] = {
        {DM_K_DISKIO, {10, 11, 12, 13, 14, 15}, 6},
        {DM_K_THREAD, {1, 2, 3}, 3},
        {DM_K_PROCESS, {1, 2, 3}, 3},
        {DM_K_FILEIO, {0, 32, 35, 36}, 4},
        {DM_K_SYSCONFIG, {35}, 1},
    };
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    struct dm_event ev;
    struct dm_krecord r;
    uint8_t b[1] = {0};
    unsigned ignored = 0;

    DM_ASSERT(kd != NULL);
    for (size_t k = 0; k < sizeof handled / sizeof handled[0]; k++) {
        for (unsigned op = 0; op < 256; op++) {
            int want = 0;

            for (unsigned i = 0; i < handled[k].n; i++)
                want |= handled[k].ops[i] == op;
            r = krec(handled[k].c, op, 3, 8, 100, 1, 2, b, sizeof b);
            DM_ASSERT_EQ_INT(dm_kdecode_ignores(&r), !want);
            if (!want) {
                ignored++;
                DM_ASSERT_EQ_INT(dm_kdecode(kd, &r, &ev), 0);
            }
            /* A bad header is counted as malformed, so never ignored. */
            r.pointer_size = 2;
            DM_ASSERT_EQ_INT(dm_kdecode_ignores(&r), 0);
        }
    }
    DM_ASSERT_EQ_U64(dm_kdecoder_malformed(kd), 0);
    DM_ASSERT_EQ_U64(ignored, 5 * 256 - 17);
    r = krec(DM_K_OTHER, 10, 3, 2, 100, 1, 2, b, sizeof b);
    DM_ASSERT_EQ_INT(dm_kdecode_ignores(&r), 1);
    dm_kdecoder_destroy(kd);
}

/*
 * Replay's rundown names: the first FileDelete/FileRundown of an address
 * names its requests up to that record's time, backwards; a request of a
 * later object at the same address (whose create the trace lacks) does not
 * get it, and a later object's FileCreate names its own requests.
 */
DM_TEST(rundown_file_names_end)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    struct dm_event ev;
    const uint64_t fo = UINT64_C(0xfffffa8001234560), dir = fo + 0x200;

    DM_ASSERT(kd != NULL);
    /* The whole trace, in order, to the rundown pass first. */
    DM_ASSERT_EQ_INT(rundown_read(kd, 20, fo, 1), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 30, fo, u"\\old.txt", 1), 0);
    DM_ASSERT_EQ_INT(rundown_read(kd, 40, fo, 2), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 50, fo, u"\\new.txt", 1), 0);
    DM_ASSERT_EQ_INT(rundown_read(kd, 55, fo, 3), 0);
    DM_ASSERT_EQ_INT(rundown_read(kd, 60, dir, 4), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 61, dir, u"\\dir", 1), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 90, fo, u"\\new.txt", 1), 0);
    DM_ASSERT_EQ_INT(rundown_read(kd, 95, fo, 5), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 36, 100, dir, u"\\dir", 1), 0);
    /* Then the forward pass. */
    DM_ASSERT_EQ_INT(read_at(kd, 20, fo, 1, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\old.txt");              /* before 30 */
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 30, fo, u"\\old.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 40, fo, 2, 8, &ev), 1); /* unknown object */
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 50, fo, u"\\new.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 55, fo, 3, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\new.txt");
    /* The create's own I/O comes just before its FileCreate (the win8
     * sample does this): the rundown name covers it. */
    DM_ASSERT_EQ_INT(read_at(kd, 60, dir, 4, 8, &ev), 1);
    DM_ASSERT_STR_EQ(ev.file, "\\dir");
    DM_ASSERT_EQ_INT(name_rec(kd, 32, 61, dir, u"\\dir", 0), 0);
    DM_ASSERT_EQ_INT(name_rec(kd, 35, 90, fo, u"\\new.txt", 0), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 95, fo, 5, 8, &ev), 1); /* after both */
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
    dm_kdecoder_destroy(kd);
}

/*
 * Replay's two passes on random traces of a few file objects (names
 * created, deleted, run down, addresses reused, requests before a name,
 * timestamps with ties), against the rule written out here: a request
 * gets the forward name (the last Name/FileCreate/FileRundown of its
 * address before it, with no FileDelete since), else the name of the
 * address's first FileDelete/FileRundown in the whole trace if it
 * completed no later than that record, else none. The naming pass keeps
 * only the names some request uses (nt_kernel_need.c); this checks that
 * it kept every one of them.
 */
DM_TEST(random_rundown_names_against_model)
{
    enum { N = 400, ADDRS = 6, TRACES = 300 };
    static const uint_least16_t *const names[] = {u"\\a", u"\\b", u"\\c", u"\\d"};
    static const char *const utf8[] = {"\\a", "\\b", "\\c", "\\d"};
    struct step {
        unsigned op;  /* FileIo opcode, or 10: a Read */
        uint64_t ts;
        unsigned addr, name;
    } t[N];
    uint32_t seed = 2024;

    for (int trace = 0; trace < TRACES; trace++) {
        struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
        uint64_t ts = 1;
        struct dm_event ev;

        DM_ASSERT(kd != NULL);
        for (int i = 0; i < N; i++) {
            static const unsigned ops[] = {10, 10, 10, 10, 0, 32, 35, 36};

            seed = seed * 1103515245u + 12345u;
            t[i].op = ops[(seed >> 16) % 8];
            t[i].addr = (seed >> 8) % ADDRS;
            t[i].name = (seed >> 20) % 4;
            ts += (seed >> 24) % 3; /* ties included */
            t[i].ts = ts;
        }
        for (int i = 0; i < N; i++) {
            uint64_t fo = 0x1000 + 0x150 * (uint64_t)t[i].addr;

            if (t[i].op == 10)
                DM_ASSERT_EQ_INT(rundown_read(kd, t[i].ts, fo, (uint64_t)i), 0);
            else
                DM_ASSERT_EQ_INT(name_rec(kd, t[i].op, t[i].ts, fo, names[t[i].name], 1), 0);
        }
        for (int i = 0; i < N; i++) {
            uint64_t fo = 0x1000 + 0x150 * (uint64_t)t[i].addr;
            int want = -1, named = -1;

            if (t[i].op != 10) {
                DM_ASSERT_EQ_INT(name_rec(kd, t[i].op, t[i].ts, fo, names[t[i].name], 0), 0);
                continue;
            }
            /* The model: forward name, else the first end's name in force. */
            for (int j = 0; j < i; j++) {
                if (t[j].op == 10 || t[j].addr != t[i].addr)
                    continue;
                named = t[j].op == 35 ? -1 : (int)t[j].name;
            }
            want = named;
            for (int j = 0; j < N && want < 0; j++)
                if ((t[j].op == 35 || t[j].op == 36) && t[j].addr == t[i].addr) {
                    if (t[i].ts <= t[j].ts)
                        want = (int)t[j].name;
                    break;
                }
            DM_ASSERT_EQ_INT(read_at(kd, t[i].ts, fo, (uint64_t)i, 8, &ev), 1);
            if (want < 0) {
                DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_FILE, 0);
            } else {
                DM_ASSERT(ev.flags & DM_EV_HAS_FILE);
                DM_ASSERT_STR_EQ(ev.file, utf8[want]);
            }
        }
        dm_kdecoder_destroy(kd);
    }
}

/*
 * The naming pass's memory: 50,000 files created, read and deleted keep no
 * rundown name (every request had its FileCreate's), while each of the 10
 * files read before their FileCreate keeps its name, which those reads get.
 * Counted in the rundown file table itself (nt_kernel_state.h).
 */
DM_TEST(rundown_keeps_only_used_names)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    struct dm_event ev;
    uint64_t ts = 1;
    int pass;

    DM_ASSERT(kd != NULL);
    for (pass = 1; pass >= 0; pass--) {
        ts = 1;
        for (uint64_t i = 0; i < 50000; i++) {
            uint64_t fo = 0x10000 + 0x150 * i;
            int early = i % 5000 == 0; /* read before its create */

            if (early) {
                if (pass)
                    DM_ASSERT_EQ_INT(rundown_read(kd, ts, fo, i), 0);
                else {
                    DM_ASSERT_EQ_INT(read_at(kd, ts, fo, i, 8, &ev), 1);
                    DM_ASSERT_STR_EQ(ev.file, "\\early");
                }
                ts++;
            }
            DM_ASSERT_EQ_INT(name_rec(kd, 32, ts++, fo, early ? u"\\early" : u"\\f", pass), 0);
            if (pass)
                DM_ASSERT_EQ_INT(rundown_read(kd, ts++, fo, i), 0);
            else {
                DM_ASSERT_EQ_INT(read_at(kd, ts++, fo, i, 8, &ev), 1);
                DM_ASSERT_STR_EQ(ev.file, early ? "\\early" : "\\f");
            }
            DM_ASSERT_EQ_INT(name_rec(kd, 35, ts++, fo, early ? u"\\early" : u"\\f", pass), 0);
        }
        if (pass) {
            /* The pass's end: the last entry on probation is settled by
             * the first forward record other than DiskIo. */
            DM_ASSERT(kd->rundown != NULL);
            DM_ASSERT(kd->rundown->files.count <= 11);
        }
    }
    DM_ASSERT_EQ_U64(kd->rundown->files.count, 10);
    dm_kdecoder_destroy(kd);
}

/*
 * Thread End keeps the thread's process for 5 s of timestamp ticks; a new
 * Start of the same id replaces it at once.
 */
DM_TEST(thread_end_grace)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[128];
    struct dm_event ev;
    const uint64_t end = 1000, grace = 5 * FREQ;
    size_t n;

    DM_ASSERT(kd != NULL);
    n = thread_rec(b, 8, 500, 50);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, 10, 50, 500, b, n), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 3, 8, end, 50, 500, b, n), &ev), 0);
    /* Just after the End, and at the last tick of the grace. */
    DM_ASSERT_EQ_INT(read_at(kd, end + 1, 0, 1, 50, &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 500);
    DM_ASSERT(ev.flags & DM_EV_HAS_PID);
    DM_ASSERT_EQ_INT(read_at(kd, end + grace, 0, 2, 50, &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 500);
    /* One tick later the thread is unknown: tid, but no pid. */
    DM_ASSERT_EQ_INT(read_at(kd, end + grace + 1, 0, 3, 50, &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_PID | DM_EV_HAS_TID), DM_EV_HAS_TID);
    DM_ASSERT_EQ_U64(ev.tid, 50);

    /* Reuse within the grace: the new process at once. */
    n = thread_rec(b, 8, 700, 70);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, 2 * grace, 70, 700, b, n), &ev), 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 3, 8, 2 * grace + 10, 70, 700, b, n), &ev), 0);
    n = thread_rec(b, 8, 800, 70);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, 2 * grace + 20, 70, 800, b, n), &ev), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 2 * grace + 30, 0, 4, 70, &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 800);
    /* And the new thread does not inherit the old End. */
    DM_ASSERT_EQ_INT(read_at(kd, 4 * grace, 0, 5, 70, &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 800);

    /* An End for a thread whose Start was missed still serves its last
     * I/O during the grace. */
    n = thread_rec(b, 8, 900, 90);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 3, 8, 5 * grace, 90, 900, b, n), &ev), 0);
    DM_ASSERT_EQ_INT(read_at(kd, 5 * grace + 5, 0, 6, 90, &ev), 1);
    DM_ASSERT_EQ_U64(ev.pid, 900);
    dm_kdecoder_destroy(kd);
}

/*
 * Windows 7 (DiskIo version 2): no IssuingThreadId. When the Init was
 * missed, the completion's own header thread id names the issuer, if the
 * header has one; version 3 never falls back to it.
 */
DM_TEST(win7_header_tid_fallback)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[512]; /* process_rec writes 512 */
    struct dm_event ev;
    size_t n;

    DM_ASSERT(kd != NULL);
    n = thread_rec(b, 8, 300, 77);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 2, 8, 1, 77, 300, b, n), &ev), 0);
    n = process_rec(b, 8, 2, 300, SID_NULL, 0, "app.exe");
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_PROCESS, 1, 2, 8, 2, 77, 300, b, n), &ev), 0);
    n = tg1(b, 8, 2, 0, 0, 512, 0, 0, 0x9000, 10, 0);
    DM_ASSERT_EQ_INT(n, 48);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 8, 10, 77, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.tid, 77);
    DM_ASSERT_EQ_U64(ev.pid, 300);
    DM_ASSERT_STR_EQ(ev.process, "app.exe");
    /* -1 in the header is "no thread" (docs/etw.md §2). */
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 8, 11, UINT32_MAX, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & (DM_EV_HAS_PID | DM_EV_HAS_TID), 0);
    /* An Init still wins over the completion header. */
    n = tg2(b, 8, 2, 0x9100, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 12, 2, 8, 12, 78, 301, b, n), &ev), 0);
    n = tg1(b, 8, 2, 0, 0, 512, 0, 0, 0x9100, 10, 0);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 2, 8, 13, 77, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.tid, 78);
    DM_ASSERT_EQ_U64(ev.pid, 301);
    /* Version 3 with IssuingThreadId -1 does not use the header. */
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, 0x9200, 10, UINT32_MAX);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 10, 3, 8, 14, 77, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_INT(ev.flags & DM_EV_HAS_TID, 0);
    dm_kdecoder_destroy(kd);
}

/*
 * Two clocks: system-time timestamps (10^7 per second) for time_ns, QPC
 * ticks at another rate for HighResResponseTime.
 */
DM_TEST(two_clock_decoder)
{
    /* 3,579,545 Hz QPC: 715,909 ticks = 0.2 s exactly. */
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 1000, 3579545u);
    uint8_t b[64];
    struct dm_event ev;
    size_t n;

    DM_ASSERT(kd != NULL);
    n = tg1(b, 8, 3, 0, 0, 512, 0, 0, 0x10, 715909u, 8);
    DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_DISKIO, 11, 3, 8, 1000 + 12345678u, DM_KNO_ID, DM_KNO_ID, b, n), &ev), 1);
    DM_ASSERT_EQ_U64(ev.time_ns, UINT64_C(1234567800));
    DM_ASSERT_EQ_U64(ev.duration_ns, UINT64_C(200000000));
    dm_kdecoder_destroy(kd);
}

DM_TEST(class_lookup)
{
    /* GUIDs of docs/etw.md §2 as stored (Data1..3 little-endian). */
    static const uint8_t diskio[16] = {0xd4, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
                                       0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c};
    static const uint8_t thread[16] = {0xd1, 0xa8, 0x6f, 0x3d, 0x05, 0xfe, 0xd0, 0x11,
                                       0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c};
    static const uint8_t fileio[16] = {0x39, 0xdc, 0xcb, 0x90, 0x3e, 0x4a, 0xd1, 0x11,
                                       0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3};
    /* EventTrace header {68fdd900-4a3e-11d1-84f4-0000f80464e3}: not ours. */
    static const uint8_t header[16] = {0x00, 0xd9, 0xfd, 0x68, 0x3e, 0x4a, 0xd1, 0x11,
                                       0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3};
    /* {9b79ee91-b5fd-41c0-a243-4248e266e9d0}, bytes as in the win8 sample. */
    static const uint8_t sysconfig[16] = {0x91, 0xee, 0x79, 0x9b, 0xfd, 0xb5, 0xc0, 0x41,
                                          0xa2, 0x43, 0x42, 0x48, 0xe2, 0x66, 0xe9, 0xd0};

    DM_ASSERT_EQ_INT(dm_kclass_from_guid(diskio), DM_K_DISKIO);
    DM_ASSERT_EQ_INT(dm_kclass_from_guid(thread), DM_K_THREAD);
    DM_ASSERT_EQ_INT(dm_kclass_from_guid(fileio), DM_K_FILEIO);
    DM_ASSERT_EQ_INT(dm_kclass_from_guid(header), DM_K_OTHER);
    DM_ASSERT_EQ_INT(dm_kclass_from_guid(sysconfig), DM_K_SYSCONFIG);
    DM_ASSERT_EQ_INT(dm_kclass_from_group(1), DM_K_DISKIO);
    DM_ASSERT_EQ_INT(dm_kclass_from_group(3), DM_K_PROCESS);
    DM_ASSERT_EQ_INT(dm_kclass_from_group(4), DM_K_FILEIO);
    DM_ASSERT_EQ_INT(dm_kclass_from_group(5), DM_K_THREAD);
    /* config: its own class, of which only LogDisk (12) is decoded; its
     * opcode 35 (a processor record on the win11 sample) is not SysConfig's
     * VolumeMapping. */
    DM_ASSERT_EQ_INT(dm_kclass_from_group(0x0B), DM_K_SYSCONFIG_GROUP);
    {
        struct dm_krecord cpu = {DM_K_SYSCONFIG_GROUP, 35, 2, 8, 0, 0, 0, NULL, 0};
        struct dm_krecord logdisk = cpu;

        logdisk.opcode = DM_SYSCONFIG_LOGDISK;
        DM_ASSERT(dm_kdecode_ignores(&cpu));
        DM_ASSERT(!dm_kdecode_ignores(&logdisk));
    }
    DM_ASSERT_EQ_INT(dm_kclass_from_group(0), DM_K_OTHER);
}

/* ---- the decoder's tables (decode/ktable.h) ------------------------------- */

struct test_slot {
    struct dm_kslot k;
    uint64_t value;
};

#define KT_CAP 64u

/* n keys (from 1 up) whose home slot is home. */
static void keys_at_home(const struct dm_ktable *t, size_t home, uint64_t *keys,
                         size_t n)
{
    size_t got = 0;

    for (uint64_t key = 1; got < n; key++)
        if (dm_kt_home(t, key) == home)
            keys[got++] = key;
}

static struct test_slot *test_at(const struct dm_ktable *t, size_t s)
{
    return (struct test_slot *)dm_kt_slot(t, s);
}

/* Put key with value key * 10 at write clock age. */
static size_t put_test(struct dm_ktable *t, uint64_t key, uint64_t age)
{
    size_t s = dm_kt_put(t, key, age);

    test_at(t, s)->value = key * 10;
    return s;
}

/* Keys sharing a home take the following slots, one each; the ninth
 * replaces the oldest of the eight, in its slot. Home 60 of 64 also checks
 * that the probe wraps from the last slot to the first. */
DM_TEST(ktable_collisions_replace_oldest)
{
    struct dm_ktable t;
    uint64_t keys[DM_KT_PROBE_LEN + 2];
    size_t s;

    DM_ASSERT_EQ_INT(dm_kt_init(&t, KT_CAP, sizeof(struct test_slot)), 0);
    DM_ASSERT_EQ_INT(dm_kt_home(&t, UINT64_MAX) < KT_CAP, 1);
    keys_at_home(&t, 60, keys, DM_KT_PROBE_LEN + 2);
    for (size_t i = 0; i < DM_KT_PROBE_LEN; i++) {
        s = put_test(&t, keys[i], 2 + i);
        DM_ASSERT_EQ_U64(s, (60 + i) % KT_CAP);
        DM_ASSERT_EQ_U64(dm_kt_probe_len(&t, s), i + 1);
    }
    for (size_t i = 0; i < DM_KT_PROBE_LEN; i++) {
        s = dm_kt_find(&t, keys[i]);
        DM_ASSERT_EQ_U64(s, (60 + i) % KT_CAP);
        DM_ASSERT_EQ_U64(test_at(&t, s)->value, keys[i] * 10);
    }
    /* Putting a present key refreshes its age in place: keys[0] is now the
     * youngest, keys[1] the oldest. */
    DM_ASSERT_EQ_U64(dm_kt_put(&t, keys[0], 20), 60);
    s = put_test(&t, keys[DM_KT_PROBE_LEN], 21);
    DM_ASSERT_EQ_U64(s, 61);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, keys[1]), DM_KT_NONE);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, keys[DM_KT_PROBE_LEN]), 61);
    DM_ASSERT_EQ_U64(dm_kt_probe_len(&t, 61), 2);
    /* The next one replaces keys[2] (age 4), in slot 62. */
    DM_ASSERT_EQ_U64(put_test(&t, keys[DM_KT_PROBE_LEN + 1], 22), 62);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, keys[2]), DM_KT_NONE);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, keys[0]), 60);
    DM_ASSERT_EQ_U64(test_at(&t, 60)->value, keys[0] * 10);
    dm_kt_free(&t);
}

/* Removal moves the later keys of a cluster back, so that a lookup can
 * stop at the first free slot. Homes: A, B, C at 10 (slots 10, 11, 12);
 * D at 11 (slot 13, probe length 3); E at 14 (slot 14, at home). Removing
 * B moves C to 11 and D to 12; E stays, 13 becomes free. */
DM_TEST(ktable_remove_shifts_back)
{
    struct dm_ktable t;
    uint64_t at10[3], at11[1], at14[1];

    DM_ASSERT_EQ_INT(dm_kt_init(&t, KT_CAP, sizeof(struct test_slot)), 0);
    keys_at_home(&t, 10, at10, 3);
    keys_at_home(&t, 11, at11, 1);
    keys_at_home(&t, 14, at14, 1);
    for (size_t i = 0; i < 3; i++)
        put_test(&t, at10[i], 2 + i);
    DM_ASSERT_EQ_U64(put_test(&t, at11[0], 5), 13);
    DM_ASSERT_EQ_U64(dm_kt_probe_len(&t, 13), 3);
    DM_ASSERT_EQ_U64(put_test(&t, at14[0], 6), 14);

    dm_kt_remove(&t, dm_kt_find(&t, at10[1]));
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at10[1]), DM_KT_NONE);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at10[0]), 10);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at10[2]), 11);
    DM_ASSERT_EQ_U64(test_at(&t, 11)->value, at10[2] * 10);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at11[0]), 12);
    DM_ASSERT_EQ_U64(test_at(&t, 12)->value, at11[0] * 10);
    DM_ASSERT_EQ_U64(dm_kt_probe_len(&t, 12), 2);
    DM_ASSERT_EQ_U64(dm_kt_slot(&t, 13)->age, 0);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at14[0]), 14);

    /* Removing the last of a cluster frees just its slot; a new key of
     * home 10 then takes the first free slot after its home. */
    dm_kt_remove(&t, dm_kt_find(&t, at11[0]));
    DM_ASSERT_EQ_U64(dm_kt_slot(&t, 12)->age, 0);
    DM_ASSERT_EQ_U64(dm_kt_find(&t, at14[0]), 14);
    DM_ASSERT_EQ_U64(put_test(&t, at10[1], 7), 12);
    dm_kt_free(&t);
}

/* Random puts and removes in a small table (200 keys, 64 slots) against
 * a model: a set of keys and their ages. A put of a new key into a window
 * with no free slot drops the key of smallest age in that window, which
 * the model drops too; after every step the table holds exactly the
 * model's keys with their values, each within DM_KT_PROBE_LEN of its home
 * and with no free slot between its home and itself. */
DM_TEST(ktable_random_against_model)
{
    enum { KEYS = 200, STEPS = 20000 };
    struct dm_ktable t;
    int present[KEYS + 1] = {0};
    uint32_t rng = 12345;
    uint64_t clock = 1;
    int replaced = 0;

    DM_ASSERT_EQ_INT(dm_kt_init(&t, KT_CAP, sizeof(struct test_slot)), 0);
    for (int step = 0; step < STEPS; step++) {
        uint64_t key;
        size_t s;

        rng = rng * 1103515245u + 12345u;
        key = 1 + (rng >> 8) % KEYS;
        s = dm_kt_find(&t, key);
        if ((rng >> 4) % 3 == 0) {
            if (s != DM_KT_NONE)
                dm_kt_remove(&t, s);
            present[key] = 0;
        } else {
            if (s == DM_KT_NONE) {
                /* The model's victim: the oldest key of a full window. */
                size_t home = dm_kt_home(&t, key), victim = DM_KT_NONE;
                for (size_t i = 0; i < DM_KT_PROBE_LEN; i++) {
                    const struct dm_kslot *k = dm_kt_slot(&t, (home + i) % KT_CAP);
                    if (k->age == 0) {
                        victim = DM_KT_NONE;
                        break;
                    }
                    if (victim == DM_KT_NONE ||
                        k->age < dm_kt_slot(&t, victim)->age)
                        victim = (home + i) % KT_CAP;
                }
                if (victim != DM_KT_NONE) {
                    present[dm_kt_slot(&t, victim)->key] = 0;
                    replaced++;
                }
            }
            put_test(&t, key, ++clock);
            present[key] = 1;
        }
        for (uint64_t k = 1; k <= KEYS; k++) {
            s = dm_kt_find(&t, k);
            DM_ASSERT_EQ_INT(s != DM_KT_NONE, present[k]);
            if (s == DM_KT_NONE)
                continue;
            DM_ASSERT_EQ_U64(test_at(&t, s)->value, k * 10);
            DM_ASSERT(dm_kt_probe_len(&t, s) <= DM_KT_PROBE_LEN);
            for (size_t h = dm_kt_home(&t, k); h != s; h = (h + 1) % KT_CAP)
                DM_ASSERT(dm_kt_slot(&t, h)->age != 0);
        }
    }
    /* The mix fills the table beyond its windows: replacement happened. */
    DM_ASSERT(replaced > 0);
    dm_kt_free(&t);
}

/*
 * Addresses at a fixed stride, as objects of one size from one pool are
 * (the generated traces' FILE_OBJECTs are 0x150 apart): 384 live at a
 * time, the oldest-created of a random pick deleted and a new one created,
 * 200,000 times, in a table of 8192 slots (the decoder's file table). At a
 * load under 5% no live key may ever be dropped: a weak hash (one
 * multiplication) clustered such keys and dropped some.
 */
DM_TEST(ktable_strided_addresses_never_dropped)
{
    enum { LIVE = 384, STEPS = 200000 };
    struct dm_ktable t;
    uint64_t live[LIVE], next = UINT64_C(0xffffc10001600000), rng = 88172645463325252u;
    uint64_t dropped = 0, clock = 2;

    DM_ASSERT_EQ_INT(dm_kt_init(&t, 8192, sizeof(struct test_slot)), 0);
    for (size_t i = 0; i < LIVE; i++, next += 0x150) {
        live[i] = next;
        put_test(&t, next, clock++);
    }
    for (size_t step = 0; step < STEPS; step++, next += 0x150) {
        int had;
        size_t victim, s;

        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        victim = (size_t)(rng % LIVE);
        s = dm_kt_find(&t, live[victim]);
        if (s == DM_KT_NONE) {
            dropped++;
        } else {
            dm_kt_remove(&t, s);
        }
        dm_kt_claim(&t, next, clock++, &had);
        dropped += (uint64_t)had;
        live[victim] = next;
    }
    DM_ASSERT_EQ_U64(dropped, 0);
    dm_kt_free(&t);
}


/* "\f<i>.txt" as UTF-16, for the rundown tests; the UTF-8 spelling in
 * utf8 (an independent formatting: snprintf). */
static void numbered_name(uint_least16_t *w, char *utf8, size_t len, unsigned i)
{
    size_t k;

    snprintf(utf8, len, "\\f%u.txt", i);
    for (k = 0; utf8[k] != '\0'; k++)
        w[k] = (uint_least16_t)(unsigned char)utf8[k];
    w[k] = 0;
}

/* n files named by a start rundown (FileRundown, FILE_OBJECTs 0x150 apart
 * as one pool allocates them), then a read of each of the first `check`
 * files: how many came out with their own name. */
static size_t named_after_rundown(unsigned n, unsigned check, uint64_t *replaced)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    const uint64_t base = UINT64_C(0xffffc10001600000);
    uint_least16_t w[32];
    char want[32];
    struct dm_event ev;
    size_t named = 0;

    if (kd == NULL)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        numbered_name(w, want, sizeof want, i);
        if (name_rec(kd, 36, 10 + i, base + 0x150u * i, w, 0) != 0)
            break;
    }
    for (unsigned i = 0; i < check; i++) {
        numbered_name(w, want, sizeof want, i);
        if (read_at(kd, 10u + n + i, base + 0x150u * i, 1000u + i, 8, &ev) == 1 &&
            (ev.flags & DM_EV_HAS_FILE) && strcmp(ev.file, want) == 0)
            named++;
    }
    *replaced = dm_kdecoder_replaced(kd);
    dm_kdecoder_destroy(kd);
    return named;
}

/* The sizes the fixed table of 8,192 slots lost: 5,000 files (5.4% of I/O
 * on the first 1,000 was unnamed) and 20,000 (none named); a Windows 11
 * desktop's 26,049-file rundown (docs/etw.md §8); and 100,000. */
DM_TEST(start_rundown_names_every_file)
{
    uint64_t replaced = 1;

    DM_ASSERT_EQ_U64(named_after_rundown(5000, 1000, &replaced), 1000);
    DM_ASSERT_EQ_U64(replaced, 0);
    DM_ASSERT_EQ_U64(named_after_rundown(20000, 20000, &replaced), 20000);
    DM_ASSERT_EQ_U64(replaced, 0);
    DM_ASSERT_EQ_U64(named_after_rundown(26049, 26049, &replaced), 26049);
    DM_ASSERT_EQ_U64(replaced, 0);
    DM_ASSERT_EQ_U64(named_after_rundown(100000, 1, &replaced), 1);
    DM_ASSERT_EQ_U64(replaced, 0);
}

/* A growing table keeps 1,000,000 strided keys (the decoder's file table
 * cap and start), all findable, none replaced; past a small cap it
 * replaces, counts it, and keeps the newest. */
DM_TEST(ktable_grows_to_cap)
{
    struct dm_ktable t;
    const uint64_t base = UINT64_C(0xffffc10001600000);
    size_t missing = 0;

    DM_ASSERT_EQ_INT(dm_kt_init_growing(&t, 8192, (size_t)1 << 21,
                                        sizeof(struct test_slot)), 0);
    for (uint64_t i = 0; i < 1000000; i++)
        put_test(&t, base + 0x150u * i, i + 2);
    for (uint64_t i = 0; i < 1000000; i++) {
        size_t s = dm_kt_find(&t, base + 0x150u * i);

        missing += s == DM_KT_NONE || test_at(&t, s)->k.age != i + 2;
    }
    DM_ASSERT_EQ_U64(missing, 0);
    DM_ASSERT_EQ_U64(t.replaced, 0);
    DM_ASSERT_EQ_U64(t.count, 1000000);
    DM_ASSERT(t.mask + 1 <= ((size_t)1 << 21));
    dm_kt_free(&t);

    DM_ASSERT_EQ_INT(dm_kt_init_growing(&t, 32, 256, sizeof(struct test_slot)), 0);
    for (uint64_t i = 0; i < 1000; i++)
        put_test(&t, base + 0x150u * i, i + 2);
    DM_ASSERT_EQ_U64(t.mask + 1, 256);
    DM_ASSERT(t.replaced > 0);
    DM_ASSERT(t.count <= 256);
    DM_ASSERT(dm_kt_find(&t, base + 0x150u * 999) != DM_KT_NONE);
    dm_kt_free(&t);
}

/* Keep spares whose key is at least *ctx (a stand-in for "ended within
 * the grace"). */
static int keep_from(const void *slot, const void *ctx)
{
    return ((const struct dm_kslot *)slot)->key >= *(const uint64_t *)ctx;
}

/*
 * Ended entries make room before a table grows (ktable.h, dm_kt_sweep):
 * 1,000,000 keys that each end right after they are written, beside 1,000
 * that stay live, keep the table at a few thousand slots, where without the
 * sweep it doubled to its cap and replaced entries there. No live key and
 * no spare the hook keeps is ever dropped.
 */
DM_TEST(ktable_sweep_drops_ended_keeps_live)
{
    struct dm_ktable t;
    const uint64_t base = UINT64_C(0xffffc10001600000);
    uint64_t keep_min = 0, age = 2;
    size_t missing = 0;

    DM_ASSERT_EQ_INT(dm_kt_init_growing(&t, 64, (size_t)1 << 20,
                                        sizeof(struct test_slot)), 0);
    t.spare_age = 1;
    t.keep_spare = keep_from;
    t.keep_ctx = &keep_min;
    for (uint64_t i = 0; i < 1000000; i++) {
        if (i % 1000 == 0) /* a live key: never marked */
            put_test(&t, base + 0x150u * (i / 1000), age++);
        /* ended keys, kept while within the last 500 written */
        keep_min = i > 500 ? i - 500 : 0;
        dm_kt_mark_spare(&t, put_test(&t, i, age++));
        DM_ASSERT(t.count <= (t.mask + 1) / 2 + 1);
    }
    for (uint64_t i = 0; i < 1000; i++)
        missing += dm_kt_find(&t, base + 0x150u * i) == DM_KT_NONE;
    for (uint64_t i = 1000000 - 500; i < 1000000; i++)
        missing += dm_kt_find(&t, i) == DM_KT_NONE;
    DM_ASSERT_EQ_U64(missing, 0);
    DM_ASSERT_EQ_U64(t.replaced, 0);
    DM_ASSERT(t.mask + 1 <= 8192);
    DM_ASSERT(t.spares < t.count);
    dm_kt_free(&t);
}

/* The decoder: 1,200,000 threads start and end 1 ms apart, 5,000 inside
 * the 5 s grace at any time, more than the thread table's cap of 1,048,576
 * slots. The sweeps (ktable.h) drop only threads past their grace: every
 * one of the last 4,000 threads, ended up to 4 s before, still gets its
 * process, and no live entry was replaced. */
DM_TEST(thread_churn_swept_not_replaced)
{
    struct dm_kdecoder *kd = dm_kdecoder_create(FREQ, 0, FREQ);
    uint8_t b[128];
    struct dm_event ev;
    const uint64_t ms = FREQ / 1000;
    const uint32_t n_threads = 1200000;
    uint64_t ts = 10;
    size_t n;

    DM_ASSERT(kd != NULL);
    for (uint32_t i = 0; i < n_threads; i++) {
        uint32_t tid = 8 + 4 * i, pid = 1000 + (i % 50) * 4;

        n = thread_rec(b, 8, pid, tid);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 1, 3, 8, ts, tid, pid, b, n), &ev), 0);
        DM_ASSERT_EQ_INT(feed(kd, krec(DM_K_THREAD, 2, 3, 8, ts + 1, tid, pid, b, n), &ev), 0);
        ts += ms;
    }
    DM_ASSERT_EQ_U64(dm_kdecoder_replaced(kd), 0);
    for (uint32_t i = n_threads - 4000; i < n_threads; i++) {
        DM_ASSERT_EQ_INT(read_at(kd, ts, 0, i, 8 + 4 * i, &ev), 1);
        DM_ASSERT_EQ_U64(ev.pid, 1000 + (i % 50) * 4);
    }
    dm_kdecoder_destroy(kd);
}

const struct dmt_case dm_suite_diskio[] = {
    {"ktable_strided_addresses_never_dropped", ktable_strided_addresses_never_dropped},
    {"tg1_x64_v3", tg1_x64_v3},
    {"tg1_x86_v3", tg1_x86_v3},
    {"tg1_v2_both_pointer_sizes", tg1_v2_both_pointer_sizes},
    {"tg2_all_forms", tg2_all_forms},
    {"tg3_all_forms", tg3_all_forms},
    {"sizes_short_and_long", sizes_short_and_long},
    {"attribution_v3_issuing_thread", attribution_v3_issuing_thread},
    {"attribution_v2_init_header", attribution_v2_init_header},
    {"process_sid_forms", process_sid_forms},
    {"malformed_records", malformed_records},
    {"random_payloads", random_payloads},
    {"init_decode_matches_full", init_decode_matches_full},
    {"utf16_names", utf16_names},
    {"utf16_random_against_reference", utf16_random_against_reference},
    {"path_cut_and_mapping", path_cut_and_mapping},
    {"time_arithmetic", time_arithmetic},
    {"tables_stay_bounded", tables_stay_bounded},
    {"ended_threads_make_room", ended_threads_make_room},
    {"start_rundown_names_every_file", start_rundown_names_every_file},
    {"ktable_grows_to_cap", ktable_grows_to_cap},
    {"ktable_sweep_drops_ended_keeps_live", ktable_sweep_drops_ended_keeps_live},
    {"thread_churn_swept_not_replaced", thread_churn_swept_not_replaced},
    {"forward_file_names", forward_file_names},
    {"rundown_file_names_end", rundown_file_names_end},
    {"ignored_records_do_nothing", ignored_records_do_nothing},
    {"random_rundown_names_against_model", random_rundown_names_against_model},
    {"rundown_keeps_only_used_names", rundown_keeps_only_used_names},
    {"thread_end_grace", thread_end_grace},
    {"win7_header_tid_fallback", win7_header_tid_fallback},
    {"two_clock_decoder", two_clock_decoder},
    {"class_lookup", class_lookup},
    {"ktable_collisions_replace_oldest", ktable_collisions_replace_oldest},
    {"ktable_remove_shifts_back", ktable_remove_shifts_back},
    {"ktable_random_against_model", ktable_random_against_model},
    {NULL, NULL},
};
