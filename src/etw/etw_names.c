/*
 * etw_names.c - opening a real-time consumer (the source's and the naming
 * helper's, etw_names.h), and the names of the files open before the
 * session started: the start rundown, asked for after OpenTrace and just
 * before ProcessTrace (etw_session.h), and, where the private session
 * refuses the kernel rundown provider on its own handle, the helper session
 * "diskmon rundown" and its consumer, on a thread of its own, whose
 * FileRundown names go straight to the decoder under ro_lock (etw_source.c
 * file comment).
 */
#include <stdio.h>
#include <string.h>

#include "etw/etw_names.h"
#include "etw/etw_source_internal.h"

/* The naming helper's EventRecordCallback: FileIo name records (the
 * kernel rundown provider's FileRundown) go straight to the decoder's file
 * table, not through the reorder stage: they name files that were open
 * before the session, so their names hold for every I/O from now on. */
static VOID WINAPI on_helper_event(PEVENT_RECORD er)
{
    struct etw_source *s = er->UserContext;
    const EVENT_HEADER *h = &er->EventHeader;
    struct dm_krecord rec;
    struct dm_event ev;
    uint8_t guid[16];

    if (s == NULL)
        return;
    memcpy(guid, &h->ProviderId, sizeof guid);
    rec.kclass = dm_kclass_from_guid(guid);
    if (rec.kclass != DM_K_FILEIO)
        return;
    dm_etw_fill_record(s, er, &rec);
    rec.tid = DM_KNO_ID; /* names only: no thread or process is meant */
    rec.pid = DM_KNO_ID;
    dm_etw_ro_enter(s);
    dm_etw_ro_check(s);
    if (rec.opcode == DM_FILEIO_RUNDOWN)
        s->rundown_names++;
    dm_kdecode(s->kd, &rec, &ev);
    dm_etw_ro_leave(s);
}

static ULONG WINAPI on_helper_buffer(PEVENT_TRACE_LOGFILEW lf)
{
    struct etw_source *s = lf->Context;

    if (s != NULL)
        InterlockedIncrement(&s->helper_buffers);
    return TRUE;
}

/* Before the main consumer starts: let the helper's rundown in first, so
 * that the first I/O lines already have their names. Windows buffers the
 * main session's events meanwhile (etw_logger.c: about a second of a busy
 * disk). Done when the helper delivered a buffer and then none for
 * HELPER_QUIET_MS, or after HELPER_WAIT_MS at most (the rundown's size is
 * not known in advance; names that come later still name later I/O). */
#define HELPER_WAIT_MS 2000u
#define HELPER_QUIET_MS (2u * DM_ETW_FLUSH_MS)
#define HELPER_POLL_MS 20u

static void wait_for_helper(struct etw_source *s)
{
    LONG seen = 0;
    unsigned quiet = 0;

    for (unsigned waited = 0; waited < HELPER_WAIT_MS; waited += HELPER_POLL_MS) {
        LONG now = InterlockedCompareExchange(&s->helper_buffers, 0, 0);

        if (now != seen) {
            seen = now;
            quiet = 0;
        } else if (seen > 0 && (quiet += HELPER_POLL_MS) >= HELPER_QUIET_MS) {
            return;
        }
        Sleep(HELPER_POLL_MS);
    }
}

static void helper_main(void *arg)
{
    struct etw_source *s = arg;

    dm_etw->process_trace(&s->helper_consumer, 1, NULL, NULL);
}

TRACEHANDLE dm_etw_open_consumer(struct etw_source *s, EVENT_TRACE_LOGFILEW *lf,
                                 WCHAR *name, size_t name_len, const WCHAR *logger,
                                 PEVENT_RECORD_CALLBACK on_record,
                                 PEVENT_TRACE_BUFFER_CALLBACKW on_buf)
{
    wcsncpy(name, logger, name_len - 1);
    lf->LoggerName = name;
    lf->ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME |
                           PROCESS_TRACE_MODE_EVENT_RECORD |
                           PROCESS_TRACE_MODE_RAW_TIMESTAMP;
    lf->EventRecordCallback = on_record;
    lf->BufferCallback = on_buf;
    lf->Context = s;
    return dm_etw->open_trace(lf);
}

