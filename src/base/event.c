/*
 * event.c - the names of requests, as the Request column prints them.
 */
#include "diskmon.h"

/* DiskMon's own words for the first three; Linux adds discards. */
const char *const dm_request_names[DM_REQ_COUNT] = {
    "Read", "Write", "Flush", "Discard",
};

/* The words of dm_event.req_flags, bit 0 first: csv/json print them in this
 * order, joined with '|', and --flags takes them. Linux's come from rwbs,
 * Windows' from IrpFlags (diskmon.h); docs/output.md lists them. */
const char *const dm_req_flag_names[DM_RQ_COUNT] = {
    "preflush", "fua", "sync", "meta", "readahead", "secure",
    "nocache", "paging", "sync_api", "associated", "buffered", "sync_paging",
};

/* enum dm_field, as the unknown counts name them (views/unknown.h). */
const char *const dm_field_names[DM_FIELD_COUNT] = {
    "pid", "process name", "cgroup",
};
