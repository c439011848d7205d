/*
 * etw_source.c - the live Windows source: a real-time consumer of the
 * kernel trace session (etw_session.c), decoding DiskIo, Process, Thread and
 * FileIo events with the shared decoder (decode/nt_kernel.h).
 *
 * Threads: open() and close() run on the main thread; run() runs on the
 * source thread and blocks in ProcessTrace, which calls on_event() for every
 * event and on_buffer() after every buffer on that same thread. on_event()
 * copies the record into the reorder stage (decode/reorder.h); records come
 * out of it in timestamp order into release(), which decodes, filters and
 * enqueues (dm_sink_emit never blocks for a live source), so ETW's buffers
 * drain as fast as they fill. stop() may come from any thread: it stops the
 * session (ControlTrace STOP) and closes the consumer handle, after which
 * ProcessTrace delivers what is still queued and returns; it touches
 * nothing the printer owns, so a printer blocked on a full pipe cannot keep
 * the session alive.
 *
 * Why a reorder stage: the session uses per-processor buffers
 * (etw_logger.c), which reach the consumer one buffer at a time, not in
 * global time order, so a completion may come before the Init or the thread
 * start it needs. The stage holds records for at most DM_ETW_HOLD_MS (the
 * FlushTimer plus a margin, etw_session.h) and releases them in time order.
 *
 * Release by time, also when nothing arrives. Windows calls us only when it
 * delivers a buffer, and on a quiet machine none may come for a long time,
 * so a releaser thread wakes every DM_ETW_RELEASE_EVERY_MS and releases what
 * has grown old enough. The reorder stage, the decoder and the sink's
 * producer side belong to whoever holds ro_lock: the ETW thread takes it at
 * the first event of a buffer and gives it back in the BufferCallback (one
 * lock round per buffer, not per event), the releaser for each of its
 * rounds, the naming helper's thread for each name, and run() for the
 * final flush. dm_etw_ro_enter()/dm_etw_ro_leave() take and give it back and note the
 * owner, so the places that must hold it can check (ro_check): a use
 * without it is counted (dm_etw_source_unguarded), which tests assert is
 * 0.
 *
 * The start rundown is asked for in run(), after OpenTrace and just before
 * ProcessTrace (etw_session.h): on the private session, when its own
 * handle refuses the kernel rundown provider, the helper session is
 * started, opened and enabled here too, and its consumer runs on a thread
 * of its own. The releaser also sends the flush fallback's FLUSH every
 * DM_ETW_FLUSH_MS when the session needs it (dm_etw_session_flush).
 *
 * What the session set up goes to src->info in open() (etw_session.h
 * dm_etw_session_info); "start rundown" follows in run() before
 * ProcessTrace, and "rundown names" (the FileRundown names seen so far)
 * just before the first I/O is handed to the sink, or when run() ends if
 * none was. Both are written under ro_lock; a reader on another thread
 * reads info after open(), after it took the first line from the ring, or
 * after run() returned.
 *
 * The end of a run. Ctrl+C and -t stop the session: ProcessTrace then
 * delivers the buffers already queued, and the kernel's end rundown, before
 * it returns ([MS-close], docs/etw.md §7), and those events are printed.
 * Only when nothing more can be printed (-n reached, output closed:
 * dm_sink_enough) does on_buffer() return FALSE, which makes ProcessTrace
 * drop the rest at once.
 * Facts: the ProcessTrace, CloseTrace, EVENT_TRACE_LOGFILE and
 * EVENT_HEADER pages of Microsoft Learn.
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "cli/options.h"
#include "etw/etw_names.h"
#include "etw/etw_source_internal.h"
#include "platform/win32_io.h"

/* RT_LostEvent {6a399ae0-4bc6-4de9-870b-3657f8947e7e}, opcodes 32 events
 * lost, 33 buffer lost, 34 backing file lost (docs/etw.md §1 [MS-lost]). */
