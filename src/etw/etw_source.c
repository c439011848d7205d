/*
 * etw_source.c - the live Windows source: a real-time consumer of the
 * kernel trace session (etw_session.c), decoding DiskIo, Process, Thread and
 * FileIo events with the shared decoder (decode/kernel.h).
 *
 * Threads: open() and close() run on the main thread; run() runs on the
 * source thread and blocks in ProcessTrace, which calls on_event() for every
 * event on that same thread. on_event() only decodes, filters and enqueues
 * (dm_sink_emit never blocks for a live source), so ETW's buffers drain as
 * fast as they fill. stop() may come from any thread: it stops the session
 * (ControlTrace STOP) and closes the consumer handle, after which
 * ProcessTrace returns; it touches nothing the printer owns, so a printer
 * blocked on a full pipe cannot keep the session alive.
 * Facts: ../shared/docs/etw-facts.md sections 1 and 2.
 */
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "core/options.h"
#include "core/sink.h"
#include "decode/kernel.h"
#include "etw/etw_session.h"
#include "platform/platform.h"

/* RT_LostEvent {6a399ae0-4bc6-4de9-870b-3657f8947e7e}, opcodes 32 events
 * lost, 33 buffer lost, 34 backing file lost (etw-facts.md s.1 [MS-lost]). */
static const GUID rt_lost_event_guid = {
    0x6a399ae0, 0x4bc6, 0x4de9, {0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e}};
#define DM_RT_LOST_EVENT 32u
#define DM_RT_LOST_BUFFER 33u
#define DM_RT_LOST_FILE 34u

/* OpenTrace's failure value: INVALID_PROCESSTRACE_HANDLE, which 32-bit
 * Vista and 7 return zero-extended as 0x00000000FFFFFFFF (etw-facts.md s.1
 * [MS-open]); a 32-bit build checks both spellings. */
#define DM_INVALID_TRACE ((TRACEHANDLE) ~(ULONG64)0)
#define DM_INVALID_TRACE32 ((TRACEHANDLE)0xFFFFFFFFu)

/* Returned by ProcessTrace when our BufferCallback said stop [MS-logfile]. */
#define DM_WIN_CANCELLED 1223u

struct etw_source {
    struct dm_etw_session session;
    struct dm_kdecoder *kd;
    struct dm_sink *sink;              /* set by run() before ProcessTrace */
    EVENT_TRACE_LOGFILEW logfile;
    WCHAR logger_name[64];             /* OpenTrace wants a writable name */
    TRACEHANDLE consumer;
    volatile LONG consumer_open;       /* 1 until CloseTrace was called */
    volatile LONG stopping;            /* stop() was asked for */
    unsigned default_pointer_size;     /* when a header has neither flag */
    /* In-stream RT_LostEvent counts, per opcode 32/33/34. Source thread. */
    uint64_t rt_lost[3];
};

