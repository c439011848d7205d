/*
 * nt_kernel_process.c - the Thread and Process records (nt_kernel.h): which
 * process a thread belongs to, and a process's image name, for attributing
 * DiskIo completions (nt_kernel_diskio.c), which name neither.
 */
#include "base/bytes.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"

/* Opcodes of the Thread and Process classes (docs/etw.md §2). */
#define THREAD_START 1
#define THREAD_END 2
#define THREAD_DCSTART 3
#define THREAD_DCEND 4
#define PROCESS_START 1
#define PROCESS_END 2
#define PROCESS_DCSTART 3
#define PROCESS_DCEND 4

/*
 * Thread_TypeGroup1: ProcessId 0, TThreadId 4 from version 1 on; version 0
 * had them the other way round (PerfView ThreadTraceData comments).
 * Forward: Start/DCStart add (replacing an ended entry of a reused id at
 * once), End only marks the entry ended: it serves the thread's last I/O
 * for THREAD_GRACE_SEC more, then a sweep may drop it (ktable.h).
 * Rundown: End/DCEnd add.
 * [docs/etw.md §2 and §7; MS thread-typegroup1]
 */
int dm_kdecoder__on_thread(struct dm_kdecoder *kd, struct names *nm,
                           const struct dm_krecord *rec, enum pass pass)
{
    unsigned op = rec->opcode;
    uint32_t pid, tid;
    struct thread_slot *t;
    size_t s;

    if (pass == PASS_FORWARD ? op != THREAD_START && op != THREAD_DCSTART &&
                                   op != THREAD_END
                             : op != THREAD_END && op != THREAD_DCEND)
        return 0;
    if (rec->payload_len < 8)
        return malformed(kd, pass);
    pid = dm_le32(rec->payload + (rec->version >= 1 ? 0 : 4));
    tid = dm_le32(rec->payload + (rec->version >= 1 ? 4 : 0));
    kd->naming_ts = rec->timestamp;
    s = dm_kt_put(&nm->threads, tid, ++kd->clock);
    t = thread_at(&nm->threads, s);
    t->pid = pid;
    t->end = THREAD_ALIVE;
    if (pass == PASS_FORWARD && op == THREAD_END) {
        t->end = rec->timestamp;
        /* Oldest possible age: an ended thread makes room before any live
         * one (ktable.h). */
        dm_kt_mark_spare(&nm->threads, s);
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
 * [docs/etw.md §2; MS process-typegroup1; PerfView ProcessTraceData, SkipSID]
 */
int dm_kdecoder__on_process(struct dm_kdecoder *kd, struct names *nm,
                            const struct dm_krecord *rec, enum pass pass)
{
    const uint8_t *b = rec->payload;
    size_t len = rec->payload_len, ps = rec->pointer_size;
    size_t sid_off, name_off, end, n;
    uint32_t pid;
    char *dst;

    struct process_slot *p;
    size_t s;

    if (pass == PASS_FORWARD && rec->opcode == PROCESS_END) {
        /* The name stays for the process's last completions; the entry is
         * marked ended so that, once its grace is over, a sweep may drop
         * it (ktable.h). DCEnd and Defunct leave it as it is. */
        if (rec->version < 2 || len < ps + 4)
            return 0; /* as Start: pre-Vista layouts are not decoded */
        s = dm_kt_find(&nm->processes, dm_le32(b + ps));
        if (s != DM_KT_NONE) {
            process_at(&nm->processes, s)->end = rec->timestamp;
            dm_kt_mark_spare(&nm->processes, s);
        }
        return 0;
    }
    if (pass == PASS_FORWARD ? rec->opcode != PROCESS_START &&
                                   rec->opcode != PROCESS_DCSTART
                             : rec->opcode != PROCESS_END &&
                                   rec->opcode != PROCESS_DCEND)
        return 0;       /* forward: DCEnd and Defunct keep the name */
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

    kd->naming_ts = rec->timestamp;
    p = process_at(&nm->processes, dm_kt_put(&nm->processes, pid, ++kd->clock));
    p->end = THREAD_ALIVE;
    dst = p->name;
    n = 0;
    for (; n < DM_PROCESS_MAX - 1 && name_off + n < end; n++) {
        unsigned char c = b[name_off + n];
        /* The name is in the system's 8-bit code page, which we cannot
         * convert portably: keep ASCII, mark the rest. Control bytes are
         * kept too: each output shows them its own way (text as \x1b,
         * json escaped, csv quoted; output/escape.h), as for file names. */
        dst[n] = c < 0x80 ? (char)c : '?';
    }
    dst[n] = '\0';
    p->name_len = (uint8_t)n;
    return 0;
}
