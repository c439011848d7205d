/*
 * event.c - the names of requests, as the Request column prints them.
 */
#include "diskmon.h"

/* DiskMon's own words for the first three; Linux adds discards. */
const char *const dm_request_names[DM_REQ_COUNT] = {
    "Read", "Write", "Flush", "Discard",
};
