/*
 * etw_internal.h - what the session code (etw_session.c) and --cleanup
 * (etw_cleanup.c) share: the properties buffer ControlTrace and StartTrace
 * take, how diskmon fills it (etw_logger.c, below both), and the Win32
 * codes they tell apart. Not for the source (etw_source.c), which goes
 * through etw_session.h.
 */
#ifndef DM_ETW_INTERNAL_H
#define DM_ETW_INTERNAL_H

#include <stddef.h>

#include "etw/etw_session.h"

/* Win32 codes the session logic tells apart (winerror.h). */
#define DM_WIN_ACCESS_DENIED 5u
#define DM_WIN_ALREADY_EXISTS 183u
#define DM_WIN_MORE_DATA 234u            /* STOP: stopped, name buffer short */
#define DM_WIN_NO_SYSTEM_RESOURCES 1450u /* no free logger slot */
#define DM_WIN_ACTIVE_CONNECTIONS 2402u  /* STOP: the session is already stopping */
#define DM_WIN_INSTANCE_NOT_FOUND 4201u  /* ERROR_WMI_INSTANCE_NOT_FOUND */

/* Wnode.ClientContext 1: QueryPerformanceCounter timestamps (WNODE_HEADER). */
#define DM_ETW_CLOCK_QPC 1u

/*
 * EVENT_TRACE_PROPERTIES followed by room for the two names ControlTrace may
 * write back (1024 characters each, the documented maximum,
 * EVENT_TRACE_PROPERTIES page). The struct is 0x78 bytes on x86 and x64, a
 * multiple of 8, so logger_name starts right after it; offsetof says so
 * exactly.
 */
struct dm_etw_props {
    EVENT_TRACE_PROPERTIES p;
    WCHAR logger_name[1024];
    WCHAR log_file_name[1024];
};

const WCHAR *dm_etw_logger_name(enum dm_etw_logger logger);
/* Properties for ControlTrace (QUERY, STOP, FLUSH): size, GUID, name room. */
void dm_etw_control_props(struct dm_etw_props *b, enum dm_etw_logger logger);
/* Properties for StartTrace: real time, no log file, diskmon's buffers and
 * flush timer (etw_logger.c explains each). */
void dm_etw_start_props(struct dm_etw_props *b, enum dm_etw_logger logger,
                        ULONG enable_flags);

/* Whether the running session of this name is one a killed or crashed
 * diskmon left behind (etw_cleanup.c). */
int dm_etw_leftover(enum dm_etw_logger logger);

#endif /* DM_ETW_INTERNAL_H */
