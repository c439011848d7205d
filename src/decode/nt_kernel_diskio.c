/*
 * nt_kernel_diskio.c - DiskIo records (nt_kernel.h): an Init remembers its
 * IRP; a completion becomes a dm_event, attributed to a thread, process and
 * file from the tables the other records fill (nt_kernel_process.c,
 * nt_kernel_file.c), with its times turned into nanoseconds. This is the
 * decoder's hot path: half of a busy trace's records are DiskIo, and
 * dm_kdecode hands them here first.
 */
#include "base/bytes.h"
#include "decode/diskio.h"
#include "decode/ktable.h"
#include "decode/nt_kernel.h"
#include "decode/nt_kernel_state.h"
#include "decode/nt_paths.h"

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

/* ticks * NS_PER_SEC / freq, rounded down, saturating: the same result as
 * mul_div_u64, by one multiplication when the rate allows. */
static uint64_t ticks_to_ns(const struct tick_scale *sc, uint64_t ticks)
{
    if (sc->ns_per_tick != 0)
        return ticks > sc->max_ticks ? UINT64_MAX : ticks * sc->ns_per_tick;
    return mul_div_u64(ticks, NS_PER_SEC, sc->freq);
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
static const struct process_slot *lookup_process(const struct dm_kdecoder *kd,
                                                 uint32_t pid)
{
    const struct names *nm[2] = {&kd->names, kd->rundown};

    for (int i = 0; i < 2 && nm[i] != NULL; i++) {
        size_t s = dm_kt_find(&nm[i]->processes, pid);
        if (s != DM_KT_NONE) {
            const struct process_slot *p = process_at(&nm[i]->processes, s);
            if (p->name_len != 0)
                return p;
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

/* DiskIo Inits remember the IRP. Half of all DiskIo records: a function
 * of their own, without the completion path's stack frame (the pointer
 * size was checked by dm_kdecode). */
int dm_kdecoder__on_diskio_init(struct dm_kdecoder *kd, const struct dm_krecord *rec)
{
    struct dm_diskio d;
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

/*
 * DiskIo: Init events remember the IRP; completions become a dm_event.
 * Attribution, in order of trust:
 *   tid  IssuingThreadId of the completion (version 3), else the tid the
 *        IRP's Init event recorded (its IssuingThreadId, or for version 2
 *        its header thread id);
 *   pid  the thread table for that tid, else the Init header's process id,
 *        else the completion's own header process id, if it has one.
 */
int dm_kdecoder__on_diskio(struct dm_kdecoder *kd, const struct dm_krecord *rec,
                           struct dm_event *ev)
{
    struct dm_diskio d;
    const struct irp_slot *init = NULL;
    const struct file_slot *f;
    const struct process_slot *proc;
    int rc, has_tid = 0, has_pid = 0;
    uint32_t tid = 0, pid = 0;
    size_t irp_slot;

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
     * (MS diskio-typegroup1; docs/etw.md §3 and §7). */
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
    /* Each name's length is set with the name (DM_EV_NAME_LENS): the ring
     * then measures none. */
    ev->flags = DM_EV_HAS_IRP_FLAGS | DM_EV_HAS_PRIORITY | DM_EV_NAME_LENS;
    ev->request = rec->opcode == DM_DISKIO_READ    ? DM_REQ_READ
                  : rec->opcode == DM_DISKIO_WRITE ? DM_REQ_WRITE
                                                   : DM_REQ_FLUSH;
    ev->req_flags = dm_diskio_req_flags(d.irp_flags);
    ev->priority = dm_diskio_priority(d.irp_flags);
    ev->disk_name = "";
    ev->disk_name_len = 0;
    ev->process = "";
    ev->process_len = 0;
    ev->file = "";
    ev->file_len = 0;
    ev->partition = kd->skip_partitions
                        ? ""
                        : dm_partmap_name(&kd->disk_volumes, ev->disk, ev->byte_offset,
                                          ev->transfer_size);
    ev->partition_len = kd->skip_partitions ? 0 : (uint8_t)strlen(ev->partition);
    ev->cgroup = "";
    ev->cgroup_len = 0;

    /* (uint32_t)-1 is ETW's "no thread" (docs/etw.md §2). */
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
         * account left (docs/etw.md §2: a header ThreadId of -1 means
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
        proc = lookup_process(kd, pid);
        if (proc != NULL) {
            ev->process = proc->name;
            ev->process_len = proc->name_len;
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
            ev->file_len = (uint16_t)strlen(kd->path); /* < DM_FILE_MAX */
        } else {
            ev->file = f->name;
            ev->file_len = f->name_len;
        }
        ev->flags |= DM_EV_HAS_FILE;
        if (cut)
            ev->flags |= DM_EV_FILE_CUT;
    }
    if (init != NULL)
        dm_kt_remove(&kd->irps, irp_slot);
    return 1;
}
