/*
 * unknown.c - "N requests of unknown FIELD not shown" (unknown.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "views/unknown.h"

void dm_unknown_append(char *buf, size_t cap, const uint64_t unknown[DM_FIELD_COUNT],
                       const char *sep)
{
    for (int i = 0; i < DM_FIELD_COUNT; i++) {
        size_t n = strlen(buf);

        if (unknown[i] == 0 || n >= cap)
            continue;
        snprintf(buf + n, cap - n, "%s%" PRIu64 " request%s of unknown %s not shown", sep,
                 unknown[i], unknown[i] == 1 ? "" : "s", dm_field_names[i]);
    }
}