static const GUID rt_lost_event_guid = {
    0x6a399ae0, 0x4bc6, 0x4de9, {0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e}};
#define DM_RT_LOST_EVENT 32u
#define DM_RT_LOST_BUFFER 33u
#define DM_RT_LOST_FILE 34u

/* Returned by ProcessTrace when our BufferCallback said stop [MS-logfile]. */
#define DM_WIN_CANCELLED 1223u

/* The most records the reorder stage holds (allocated up front, 128
 * bytes each on x64, reorder.h: 8 MiB). While any CPU is quiet, records wait DM_ETW_HOLD_MS
 * (250 ms, etw_session.h): 65,536 records cover that hold up to about
 * 260,000 events/s. Past that the oldest record is released early, which
 * costs order only if a record older than it is still in a buffer (under
 * such load buffers fill in milliseconds); it is counted as late then,
 * never dropped. */
#define DM_REORDER_MAX_HELD (1u << 16)

static int guid_eq(const GUID *a, const GUID *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* The "rundown names" info line, once (ro_lock held). */
static void note_rundown_names(struct etw_source *s, const char *when)
{
    if (s->names_noted || s->src == NULL)
        return;
    s->names_noted = 1;
    dm_note(&s->src->info, "rundown names: %llu (%s)\n",
            (unsigned long long)s->rundown_names, when);
}

/*
 * The reorder stage's output, in timestamp order: decode, filter, enqueue.
 * The payload is untrusted: the decoder length-checks and memcpy's every
 * field.
 */
static int release(void *ctx, const struct dm_krecord *rec)
{
    struct etw_source *s = ctx;
    struct dm_event ev;

    /* DM_ESTOPPED from the sink only says the run is ending; main calls
     * stop(), and events until then are still queued and printed. */
    if (dm_kdecode(s->kd, rec, &ev) == 1) {
        if (!s->names_noted)
            note_rundown_names(s, "before the first I/O line");
        dm_sink_emit(s->sink, &ev);
    }
    return 0;
}

/* Release what can no longer be overtaken, by the QPC clock the records
 * are stamped with. ro_lock held. */
static void release_aged(struct etw_source *s)
{
    LARGE_INTEGER now;

    dm_etw_ro_check(s);
    QueryPerformanceCounter(&now);
    dm_reorder_release(s->ro, (uint64_t)now.QuadPart, release, s);
}

/* The processor whose buffer carried the record: ProcessorIndex when the
 * header says so (EVENT_HEADER_FLAG_PROCESSOR_INDEX), else ProcessorNumber
 * ([MS-evh]; evntcons.h GetEventProcessorIndex does the same). */
static unsigned record_cpu(const EVENT_RECORD *er)
{
    if (er->EventHeader.Flags & EVENT_HEADER_FLAG_PROCESSOR_INDEX)
        return er->BufferContext.ProcessorIndex;
    return er->BufferContext.ProcessorNumber;
}

/*
 * The EventRecordCallback. Only the payload's pointer and length are handed
 * on; the reorder stage copies them. The pointer size comes from the event
 * header flags, not from this build, so a 32-bit diskmon on 64-bit Windows
 * decodes the 64-bit kernel's payloads correctly (docs/etw.md §2).
 */
static VOID WINAPI on_event(PEVENT_RECORD er)
{
    struct etw_source *s = er->UserContext;
    const EVENT_HEADER *h = &er->EventHeader;
    struct dm_krecord rec;
    uint8_t guid[16];

    /* Once nothing more can be printed, the rest is not worth decoding. */
    if (s == NULL || s->sink == NULL || s->said_enough || dm_sink_enough(s->sink))
        return;
    memcpy(guid, &h->ProviderId, sizeof guid);
    rec.kclass = dm_kclass_from_guid(guid);
    if (rec.kclass == DM_K_OTHER) {
        if (guid_eq(&h->ProviderId, &rt_lost_event_guid)) {
            unsigned op = h->EventDescriptor.Opcode;

            if (op >= DM_RT_LOST_EVENT && op <= DM_RT_LOST_FILE)
                s->rt_lost[op - DM_RT_LOST_EVENT]++;
        }
        return;
    }
    dm_etw_fill_record(s, er, &rec);
    /* Records the decoder does nothing with (CSwitch, FileIo Read/Write,
     * ...) cannot depend on order: they skip the reorder stage. */
    if (dm_kdecode_ignores(&rec))
        return;
    if (!s->in_buffer) {
        dm_etw_ro_enter(s);
        s->in_buffer = 1;
    }
    if (rec.kclass == DM_K_FILEIO && rec.opcode == DM_FILEIO_RUNDOWN)
        s->rundown_names++;
    /* DM_ENOMEM (a long payload that could not be copied) loses that one
     * record; it is counted with the lost events. */
    if (dm_reorder_push(s->ro, record_cpu(er), &rec, release, s) == DM_ENOMEM)
        s->copy_failed++;
}

/* Called by ProcessTrace after each buffer: release what can no longer be
 * overtaken, by the QPC clock the records are stamped with. FALSE makes
 * ProcessTrace return at once with ERROR_CANCELLED, dropping what is still
 * queued (docs/etw.md §1 [MS-logfile]): only when nothing more can be
 * printed (-n reached, output closed). */
static ULONG WINAPI on_buffer(PEVENT_TRACE_LOGFILEW lf)
{
    struct etw_source *s = lf->Context;
    ULONG go_on = TRUE;

    if (s == NULL || s->sink == NULL)
        return TRUE;
    if (!s->in_buffer)
        dm_etw_ro_enter(s);
    s->in_buffer = 0;
    if (dm_sink_enough(s->sink)) {
        s->said_enough = 1;
        go_on = FALSE;
    } else {
        size_t held = dm_reorder_held(s->ro);

        if (held > s->peak_held)
            s->peak_held = held;
        release_aged(s);
    }
    dm_etw_ro_leave(s);
    return go_on;
}

/* The releaser thread: every DM_ETW_RELEASE_EVERY_MS, what is old enough
 * goes on even when no buffer arrives (file comment); in the flush
 * fallback, a FLUSH every DM_ETW_FLUSH_MS too, outside ro_lock (a
 * ControlTrace call must not hold up the ETW thread), woken in time for
 * it. */
static void releaser_main(void *arg)
{
    struct etw_source *s = arg;
    const uint64_t period_ns = (uint64_t)DM_ETW_FLUSH_MS * 1000000u;
    uint64_t next_flush = dm_monotonic_ns() + period_ns;
    int flush = s->session.flush_by_handle;

    for (;;) {
        DWORD wait = DM_ETW_RELEASE_EVERY_MS;

        if (flush) {
            uint64_t now = dm_monotonic_ns();
            uint64_t left_ms = next_flush > now ? (next_flush - now + 999999u) / 1000000u : 0;

            if (left_ms < wait)
                wait = (DWORD)left_ms;
        }
        if (WaitForSingleObject(s->releaser_stop, wait) != WAIT_TIMEOUT)
            break;
        if (flush) {
            uint64_t now = dm_monotonic_ns();

            if (now >= next_flush) {
                dm_etw_session_flush(&s->session);
                next_flush += period_ns;
                if (next_flush <= now)
                    next_flush = now + period_ns;
            }
        }
        dm_etw_ro_enter(s);
        if (!s->said_enough && !dm_sink_enough(s->sink))
            release_aged(s);
        dm_etw_ro_leave(s);
    }
}

static void close_consumer(struct etw_source *s)
{
    if (InterlockedExchange(&s->consumer_open, 0) != 0)
        dm_etw->close_trace(s->consumer); /* 7007 while ProcessTrace runs: fine */
}

/* Stop everything that keeps ProcessTrace going. Any thread, idempotent. */
static int stop_all(struct etw_source *s, char *msg, size_t len)
{
    int err = dm_etw_session_stop(&s->session, msg, len);

    close_consumer(s);
    dm_etw_close_helper(s);
    return err;
}

/*
 * Map the NT device names in FileIo paths ("\Device\HarddiskVolume2\...")
 * to drive letters, as QueryDosDevice reports them now. Drives that are not
 * plain volumes (subst, network redirectors) are left out.
 */
static void add_volumes(struct dm_kdecoder *kd)
{
    DWORD drives = GetLogicalDrives();

    for (int i = 0; i < 26; i++) {
        WCHAR dos[3] = L"A:";
        WCHAR target[512];
        char nt[1024];
        char letter[3] = "A:";
        int n;

        if (!(drives & (1u << i)))
            continue;
        dos[0] = (WCHAR)(L'A' + i);
        letter[0] = (char)('A' + i);
        if (QueryDosDeviceW(dos, target, (DWORD)(sizeof target / sizeof target[0])) == 0)
            continue;
        if (wcsncmp(target, L"\\Device\\", 8) != 0)
            continue;
        n = WideCharToMultiByte(CP_UTF8, 0, target, -1, nt, (int)sizeof nt, NULL, NULL);
        if (n > 0)
            dm_kdecoder_add_volume(kd, nt, letter);
    }
}

/*
 * The pointer size of payloads whose header has neither the 32- nor the
 * 64-bit flag: the kernel's, which is the OS's bitness. Not
 * LogfileHeader.PointerSize: PerfView notes that a real-time session
 * reports 4 there even on x64 (ETWTraceEventSource.cs; docs/etw.md §7).
 * A 32-bit diskmon on 64-bit Windows runs under WOW64.
 */
static unsigned os_pointer_size(void)
{
#if defined(_WIN64)
    return 8; /* (an #if, not if (sizeof ...): MSVC /W4 C4127) */
#else
    BOOL wow64 = FALSE;

    return IsWow64Process(GetCurrentProcess(), &wow64) && wow64 ? 8u : 4u;
#endif
}

/* Processors whose buffers can arrive: every one in every group, counting
 * those that may be added while diskmon runs (GetMaximumProcessorCount,
 * Windows 7+), or the session's own count from the logfile header
 * OpenTrace filled, whichever is larger. The reorder stage copes with a
 * higher processor number too, at the price of late records. */
static unsigned cpu_count(const TRACE_LOGFILE_HEADER *h)
{
    DWORD n = GetMaximumProcessorCount(ALL_PROCESSOR_GROUPS);

    if (n == 0)
        n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    /* BufferContext.ProcessorIndex is 16 bits: a larger count is noise. */
    if (h->NumberOfProcessors > n && h->NumberOfProcessors <= 0xFFFFu)
        n = h->NumberOfProcessors;
    return n > 0 ? (unsigned)n : 1u;
}

static int etw_open(struct dm_source *src, const struct dm_options *opt)
{
    struct etw_source *s;
    LARGE_INTEGER qpf, qpc;
    unsigned left_out;
    int rc;

    src->is_live = 1;
    src->has_files = 1;
    if (opt->cleanup) {
        /* --cleanup does its work here and ends the run: DM_ESTOPPED with
         * the outcome in errmsg means "done, nothing to capture". */
        rc = dm_etw_cleanup(src->errmsg, sizeof src->errmsg);
        return rc == 0 || rc == DM_ENOTFOUND ? DM_ESTOPPED : rc;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return DM_ENOMEM;
    src->impl = s;
    s->src = src;
    s->consumer = DM_INVALID_TRACE;
    InitializeCriticalSection(&s->ro_lock);
    s->ro_lock_ready = 1;

    /* Time 0 is now: the tick and the wall clock taken together, before the
     * session exists, so no event can predate them. */
    QueryPerformanceFrequency(&qpf);
    QueryPerformanceCounter(&qpc);
    src->start_wall_ns = dm_wall_ns();
    s->kd = dm_kdecoder_create((uint64_t)qpf.QuadPart, (uint64_t)qpc.QuadPart,
                               (uint64_t)qpf.QuadPart);
    if (s->kd == NULL)
        return DM_ENOMEM;
    dm_kdecoder_name_partitions(s->kd, dm_options_read_partition(opt));
    s->default_pointer_size = os_pointer_size();

    rc = dm_etw_session_start(&s->session, opt->force, dm_etw_is_win8_or_later(),
                              src->errmsg, sizeof src->errmsg);
    if (rc < 0)
        return rc;
    if (s->session.notice[0] != '\0')
        dm_note(&src->notes, "%s", s->session.notice);
    dm_etw_session_info(&s->session, &src->info);
    add_volumes(s->kd);
    left_out = dm_etw_add_disk_volumes(s->kd);
    if (left_out > 0)
        dm_note(&src->notes, "diskmon: note: %u volume extents did not fit the volume "
                "map: requests in them show an empty partition\n", left_out);

    s->consumer = dm_etw_open_consumer(s, &s->logfile, s->logger_name,
                                sizeof s->logger_name / sizeof s->logger_name[0],
                                dm_etw_session_name(&s->session), on_event, on_buffer);
    if (!dm_etw_opened(s->consumer)) {
        DWORD code = GetLastError();
        char what[128];

        snprintf(what, sizeof what, "opening the real-time session %s (OpenTraceW)",
                 s->session.logger == DM_ETW_PRIVATE_LOGGER ? "\"diskmon\""
                                                            : "\"NT Kernel Logger\"");
        rc = dm_etw_error(code, what, src->errmsg, sizeof src->errmsg);
        if (dm_win32_under_wine()) { /* only to explain the failure */
            size_t used = strlen(src->errmsg);

            snprintf(src->errmsg + used, sizeof src->errmsg - used,
                     " (this is Wine, whose ETW functions are stubs: live "
                     "capture needs Windows; -r FILE replays a trace)");
        }
        dm_etw_session_stop(&s->session, NULL, 0);
        return rc < 0 ? rc : DM_EOS;
    }
    s->consumer_open = 1;
    /* DM_ETW_HOLD_MS in ticks, without overflow for any QPC rate. */
    s->hold_ticks = (uint64_t)qpf.QuadPart / 1000u * DM_ETW_HOLD_MS +
                    (uint64_t)qpf.QuadPart % 1000u * DM_ETW_HOLD_MS / 1000u;
    s->ro = dm_reorder_create(cpu_count(&s->logfile.LogfileHeader), s->hold_ticks,
                              DM_REORDER_MAX_HELD);
    s->releaser_stop = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (s->ro == NULL || s->releaser_stop == NULL) {
        stop_all(s, NULL, 0);
        return DM_ENOMEM;
    }
    return 0;
}

static const char *session_label(const struct etw_source *s)
{
    return s->session.logger == DM_ETW_PRIVATE_LOGGER ? "\"diskmon\""
                                                      : "\"NT Kernel Logger\"";
}

static int etw_run(struct dm_source *src, struct dm_sink *sink)
{
    struct etw_source *s = src->impl;
    ULONG rc = ERROR_SUCCESS;
    int err = 0;

    if (s == NULL)
        return 0;
    s->sink = sink;
    /* A stop asked for before run() (the sink's flag, set before stop()
     * closed the consumer) leaves nothing to read. */
    if (!dm_sink_stopping(sink))
        err = dm_etw_source_start_rundown(src, s);
    if (!dm_sink_stopping(sink) && err == 0) {
        /* Without the releaser, lines would still come, only later: not a
         * reason to give up the run. */
        ResetEvent(s->releaser_stop);
        if (dm_thread_start(&s->releaser, releaser_main, s) != 0)
            s->releaser = NULL;
        rc = dm_etw->process_trace(&s->consumer, 1, NULL, NULL);
        /* A FALSE from on_buffer ended ProcessTrace: it had the lock back. */
        if (s->in_buffer) {
            s->in_buffer = 0;
            dm_etw_ro_leave(s);
        }
        if (s->releaser != NULL) {
            SetEvent(s->releaser_stop);
            dm_thread_join(s->releaser);
            s->releaser = NULL;
        }
    }
    /* Whatever ended ProcessTrace, every record it delivered is printed, in
     * time order (nothing more can arrive to overtake them). The helper's
     * thread may still be feeding names to kd: under ro_lock, as always. */
    dm_etw_ro_enter(s);
    dm_etw_ro_check(s);
    if (!s->said_enough)
        dm_reorder_flush(s->ro, release, s);
    note_rundown_names(s, "no I/O line was printed before the end");
    dm_etw_ro_leave(s);

    if (err < 0) {
        /* the start rundown failed: errmsg says why */
    } else if (rc == DM_WIN_CANCELLED && s->said_enough) {
        /* -n reached or output closed: our own end. */
    } else if ((rc == ERROR_SUCCESS || rc == ERROR_WMI_INSTANCE_NOT_FOUND) &&
               dm_etw_session_ended_outside(&s->session)) {
        /* ProcessTrace returned on its own before we asked for a stop:
         * someone stopped the session (another tool, 'logman stop', or a
         * diskmon --force elsewhere). It is not ours any more, and a QUERY
         * or STOP by name could hit whatever session runs under that name
         * now (etw_session.h), so diskmon leaves it alone; losses then come
         * from the in-stream RT_LostEvent records only. */
        snprintf(src->errmsg, sizeof src->errmsg,
                 "the trace session %s was stopped from outside (by another "
                 "program, for example 'xperf -stop', 'logman stop' or a "
                 "'diskmon --force' elsewhere); diskmon did not touch it "
                 "again",
                 session_label(s));
        err = DM_EOS;
    } else if (!dm_sink_stopping(sink) && rc != ERROR_SUCCESS) {
        err = dm_etw_error(rc, "reading events (ProcessTrace)", src->errmsg,
                           sizeof src->errmsg);
        if (err == 0)
            err = DM_EOS;
    }
    /* Whatever ended ProcessTrace, the session has no reader any more. A
     * session stopped from outside is skipped by dm_etw_session_stop, and
     * one it cannot tell is still diskmon's is left running: said so. */
    {
        char msg[sizeof src->errmsg];
        int serr;

        msg[0] = '\0';
        serr = stop_all(s, msg, sizeof msg);
        if (serr < 0 && err == 0) {
            snprintf(src->errmsg, sizeof src->errmsg, "%s", msg);
            err = serr;
        }
    }
    if (s->session.replaced)
        dm_note(&src->notes,
                "diskmon: note: %s diskmon started was stopped from outside, "
                "and the one running now under its handle is another "
                "program's: diskmon left it alone\n",
                s->session.logger == DM_ETW_PRIVATE_LOGGER ? "the session \"diskmon\""
                                                           : "the NT Kernel Logger");
    if (s->helper_thread != NULL) {
        dm_thread_join(s->helper_thread); /* its session stopped, its
                                           * consumer closed: it returns */
        s->helper_thread = NULL;
    }

    /* Losses: the session's counters and the in-stream RT_LostEvent records
     * describe the same losses seen from two sides, so each kind counts the
     * larger of the two rather than their sum. RealTimeBuffersLost and
     * RTLostBuffer count whole buffers of up to BufferSize KB, not events
     * ([MS-props], docs/etw.md §8): they are reported as buffers, their
     * events uncounted. */
    src->lost_events += dm_etw_max_u64(s->session.events_lost, s->rt_lost[0]) +
                        s->rt_lost[2] + s->copy_failed;
    src->lost_buffers += dm_etw_max_u64(s->session.rt_buffers_lost, s->rt_lost[1]);
    if (src->lost_buffers > 0)
        snprintf(src->loss_detail, sizeof src->loss_detail,
                 "ETW: %llu whole buffer%s of up to %u KB of events lost, "
                 "their events not counted",
                 (unsigned long long)src->lost_buffers,
                 src->lost_buffers == 1 ? "" : "s", DM_ETW_BUFFER_KB);
    src->malformed = dm_kdecoder_malformed(s->kd);
    if (dm_kdecoder_replaced(s->kd) > 0)
        dm_note(&src->notes, DM_KDECODER_FULL_NOTE,
                (unsigned long long)dm_kdecoder_replaced(s->kd));
    if (dm_reorder_late(s->ro) > 0)
        /* Late: more than the window behind, or pushed out early by the
         * stage's count bound under a burst (reorder.h). */
        dm_note(&src->notes,
                "diskmon: note: %llu events arrived after later ones were "
                "printed (more than %u ms late, or more than %u events "
                "behind) and were printed out of time order\n",
                (unsigned long long)dm_reorder_late(s->ro),
                DM_ETW_HOLD_MS,
                (unsigned)DM_REORDER_MAX_HELD);
    return err;
}

static void etw_stop(struct dm_source *src)
{
    struct etw_source *s = src->impl;

    if (s != NULL)
        stop_all(s, NULL, 0);
}

static void etw_close(struct dm_source *src)
{
    struct etw_source *s = src->impl;

    if (s == NULL)
        return;
    stop_all(s, NULL, 0);
    dm_etw_session_free(&s->session);
    if (s->kd != NULL)
        dm_kdecoder_destroy(s->kd);
    if (s->ro != NULL)
        dm_reorder_destroy(s->ro);
    if (s->releaser_stop != NULL)
        CloseHandle(s->releaser_stop);
    if (s->ro_lock_ready)
        DeleteCriticalSection(&s->ro_lock);
    free(s);
    src->impl = NULL;
}

size_t dm_etw_source_peak_held(const struct dm_source *src)
{
    const struct etw_source *s = src->impl;

    return s != NULL ? s->peak_held : 0;
}

uint64_t dm_etw_source_late(const struct dm_source *src)
{
    const struct etw_source *s = src->impl;

    return s != NULL && s->ro != NULL ? dm_reorder_late(s->ro) : 0;
}

long dm_etw_source_unguarded(const struct dm_source *src)
{
    struct etw_source *s = src->impl;

    return s != NULL ? InterlockedCompareExchange(&s->unguarded, 0, 0) : 0;
}

const struct dm_etw_session *dm_etw_source_session(const struct dm_source *src)
{
    const struct etw_source *s = src->impl;

    return s != NULL ? &s->session : NULL;
}

/* ETW's DiskIo events carry no dispatch time, and the kernel session is
 * the only backend Windows has. */
static const char *etw_refuse(const struct dm_options *opt)
{
    if (opt->queue)
        return "--queue is for Linux live capture; ETW's DiskIo events carry "
               "no dispatch time";
    if (opt->backend != DM_BACKEND_DEFAULT)
        return "--backend is for Linux live capture (tracefs or perf); "
               "Windows reads the kernel's ETW session";
    if (opt->n_cgroups > 0 || (opt->top_ns != 0 && opt->top_by == DM_TOP_BY_CGROUP))
        return "--cgroup and --by cgroup are for Linux live capture; Windows has no "
               "cgroups";
    return NULL;
}

const struct dm_source_ops dm_etw_source = {
    "etw", etw_open, etw_run, etw_stop, etw_close, etw_refuse,
};

const struct dm_source_ops *const dm_live_source = &dm_etw_source;
