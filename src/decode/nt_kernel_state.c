/*
 * nt_kernel_state.c - the NT kernel decoder's shared state
 * (nt_kernel_state.h): the naming tables' sizes, creating and freeing one
 * set of them, and the clocks' tick scales. The bottom of the decoder:
 * the entry points (nt_kernel.c) and every handler call down to it, and it
 * calls none of them.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "decode/ktable.h"
#include "decode/nt_kernel_state.h"

/* Table sizes (slots; powers of two): what a table starts with, and its
 * cap. A table grows when half full, so it holds at least half its cap
 * without replacing anything (ktable.h). A busy desktop has a few thousand
 * threads and a few hundred processes; a Windows 11 desktop's start
 * rundown names about 26,000 files (docs/etw.md §8), a file server far
 * more: the file table holds 1,048,576 file objects before it may replace
 * one, in at most 2,097,152 slots of 40 bytes (x64; 80 MB) plus the names.
 * docs/windows.md "Limits" gives these caps. The thread and IRP tables
 * start small (2,048 threads and 128 I/Os in flight before they grow): a
 * completion probes both, and tables sized for a busy machine (700 KB
 * together) made those probes miss the cache. The file table starts at a
 * few thousand files, which a start rundown names at once. (The process
 * table keeps its size: when it sweeps out ended processes depends on its
 * size, and lookup_process still names an ended process until then.) */
#define THREAD_SLOTS 4096u
#define THREAD_MAX_SLOTS (1u << 20)
#define PROCESS_SLOTS 4096u
#define PROCESS_MAX_SLOTS (1u << 18)
#define FILE_SLOTS 8192u
#define FILE_MAX_SLOTS (2u * DM_KDECODER_FILES_MAX)
#define IRP_SLOTS 256u
#define IRP_MAX_SLOTS (1u << 18)

/* The tables' keep_spare hook: an ended thread or process is kept while
 * the record being decoded is within THREAD_GRACE_SEC of its End, as long
 * as lookup_thread (nt_kernel_diskio.c) would still use it. */
_Static_assert(offsetof(struct thread_slot, end) == sizeof(struct dm_kslot) &&
                   offsetof(struct process_slot, end) == sizeof(struct dm_kslot),
               "ended_within_grace reads end right after the slot's head");

static int ended_within_grace(const void *slot, const void *ctx)
{
    const struct dm_kdecoder *kd = ctx;
    uint64_t end;

    memcpy(&end, (const unsigned char *)slot + sizeof(struct dm_kslot), sizeof end);
    return end == THREAD_ALIVE || kd->naming_ts <= end ||
           kd->naming_ts - end <= kd->thread_grace;
}

int dm_kdecoder__names_init(struct names *n, const struct dm_kdecoder *kd)
{
    int a = dm_kt_init_growing(&n->threads, THREAD_SLOTS, THREAD_MAX_SLOTS,
                               sizeof(struct thread_slot));
    int b = dm_kt_init_growing(&n->processes, PROCESS_SLOTS, PROCESS_MAX_SLOTS,
                               sizeof(struct process_slot));
    int c = dm_kt_init_growing(&n->files, FILE_SLOTS, FILE_MAX_SLOTS,
                               sizeof(struct file_slot));

    /* An ended thread or process (AGE_ENDED) makes room before the table
     * grows, once its grace is over: the grace is a courtesy to its last
     * completions. */
    n->threads.spare_age = AGE_ENDED;
    n->processes.spare_age = AGE_ENDED;
    n->threads.keep_spare = ended_within_grace;
    n->processes.keep_spare = ended_within_grace;
    n->threads.keep_ctx = kd;
    n->processes.keep_ctx = kd;
    return a < 0 || b < 0 || c < 0 ? DM_ENOMEM : 0;
}

void dm_kdecoder__names_free(struct names *n)
{
    if (n->files.mem != NULL)
        for (size_t s = 0; s <= n->files.mask; s++)
            if (dm_kt_slot(&n->files, s)->age != 0)
                free(file_at(&n->files, s)->name);
    dm_kt_free(&n->threads);
    dm_kt_free(&n->processes);
    dm_kt_free(&n->files);
}

static void tick_scale_init(struct tick_scale *sc, uint64_t freq)
{
    sc->freq = freq;
    sc->ns_per_tick = NS_PER_SEC % freq == 0 ? NS_PER_SEC / freq : 0;
    sc->max_ticks = sc->ns_per_tick != 0 ? UINT64_MAX / sc->ns_per_tick : 0;
}

int dm_kdecoder__state_init(struct dm_kdecoder *kd, uint64_t ts_freq, uint64_t start_ts,
                            uint64_t hrrt_freq)
{
    tick_scale_init(&kd->ts_scale, ts_freq);
    tick_scale_init(&kd->hrrt_scale, hrrt_freq);
    kd->clock = AGE_ENDED; /* every entry written is younger than that */
    kd->start_ts = start_ts;
    kd->thread_grace = ts_freq > UINT64_MAX / THREAD_GRACE_SEC
                           ? UINT64_MAX
                           : ts_freq * THREAD_GRACE_SEC;
    kd->scratch = malloc(SCRATCH_SIZE);
    if (dm_kdecoder__names_init(&kd->names, kd) < 0 ||
        dm_kt_init_growing(&kd->irps, IRP_SLOTS, IRP_MAX_SLOTS,
                           sizeof(struct irp_slot)) < 0 ||
        kd->scratch == NULL)
        return DM_ENOMEM;
    return 0;
}

void dm_kdecoder__state_free(struct dm_kdecoder *kd)
{
    dm_kdecoder__names_free(&kd->names);
    if (kd->rundown != NULL)
        dm_kdecoder__names_free(kd->rundown);
    free(kd->rundown);
    kd->rundown = NULL;
    dm_kt_free(&kd->irps);
    dm_partmap_free(&kd->disk_volumes);
    free(kd->scratch);
    kd->scratch = NULL;
}
