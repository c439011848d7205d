/*
 * etw_logger.c - the three sessions diskmon starts (the NT Kernel Logger,
 * the private "diskmon" and the naming helper "diskmon rundown"): their
 * names and GUIDs, the properties buffer ControlTrace and StartTrace take
 * for each, and the one translator of Win32 codes from them into a dm_err
 * and a message. A leaf: the session (etw_session.c) and --cleanup
 * (etw_cleanup.c) both call it, and it calls neither.
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "diskmon.h"
#include "etw/etw_internal.h"
#include "etw/etw_session.h"
#include "platform/platform.h"

/* SystemTraceControlGuid {9e814aad-3204-11d2-9a82-006008a86939}
 * (evntrace.h; the WNODE_HEADER page). */
const GUID dm_etw_system_trace_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

/* diskmon's own, generated once for this project; never reuse elsewhere. */
const GUID dm_etw_private_guid = {
    0x98177c6b, 0x6459, 0x4570, {0x9c, 0xca, 0x91, 0xc5, 0xa0, 0xf5, 0xe9, 0xac}};

/* diskmon's own, for its naming helper session; never reuse elsewhere. */
const GUID dm_etw_rundown_session_guid = {
    0x5a0e4c1d, 0x7b2f, 0x4e8a, {0x9d, 0x31, 0x6c, 0x2b, 0x84, 0xf0, 0x1e, 0x57}};

int dm_etw_elevated_override = -1;

/*
 * Buffer settings. A disk completion record is 72 bytes in the buffer
 * (16-byte PERFINFO header + 52-byte DiskIo v3 payload, 8-aligned); an Init
 * record 48. A fast NVMe disk doing 200,000 I/O per second therefore writes
 * about 15 MB/s of DiskIo records.
 *  - 64 KB buffers: a buffer fills in a few milliseconds under load, so
 *    events reach us promptly, and per-buffer overhead stays small.
 *  - MinimumBuffers 2 per CPU (ETW's documented floor, EVENT_TRACE_PROPERTIES)
 *    plus 16 spare, allocated up front so a burst at start finds buffers
 *    ready.
 *  - MaximumBuffers = minimum + 240: about 16 MB that ETW may grow to (from
 *    non-paged pool, only when needed), which holds roughly one second of
 *    that load while our consumer thread is descheduled. Our callback never
 *    blocks (a full ring drops and counts), so ETW only has to ride out
 *    scheduling delays, not a slow printer.
 *  - FlushTimer DM_ETW_FLUSH_MS in milliseconds (EVENT_TRACE_USE_MS_FLUSH_
 *    TIMER), kept only when the QUERY after the start confirms it
 *    (etw_session.c, check_started); etw_session.h explains the figure,
 *    the fallback and the latency bound.
 *  - Per-processor buffers (no EVENT_TRACE_NO_PER_PROCESSOR_BUFFERING):
 *    Microsoft's Logging Mode Constants page advises against that mode above
 *    about 1,000 events per second, and disk completions alone come far
 *    faster (PerfView made it opt-in, PR #1412). So each CPU fills its own
 *    buffers, and buffers of different CPUs reach us in any order: a
 *    completion can arrive before its thread's DCStart or its Init.
 *    etw_source.c puts records back in time order before decoding.
 */
#define DM_ETW_SPARE_BUFFERS 16u
#define DM_ETW_GROWTH_BUFFERS 240u

const WCHAR *dm_etw_logger_name(enum dm_etw_logger logger)
{
    if (logger == DM_ETW_RUNDOWN_HELPER)
        return DM_ETW_RUNDOWN_NAME;
    return logger == DM_ETW_PRIVATE_LOGGER ? DM_ETW_PRIVATE_NAME
                                           : KERNEL_LOGGER_NAMEW;
}

static const GUID *logger_guid(enum dm_etw_logger logger)
{
    if (logger == DM_ETW_RUNDOWN_HELPER)
        return &dm_etw_rundown_session_guid;
    return logger == DM_ETW_PRIVATE_LOGGER ? &dm_etw_private_guid
                                           : &dm_etw_system_trace_guid;
}

