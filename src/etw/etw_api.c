/*
 * etw_api.c - the real ETW functions, as the default dm_etw table.
 */
#include "etw/etw_api.h"

const struct dm_etw_api dm_etw_real = {
    StartTraceW, ControlTraceW, OpenTraceW, ProcessTrace, CloseTrace,
};

const struct dm_etw_api *dm_etw = &dm_etw_real;
