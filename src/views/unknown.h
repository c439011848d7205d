/*
 * unknown.h - the words for requests a filter could not decide on (core/
 * filter.h, struct dm_filter_unknown): "3 requests of unknown cgroup not
 * shown", said the same way at the end of the run and on --top's time line.
 */
#ifndef DM_VIEWS_UNKNOWN_H
#define DM_VIEWS_UNKNOWN_H

#include <stddef.h>
#include <stdint.h>

#include "diskmon.h"

/* Append, for each field with a count, sep then "N request(s) of unknown
 * FIELD not shown" to the NUL-terminated text in buf (cap bytes; cut, never
 * overrun). Appends nothing when every count is 0. */
void dm_unknown_append(char *buf, size_t cap, const uint64_t unknown[DM_FIELD_COUNT],
                       const char *sep);

#endif /* DM_VIEWS_UNKNOWN_H */