void dm_etw_control_props(struct dm_etw_props *b, enum dm_etw_logger logger)
{
    memset(b, 0, sizeof *b);
    b->p.Wnode.BufferSize = (ULONG)sizeof *b;
    b->p.Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    b->p.Wnode.Guid = *logger_guid(logger);
    b->p.LoggerNameOffset = (ULONG)offsetof(struct dm_etw_props, logger_name);
    b->p.LogFileNameOffset = (ULONG)offsetof(struct dm_etw_props, log_file_name);
}

/* Every processor of the machine, in every processor group: GetSystemInfo
 * counts only the caller's group (SYSTEM_INFO page), and Windows puts each
 * process in one group (Processor Groups page), so on a machine of more
 * than 64 processors two diskmons would size their buffers differently,
 * and --cleanup would not know the other's session (etw_cleanup.c). The
 * same count as etw_source.c's. Through dm_etw, so a test can play a
 * machine of several groups. */
static ULONG cpu_count(void)
{
    DWORD n = dm_etw->active_processor_count(ALL_PROCESSOR_GROUPS);

    if (n == 0) {
        SYSTEM_INFO si;

        dm_etw->get_system_info(&si);
        n = si.dwNumberOfProcessors;
    }
    return n > 0 ? n : 1;
}

void dm_etw_start_props(struct dm_etw_props *b, enum dm_etw_logger logger,
                        ULONG enable_flags)
{
    dm_etw_control_props(b, logger);
    b->p.LogFileNameOffset = 0;
    b->p.Wnode.ClientContext = DM_ETW_CLOCK_QPC;
    b->p.BufferSize = DM_ETW_BUFFER_KB;
    b->p.MinimumBuffers = 2 * cpu_count() + DM_ETW_SPARE_BUFFERS;
    b->p.MaximumBuffers = b->p.MinimumBuffers + DM_ETW_GROWTH_BUFFERS;
    b->p.FlushTimer = DM_ETW_FLUSH_MS;
    b->p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE | EVENT_TRACE_USE_MS_FLUSH_TIMER;
    if (logger == DM_ETW_PRIVATE_LOGGER)
        b->p.LogFileMode |= EVENT_TRACE_SYSTEM_LOGGER_MODE;
    b->p.EnableFlags = enable_flags;
}

int dm_etw_error(unsigned long code, const char *what, char *msg, size_t len)
{
    char text[256];
    const char *advice = "";
    int err;

    dm_win32_strerror(code, text, sizeof text);
    /* The generic meaning from the platform's one translator; the session
     * adds advice for the codes whose remedy it knows. */
    err = dm_err_from_win32(code);
    if (err == 0)
        err = DM_EOS; /* a failure reported with ERROR_SUCCESS: still one */
    switch (code) {
    case DM_WIN_ACCESS_DENIED:
        /* Advice to elevate only helps who is not elevated already. */
        advice = dm_etw_is_elevated()
                     ? ": diskmon already runs elevated, so a security policy "
                       "or a protected process denies it"
                     : ": only administrators can trace the kernel; run "
                       "diskmon from an elevated prompt (Run as administrator)";
        break;
    case DM_WIN_NO_SYSTEM_RESOURCES:
        advice = ": all trace sessions are in use; list them with "
                 "'logman query -ets' and stop one you do not need with "
                 "'logman stop NAME -ets'";
        break;
    default:
        break;
    }
    if (msg != NULL && len > 0)
        snprintf(msg, len, "%s failed: error %lu (%s)%s", what, code, text,
                 advice);
    return err;
}

int dm_etw_is_elevated(void)
{
    TOKEN_ELEVATION elevation;
    HANDLE token;
    DWORD got = 0;
    BOOL ok;

    if (dm_etw_elevated_override >= 0)
        return dm_etw_elevated_override;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return 0;
    ok = GetTokenInformation(token, TokenElevation, &elevation, sizeof elevation, &got);
    CloseHandle(token);
    return ok && elevation.TokenIsElevated != 0;
}
