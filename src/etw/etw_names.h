/*
 * etw_names.h - what etw_names.c gives the source (etw_source.c): opening a
 * real-time consumer (the source's own and the naming helper's take the
 * same trace mode, so one place opens both), the start rundown and the
 * naming helper. etw_names.c calls nothing in etw_source.c: the source is
 * above it.
 */
#ifndef DM_ETW_NAMES_H
#define DM_ETW_NAMES_H

#include <stddef.h>

#include "etw/etw_source_internal.h"

/* OpenTrace's failure value: INVALID_PROCESSTRACE_HANDLE, which 32-bit
 * Vista and 7 return zero-extended as 0x00000000FFFFFFFF (docs/etw.md §1
 * [MS-open]); a 32-bit build checks both spellings. */
#define DM_INVALID_TRACE ((TRACEHANDLE) ~(ULONG64)0)
#define DM_INVALID_TRACE32 ((TRACEHANDLE)0xFFFFFFFFu)

/* A consumer handle from OpenTrace, checked against both failure values. */
static inline int dm_etw_opened(TRACEHANDLE h)
{
    if (h == DM_INVALID_TRACE)
        return 0;
    return sizeof(void *) == 4 ? h != DM_INVALID_TRACE32 : 1;
}

/* Open a real-time consumer of logger name with diskmon's trace mode
 * (raw QPC timestamps, EVENT_RECORD callbacks) and s as the context. */
TRACEHANDLE dm_etw_open_consumer(struct etw_source *s, EVENT_TRACE_LOGFILEW *lf,
                                 WCHAR *name, size_t name_len, const WCHAR *logger,
                                 PEVENT_RECORD_CALLBACK on_record,
                                 PEVENT_TRACE_BUFFER_CALLBACKW on_buf);

/* The start rundown, just before ProcessTrace. */
int dm_etw_source_start_rundown(struct dm_source *src, struct etw_source *s);

/* CloseTrace of the helper's consumer, once. Any thread. */
void dm_etw_close_helper(struct etw_source *s);

#endif /* DM_ETW_NAMES_H */
