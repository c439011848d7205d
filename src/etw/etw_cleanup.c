/*
 * etw_cleanup.c - recognising and stopping the sessions a diskmon that was
 * killed or crashed left running (--cleanup, and the note at start).
 *
 * A kill, a crash, a console close after its 5 s or a logoff end diskmon
 * without its handlers, and a session started by a process outlives it.
 * "diskmon" and "diskmon rundown" carry diskmon's own names and GUIDs, so
 * they are diskmon's whoever started them. The NT Kernel Logger is anyone's:
 * it is taken for a leftover only when its settings are exactly those
 * diskmon leaves and no other diskmon runs, and is reached by name (the
 * only way to a session that is not ours), right after the QUERY that
 * recognised it.
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>
#include <tlhelp32.h>

#include "diskmon.h"
#include "etw/etw_internal.h"

int dm_etw_other_diskmon_override = -1;

/* Whether another process named diskmon.exe runs (a Toolhelp snapshot of
 * the processes), or what dm_etw_other_diskmon_override pretends. When the
 * snapshot fails the answer is "yes": never take a live diskmon's session
 * for a leftover. */
static int other_diskmon_running(void)
{
    PROCESSENTRY32W pe;
    HANDLE snap;
    DWORD self = GetCurrentProcessId();
    int found = 0;

    if (dm_etw_other_diskmon_override >= 0)
        return dm_etw_other_diskmon_override;
    snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    if (snap == INVALID_HANDLE_VALUE)
        return 1;
    pe.dwSize = sizeof pe;
    for (BOOL ok = Process32FirstW(snap, &pe); ok && !found; ok = Process32NextW(snap, &pe))
        found = pe.th32ProcessID != self && _wcsicmp(pe.szExeFile, L"diskmon.exe") == 0;
    CloseHandle(snap);
    return found;
}

/* EVENT_TRACE_FILE_MODE_SEQUENTIAL, _CIRCULAR, _APPEND, _NEWFILE
 * (evntrace.h): a session with any of them writes a file. */
#define DM_ETW_FILE_MODES 0x0000000Fu

/*
 * The settings diskmon starts with (flags, buffer sizes, real time only,
 * no log file), for Windows 7's or Windows 8's flags, and a FlushTimer as
 * diskmon leaves it in either flush mode (etw_session.c check_started):
 * DM_ETW_FLUSH_MS where Windows kept the millisecond timer, or the
 * fallback's DM_ETW_FALLBACK_FLUSH_S; EVENT_TRACE_USE_MS_FLUSH_TIMER is not
 * required, since Windows may have dropped it. And no other diskmon process
 * runs. A QUERY by name is the only way to ask about a session that is not
 * ours; it changes nothing.
 */
int dm_etw_leftover(enum dm_etw_logger logger)
{
    struct dm_etw_props got, want;
    const ULONG flags8 = EVENT_TRACE_FLAG_PROCESS | EVENT_TRACE_FLAG_THREAD |
                         EVENT_TRACE_FLAG_DISK_IO | EVENT_TRACE_FLAG_DISK_FILE_IO;

    dm_etw_control_props(&got, logger);
    if (dm_etw->control_trace(0, dm_etw_logger_name(logger), &got.p,
                              EVENT_TRACE_CONTROL_QUERY) != ERROR_SUCCESS)
        return 0;
    dm_etw_start_props(&want, logger, flags8);
    if ((got.p.EnableFlags != flags8 &&
         got.p.EnableFlags != (flags8 | EVENT_TRACE_FLAG_DISK_IO_INIT)) ||
        got.p.BufferSize != want.p.BufferSize ||
        got.p.MinimumBuffers != want.p.MinimumBuffers ||
        got.p.MaximumBuffers != want.p.MaximumBuffers ||
        (got.p.FlushTimer != DM_ETW_FLUSH_MS && got.p.FlushTimer != DM_ETW_FALLBACK_FLUSH_S) ||
        !(got.p.LogFileMode & EVENT_TRACE_REAL_TIME_MODE) ||
        (got.p.LogFileMode & DM_ETW_FILE_MODES) != 0 || got.log_file_name[0] != 0)
        return 0;
    return !other_diskmon_running();
}

int dm_etw_cleanup(char *msg, size_t len)
{
    struct dm_etw_props b;
    ULONG rc;
    int stopped_private = 0, stopped_kernel = 0, kernel_other = 0;

    /* "diskmon" with diskmon's GUID is ours whoever started it. */
    dm_etw_control_props(&b, DM_ETW_PRIVATE_LOGGER);
    rc = dm_etw->control_trace(0, DM_ETW_PRIVATE_NAME, &b.p,
                               EVENT_TRACE_CONTROL_STOP);
    if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA)
        stopped_private = 1;
    else if (rc != DM_WIN_INSTANCE_NOT_FOUND)
        return dm_etw_error(rc, "stopping the trace session \"diskmon\" (--cleanup)",
                            msg, len);
    /* The naming helper: diskmon's name and GUID too. */
    dm_etw_control_props(&b, DM_ETW_RUNDOWN_HELPER);
    rc = dm_etw->control_trace(0, DM_ETW_RUNDOWN_NAME, &b.p, EVENT_TRACE_CONTROL_STOP);
    if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA)
        stopped_private = 1;
    /* The NT Kernel Logger only when a killed diskmon left it: by name,
     * the only handle there is, right after the QUERY that recognised it. */
    if (dm_etw_leftover(DM_ETW_KERNEL_LOGGER)) {
        dm_etw_control_props(&b, DM_ETW_KERNEL_LOGGER);
        rc = dm_etw->control_trace(0, KERNEL_LOGGER_NAMEW, &b.p,
                                   EVENT_TRACE_CONTROL_STOP);
        if (rc == ERROR_SUCCESS || rc == DM_WIN_MORE_DATA)
            stopped_kernel = 1;
        else if (rc != DM_WIN_INSTANCE_NOT_FOUND)
            return dm_etw_error(rc,
                                "stopping the NT Kernel Logger a diskmon left "
                                "running (--cleanup)",
                                msg, len);
    } else {
        dm_etw_control_props(&b, DM_ETW_KERNEL_LOGGER);
        kernel_other = dm_etw->control_trace(0, KERNEL_LOGGER_NAMEW, &b.p,
                                             EVENT_TRACE_CONTROL_QUERY) == ERROR_SUCCESS;
    }
    if (stopped_private || stopped_kernel) {
        snprintf(msg, len, "stopped %s left running by a diskmon that did not "
                           "exit cleanly",
                 stopped_private && stopped_kernel
                     ? "the trace sessions \"diskmon\" and \"NT Kernel Logger\""
                 : stopped_private ? "the trace session \"diskmon\""
                                   : "the NT Kernel Logger");
        return 0;
    }
    snprintf(msg, len,
             "no trace session left by diskmon was running; nothing to clean "
             "up%s",
             kernel_other ? " (the NT Kernel Logger that runs belongs to "
                            "another program: diskmon --force takes it over)"
                          : "");
    return DM_ENOTFOUND;
}