static int guid_eq(const GUID *a, const GUID *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

static int is_stopping(struct etw_source *s)
{
    return InterlockedCompareExchange(&s->stopping, 0, 0) != 0;
}

/*
 * The EventRecordCallback. The payload (UserData) is untrusted: only its
 * pointer and length are handed to the decoder, which length-checks and
 * memcpy's every field. The pointer size comes from the event header flags,
 * not from this build, so a 32-bit diskmon on 64-bit Windows decodes the
 * 64-bit kernel's payloads correctly (etw-facts.md s.2).
 */
static VOID WINAPI on_event(PEVENT_RECORD er)
{
    struct etw_source *s = er->UserContext;
    const EVENT_HEADER *h = &er->EventHeader;
    struct dm_krecord rec;
    struct dm_event ev;
    uint8_t guid[16];

    if (s == NULL || s->sink == NULL)
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
    rec.opcode = h->EventDescriptor.Opcode;
    rec.version = h->EventDescriptor.Version;
    if (h->Flags & EVENT_HEADER_FLAG_64_BIT_HEADER)
        rec.pointer_size = 8;
    else if (h->Flags & EVENT_HEADER_FLAG_32_BIT_HEADER)
        rec.pointer_size = 4;
    else
        rec.pointer_size = s->default_pointer_size;
    /* With PROCESS_TRACE_MODE_RAW_TIMESTAMP and ClientContext 1 this is the
     * QueryPerformanceCounter value (etw-facts.md s.2 [MS-evh]). */
    rec.timestamp = (uint64_t)h->TimeStamp.QuadPart;
    /* DiskIo completions carry no thread or process: the header says -1
     * (etw-facts.md s.2). */
    rec.tid = h->ThreadId == 0xFFFFFFFFu ? DM_KNO_ID : h->ThreadId;
    rec.pid = h->ProcessId == 0xFFFFFFFFu ? DM_KNO_ID : h->ProcessId;
    rec.payload = er->UserData;
    rec.payload_len = er->UserData != NULL ? er->UserDataLength : 0;
    if (dm_kdecode(s->kd, &rec, &ev) == 1 &&
        dm_sink_emit(s->sink, &ev) == DM_ESTOPPED) {
        /* The run is ending (-n reached, Ctrl+C): the main thread calls
         * stop(). Stopping the session from inside the callback could wait
         * on the very delivery we are part of, so only the flag is set
         * here; on_buffer() ends ProcessTrace at the next buffer. */
        InterlockedExchange(&s->stopping, 1);
    }
}

/* Called by ProcessTrace after each buffer; FALSE makes it return with
 * ERROR_CANCELLED (etw-facts.md s.1 [MS-logfile]). */
static ULONG WINAPI on_buffer(PEVENT_TRACE_LOGFILEW lf)
{
    struct etw_source *s = lf->Context;

    return s != NULL && is_stopping(s) ? FALSE : TRUE;
}

static void close_consumer(struct etw_source *s)
{
    if (InterlockedExchange(&s->consumer_open, 0) != 0)
        dm_etw->close_trace(s->consumer); /* 7007 while ProcessTrace runs: fine */
}

/* Stop everything that keeps ProcessTrace going. Any thread, idempotent. */
static void stop_all(struct etw_source *s, char *msg, size_t len)
{
    InterlockedExchange(&s->stopping, 1);
    dm_etw_session_stop(&s->session, msg, len);
    close_consumer(s);
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

/* Wine exports wine_get_version from its ntdll; Windows does not. Used
 * only to explain a failure, never to change behaviour. */
static int under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");

    return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

static int opened(TRACEHANDLE h)
{
    if (h == DM_INVALID_TRACE)
        return 0;
    return sizeof(void *) == 4 ? h != DM_INVALID_TRACE32 : 1;
}

static int etw_open(struct dm_source *src, const struct dm_options *opt)
{
    struct etw_source *s;
    LARGE_INTEGER qpf, qpc;
    FILE *note;
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
    s->consumer = DM_INVALID_TRACE;

    /* Time 0 is now: the tick and the wall clock taken together, before the
     * session exists, so no event can predate them. */
    QueryPerformanceFrequency(&qpf);
    QueryPerformanceCounter(&qpc);
    src->start_wall_ns = dm_wall_ns();
    s->kd = dm_kdecoder_create((uint64_t)qpf.QuadPart, (uint64_t)qpc.QuadPart,
                               (uint64_t)qpf.QuadPart);
    if (s->kd == NULL)
        return DM_ENOMEM;

    rc = dm_etw_session_start(&s->session, opt->force, dm_etw_is_win8_or_later(),
                              src->errmsg, sizeof src->errmsg);
    if (rc < 0)
        return rc;
    note = dm_etw_notice_stream != NULL ? dm_etw_notice_stream : stderr;
    if (s->session.notice[0] != '\0') {
        fputs(s->session.notice, note);
        fflush(note);
    }
    add_volumes(s->kd);

    wcsncpy(s->logger_name, dm_etw_session_name(&s->session),
            sizeof s->logger_name / sizeof s->logger_name[0] - 1);
    s->logfile.LoggerName = s->logger_name;
    s->logfile.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME |
                                  PROCESS_TRACE_MODE_EVENT_RECORD |
                                  PROCESS_TRACE_MODE_RAW_TIMESTAMP;
    s->logfile.EventRecordCallback = on_event;
    s->logfile.BufferCallback = on_buffer;
    s->logfile.Context = s;
    s->consumer = dm_etw->open_trace(&s->logfile);
    if (!opened(s->consumer)) {
        DWORD code = GetLastError();
        char what[128];

        snprintf(what, sizeof what, "opening the real-time session %s (OpenTraceW)",
                 s->session.logger == DM_ETW_PRIVATE_LOGGER ? "\"diskmon\""
                                                            : "\"NT Kernel Logger\"");
        rc = dm_etw_error(code, what, src->errmsg, sizeof src->errmsg);
        if (under_wine()) {
            size_t used = strlen(src->errmsg);

            snprintf(src->errmsg + used, sizeof src->errmsg - used,
                     " (this is Wine, whose ETW functions are stubs: live "
                     "capture needs Windows; -r FILE replays a trace)");
        }
        dm_etw_session_stop(&s->session, NULL, 0);
        return rc < 0 ? rc : DM_EOS;
    }
    s->consumer_open = 1;
    s->default_pointer_size =
        s->logfile.LogfileHeader.PointerSize == 4 || s->logfile.LogfileHeader.PointerSize == 8
            ? (unsigned)s->logfile.LogfileHeader.PointerSize
            : (unsigned)sizeof(void *);
    return 0;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static int etw_run(struct dm_source *src, struct dm_sink *sink)
{
    struct etw_source *s = src->impl;
    ULONG rc = ERROR_SUCCESS;
    int err = 0;

    if (s == NULL)
        return 0;
    s->sink = sink;
    if (!is_stopping(s))
        rc = dm_etw->process_trace(&s->consumer, 1, NULL, NULL);
    if (!is_stopping(s)) {
        /* ProcessTrace returned on its own: the session was stopped from
         * outside (another tool, or diskmon --force elsewhere), or failed. */
        if (rc == ERROR_SUCCESS || rc == DM_WIN_CANCELLED ||
            rc == ERROR_WMI_INSTANCE_NOT_FOUND) {
            snprintf(src->errmsg, sizeof src->errmsg,
                     "the trace session %s was stopped by another program "
                     "(for example 'xperf -stop' or 'diskmon --force')",
                     s->session.logger == DM_ETW_PRIVATE_LOGGER ? "\"diskmon\""
                                                                : "\"NT Kernel Logger\"");
            err = DM_EOS;
        } else {
            err = dm_etw_error(rc, "reading events (ProcessTrace)", src->errmsg,
                               sizeof src->errmsg);
            if (err == 0)
                err = DM_EOS;
        }
    }
    /* Whatever ended ProcessTrace, the session has no reader any more. */
    stop_all(s, NULL, 0);

    /* Losses: the session's counters and the in-stream RT_LostEvent records
     * describe the same losses seen from two sides, so each kind counts the
     * larger of the two rather than their sum. A lost buffer counts as one
     * event: a lower bound, as its size is unknown. */
    src->lost_events += max_u64(s->session.events_lost, s->rt_lost[0]) +
                        max_u64(s->session.rt_buffers_lost, s->rt_lost[1]) +
                        s->rt_lost[2];
    src->malformed = dm_kdecoder_malformed(s->kd);
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
    free(s);
    src->impl = NULL;
}

const struct dm_source_ops dm_etw_source = {
    "etw", etw_open, etw_run, etw_stop, etw_close,
};

const struct dm_source_ops *const dm_live_source = &dm_etw_source;
