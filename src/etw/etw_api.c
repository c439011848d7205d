/*
 * etw_api.c - the real ETW functions, as the default dm_etw table.
 *
 * The table holds local wrappers, not the advapi32 functions themselves:
 * those are declared __declspec(dllimport) (WMIAPI), so their address is
 * not a constant, and MSVC warns C4232 ("address of dllimport is not
 * static, identity not guaranteed") for a static initializer that takes it;
 * the presets build with /W4 /WX, where that is an error. A wrapper is an
 * ordinary function of this file, so its address is a constant, and the
 * compiler turns each wrapper into a single jump.
 */
#include "etw/etw_api.h"

static ULONG WINAPI real_start_trace(PTRACEHANDLE handle, LPCWSTR name,
                                     PEVENT_TRACE_PROPERTIES props)
{
    return StartTraceW(handle, name, props);
}

static ULONG WINAPI real_control_trace(TRACEHANDLE handle, LPCWSTR name,
                                       PEVENT_TRACE_PROPERTIES props, ULONG code)
{
    return ControlTraceW(handle, name, props, code);
}

static TRACEHANDLE WINAPI real_open_trace(PEVENT_TRACE_LOGFILEW logfile)
{
    return OpenTraceW(logfile);
}

static ULONG WINAPI real_process_trace(PTRACEHANDLE handles, ULONG count,
                                       LPFILETIME start, LPFILETIME end)
{
    return ProcessTrace(handles, count, start, end);
}

static ULONG WINAPI real_close_trace(TRACEHANDLE handle)
{
    return CloseTrace(handle);
}

static ULONG WINAPI real_set_information(TRACEHANDLE handle, TRACE_INFO_CLASS info_class,
                                         PVOID info, ULONG length)
{
    return TraceSetInformation(handle, info_class, info, length);
}

static ULONG WINAPI real_enable_trace(TRACEHANDLE handle, LPCGUID provider,
                                      ULONG control_code, UCHAR level,
                                      ULONGLONG match_any, ULONGLONG match_all,
                                      ULONG timeout, PENABLE_TRACE_PARAMETERS params)
{
    return EnableTraceEx2(handle, provider, control_code, level, match_any, match_all,
                          timeout, params);
}

typedef ULONG(WINAPI *query_information_fn)(TRACEHANDLE, TRACE_INFO_CLASS, PVOID, ULONG,
                                            PULONG);

/* ERROR_CALL_NOT_IMPLEMENTED where advapi32 has no TraceQueryInformation
 * (Windows 7). */
static ULONG WINAPI real_query_information(TRACEHANDLE handle, TRACE_INFO_CLASS info_class,
                                           PVOID info, ULONG length, PULONG returned)
{
    static query_information_fn fn;
    static int looked;

    if (!looked) {
        HMODULE advapi = GetModuleHandleW(L"advapi32.dll");
        FARPROC p = advapi != NULL ? GetProcAddress(advapi, "TraceQueryInformation") : NULL;

        /* Through void (*)(void): GCC's -Wcast-function-type takes that
         * detour as an intended cast (as platform/win32.c does). */
        fn = p != NULL ? (query_information_fn)(void (*)(void))p : NULL;
        looked = 1;
    }
    if (fn == NULL)
        return ERROR_CALL_NOT_IMPLEMENTED;
    return fn(handle, info_class, info, length, returned);
}

static VOID WINAPI real_get_system_info(LPSYSTEM_INFO info)
{
    GetSystemInfo(info);
}

static DWORD WINAPI real_active_processor_count(WORD group)
{
    return GetActiveProcessorCount(group);
}

const struct dm_etw_api dm_etw_real = {
    real_start_trace,       real_control_trace,   real_open_trace,
    real_process_trace,     real_close_trace,     real_set_information,
    real_enable_trace,      real_query_information, real_get_system_info,
    real_active_processor_count,
};

const struct dm_etw_api *dm_etw = &dm_etw_real;
