/*
 * input_list.c - the table of formats (input/input_list.h) and the
 * questions asked of it: by name, by the input's first bytes, all names.
 */
#include <stdio.h>
#include <string.h>

#include "input/input.h"

static const struct dm_input_format *const formats[] = {
#define DM_INPUT(name) &dm_##name##_input,
#include "input/input_list.h"
#undef DM_INPUT
};

#define N_FORMATS (sizeof formats / sizeof formats[0])

const struct dm_input_format *dm_input_by_name(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (strcmp(formats[i]->name, name) == 0)
            return formats[i];
    return NULL;
}

const struct dm_input_format *dm_input_sniff(const char *head, size_t len)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (formats[i]->sniff(head, len))
            return formats[i];
    return NULL;
}

void dm_input_names(char *buf, size_t cap)
{
    size_t len = 0;

    if (cap == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < N_FORMATS && len < cap; i++) {
        int n = snprintf(buf + len, cap - len, "%s%s (%s)", i > 0 ? ", " : "",
                         formats[i]->name, formats[i]->what);

        if (n < 0)
            break;
        len += (size_t)n;
    }
}
