/*
 * etw_source_internal.h - the live source's state, shared by its two
 * files: etw_source.c (open, run, close, the main consumer's callbacks, the
 * releaser) and etw_names.c (opening consumers, the start rundown and the
 * naming helper's consumer; etw_names.h). The locking rules are in
 * etw_source.c's file comment.
 */
#ifndef DM_ETW_SOURCE_INTERNAL_H
#define DM_ETW_SOURCE_INTERNAL_H

#include <stdint.h>

#include "diskmon.h"
#include "core/sink.h"
#include "decode/nt_kernel.h"
#include "decode/reorder.h"
#include "etw/etw_session.h"
#include "platform/platform.h"

struct etw_source {
    struct dm_etw_session session;
    struct dm_kdecoder *kd;
    struct dm_reorder *ro;             /* source thread only */
    struct dm_sink *sink;              /* set by run() before ProcessTrace */
    EVENT_TRACE_LOGFILEW logfile;
    WCHAR logger_name[64];             /* OpenTrace wants a writable name */
    TRACEHANDLE consumer;
    volatile LONG consumer_open;       /* 1 until CloseTrace was called */
    unsigned default_pointer_size;     /* when a header has neither flag */
    int said_enough;                   /* on_buffer() returned FALSE */
    /* ro_lock guards ro, kd and the sink's producer side (file comment). */
    CRITICAL_SECTION ro_lock;
    int ro_lock_ready;
    int in_buffer;                     /* the ETW thread holds ro_lock */
    HANDLE releaser_stop;              /* manual reset: the releaser ends */
    dm_thread *releaser;
    uint64_t hold_ticks;               /* DM_ETW_HOLD_MS in QPC ticks */
    size_t peak_held;                  /* most records held after a buffer */
    /* In-stream RT_LostEvent counts, per opcode 32/33/34. Source thread. */
    uint64_t rt_lost[3];
    uint64_t copy_failed;              /* records the reorder stage could not take */
    struct dm_source *src;             /* for info (ro_lock held) */
    DWORD ro_owner;                    /* the thread holding ro_lock, or 0 */
    volatile LONG unguarded;           /* ro_check failures (file comment) */
    uint64_t rundown_names;            /* FileRundown records seen (ro_lock) */
    int names_noted;                   /* "rundown names" is in info */
    /* The private session's naming helper (etw_session.c): its own
     * consumer, on its own thread, feeding FileRundown names to kd. */
    EVENT_TRACE_LOGFILEW helper_logfile;
    WCHAR helper_name[64];
    TRACEHANDLE helper_consumer;
    volatile LONG helper_open;         /* 1 until its CloseTrace */
    dm_thread *helper_thread;
    volatile LONG helper_buffers;      /* buffers the helper delivered */
};

/* FileIo FileRundown: the name of a file open when the rundown ran
 * (FileIo_Name class page). */
#define DM_FILEIO_RUNDOWN 36u

static inline void dm_etw_ro_enter(struct etw_source *s)
{
    EnterCriticalSection(&s->ro_lock);
    s->ro_owner = GetCurrentThreadId();
}

static inline void dm_etw_ro_leave(struct etw_source *s)
{
    s->ro_owner = 0;
    LeaveCriticalSection(&s->ro_lock);
}

/* Where ro_lock must be held: count it when it is not (file comment). */
static inline void dm_etw_ro_check(struct etw_source *s)
{
    if (s->ro_owner != GetCurrentThreadId())
        InterlockedIncrement(&s->unguarded);
}

/* The record's header fields as the decoder takes them (its class is the
 * caller's). The pointer size comes from the event header flags, not from
 * this build (docs/etw.md §2). */
static inline void dm_etw_fill_record(const struct etw_source *s, const EVENT_RECORD *er,
                        struct dm_krecord *rec)
{
    const EVENT_HEADER *h = &er->EventHeader;

    rec->opcode = h->EventDescriptor.Opcode;
    rec->version = h->EventDescriptor.Version;
    if (h->Flags & EVENT_HEADER_FLAG_64_BIT_HEADER)
        rec->pointer_size = 8;
    else if (h->Flags & EVENT_HEADER_FLAG_32_BIT_HEADER)
        rec->pointer_size = 4;
    else
        rec->pointer_size = s->default_pointer_size;
    /* With PROCESS_TRACE_MODE_RAW_TIMESTAMP and ClientContext 1 this is the
     * QueryPerformanceCounter value (docs/etw.md §2 [MS-evh]). */
    rec->timestamp = (uint64_t)h->TimeStamp.QuadPart;
    /* DiskIo completions carry no thread or process: the header says -1
     * (docs/etw.md §2). */
    rec->tid = h->ThreadId == 0xFFFFFFFFu ? DM_KNO_ID : h->ThreadId;
    rec->pid = h->ProcessId == 0xFFFFFFFFu ? DM_KNO_ID : h->ProcessId;
    rec->payload = er->UserData;
    rec->payload_len = er->UserData != NULL ? er->UserDataLength : 0;
}

/* Every volume's extents on the disks into kd's volume map, named by drive
 * letter (etw_volumes.c). At start; what cannot be read is left out.
 * Returns the extents the full map had no room for (0 normally). */
unsigned dm_etw_add_disk_volumes(struct dm_kdecoder *kd);

#endif /* DM_ETW_SOURCE_INTERNAL_H */