/* The note for names the private session may lack, and why. */
static void note_names_missing(struct dm_source *src, const char *why, unsigned long code)
{
    dm_note(&src->notes,
            "diskmon: note: on the private session, files opened before "
            "diskmon started may show no name until they are opened again "
            "(%s error %lu; --force uses the NT Kernel Logger instead)\n",
            why, code);
}

/* The helper fallback (etw_session.h): start "diskmon rundown", open its
 * consumer, then enable the rundown provider on it (after OpenTrace, as
 * for the session itself), and start its consumer thread. Returns 1 when
 * its thread runs. */
static int start_helper(struct dm_source *src, struct etw_source *s)
{
    if (dm_etw_helper_start(&s->session) != 0) {
        note_names_missing(src, "the kernel rundown session could not be started: StartTrace",
                           s->session.rundown_error);
        return 0;
    }
    s->helper_consumer = dm_etw_open_consumer(s, &s->helper_logfile, s->helper_name,
                                       sizeof s->helper_name / sizeof s->helper_name[0],
                                       DM_ETW_RUNDOWN_NAME, on_helper_event,
                                       on_helper_buffer);
    if (!dm_etw_opened(s->helper_consumer)) {
        s->session.rundown = DM_ETW_RUNDOWN_REFUSED;
        s->session.rundown_error = GetLastError();
        dm_etw_helper_stop(&s->session);
        note_names_missing(src, "the kernel rundown session could not be read: OpenTrace",
                           s->session.rundown_error);
        return 0;
    }
    s->helper_open = 1;
    if (dm_etw_helper_enable(&s->session) != 0) {
        note_names_missing(src, "the kernel rundown provider was refused: EnableTraceEx2",
                           s->session.rundown_error);
        return 0; /* its consumer is closed with the rest (stop_all) */
    }
    if (dm_thread_start(&s->helper_thread, helper_main, s) != 0) {
        s->helper_thread = NULL;
        return 0;
    }
    return 1;
}

void dm_etw_close_helper(struct etw_source *s)
{
    if (InterlockedExchange(&s->helper_open, 0) != 0)
        dm_etw->close_trace(s->helper_consumer);
}

/*
 * The start rundown, just before ProcessTrace (file comment): the session's
 * own way first, the helper where the private session refused it; then
 * the "start rundown" info line, and a note when names may be missing.
 * Returns 0, or a negative dm_err when the session lost its flags (the
 * toggle's second call failed; the session was stopped).
 */
int dm_etw_source_start_rundown(struct dm_source *src, struct etw_source *s)
{
    struct dm_etw_session *ss = &s->session;
    char line[192];
    int err = dm_etw_start_rundown(ss, src->errmsg, sizeof src->errmsg);

    if (err < 0)
        return err;
    if (ss->rundown == DM_ETW_RUNDOWN_BY_HELPER && start_helper(src, s))
        wait_for_helper(s);
    switch (ss->rundown) {
    case DM_ETW_RUNDOWN_BY_TOGGLE:
        snprintf(line, sizeof line, "asked (TraceSetInformation group-mask toggle)");
        break;
    case DM_ETW_RUNDOWN_BY_PROVIDER:
        snprintf(line, sizeof line, "asked (KernelRundownGuid on the session's own handle)");
        break;
    case DM_ETW_RUNDOWN_BY_HELPER:
        snprintf(line, sizeof line,
                 "asked (KernelRundownGuid on the helper session \"diskmon rundown\"; "
                 "the session's own handle refused it: error %lu)",
                 (unsigned long)ss->rundown_error);
        break;
    case DM_ETW_RUNDOWN_REFUSED:
        snprintf(line, sizeof line, "refused (%s error %lu)",
                 ss->logger == DM_ETW_KERNEL_LOGGER ? "TraceSetInformation" : "kernel rundown",
                 (unsigned long)ss->rundown_error);
        if (ss->logger == DM_ETW_KERNEL_LOGGER)
            dm_note(&src->notes,
                    "diskmon: note: could not ask Windows for the names of "
                    "files already open (TraceSetInformation error %lu); their "
                    "I/O shows no file name until they are opened again\n",
                    (unsigned long)ss->rundown_error);
        break;
    default:
        snprintf(line, sizeof line, "not asked (%s)",
                 ss->win8 ? "no session" : "before Windows 8: no way to ask for it");
        break;
    }
    dm_etw_ro_enter(s);
    dm_note(&src->info, "start rundown: %s\n", line);
    dm_etw_ro_leave(s);
    return 0;
}

