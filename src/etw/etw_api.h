/*
 * etw_api.h - the ETW calls the live source makes, behind one table.
 *
 * dm_etw points at the real advapi32 functions. Tests point it at a fake
 * (tests/unit/etw_fake.c) to drive the session and callback logic without
 * Windows, and to record every call so they can check that a session is
 * always stopped. Every ETW call of diskmon goes through it: the session
 * (etw_session.c), --cleanup (etw_cleanup.c), the source's consumer
 * (etw_source.c) and its naming helper (etw_names.c).
 */
#ifndef DM_ETW_API_H
#define DM_ETW_API_H

#include <windows.h>
#include <evntrace.h>
#include <evntcons.h>

struct dm_etw_api {
    ULONG(WINAPI *start_trace)(PTRACEHANDLE handle, LPCWSTR name,
                               PEVENT_TRACE_PROPERTIES props);
    ULONG(WINAPI *control_trace)(TRACEHANDLE handle, LPCWSTR name,
                                 PEVENT_TRACE_PROPERTIES props, ULONG code);
    TRACEHANDLE(WINAPI *open_trace)(PEVENT_TRACE_LOGFILEW logfile);
    ULONG(WINAPI *process_trace)(PTRACEHANDLE handles, ULONG count,
                                 LPFILETIME start, LPFILETIME end);
    ULONG(WINAPI *close_trace)(TRACEHANDLE handle);
    /* TraceSetInformation (advapi32, Windows 7+): diskmon uses only the
     * TraceSystemTraceEnableFlagsInfo class (Windows 8+) to force a file
     * rundown at start (etw_session.c). */
    ULONG(WINAPI *set_information)(TRACEHANDLE handle, TRACE_INFO_CLASS info_class,
                                   PVOID info, ULONG length);
    /* EnableTraceEx2 (Windows 7+): only to enable the kernel rundown
     * provider on the private session's helper (etw_session.c). */
    ULONG(WINAPI *enable_trace)(TRACEHANDLE handle, LPCGUID provider, ULONG control_code,
                                UCHAR level, ULONGLONG match_any, ULONGLONG match_all,
                                ULONG timeout, PENABLE_TRACE_PARAMETERS params);
    /* TraceQueryInformation (advapi32, Windows 8+, so looked up at run
     * time: Windows 7 lacks it and would refuse to load diskmon.exe):
     * only TraceSystemTraceEnableFlagsInfo, to save the whole group mask
     * that the start rundown's toggle restores (etw_session.c). */
    ULONG(WINAPI *query_information)(TRACEHANDLE handle, TRACE_INFO_CLASS info_class,
                                     PVOID info, ULONG length, PULONG returned);
    /* GetSystemInfo and GetActiveProcessorCount: the processors the
     * session's buffers are sized for (etw_logger.c), behind the table so
     * a test can play a machine of several processor groups. */
    VOID(WINAPI *get_system_info)(LPSYSTEM_INFO info);
    DWORD(WINAPI *active_processor_count)(WORD group);
};

/* The table in use; the real one unless a test replaced it. */
extern const struct dm_etw_api *dm_etw;
/* The real advapi32 functions, for tests that restore them. */
extern const struct dm_etw_api dm_etw_real;

#endif /* DM_ETW_API_H */
