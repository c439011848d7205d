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

/* The UTF-8 byte order mark a Windows editor may put first. */
#define UTF8_BOM "\xEF\xBB\xBF"

const char *dm_input_first_line(const char *head, size_t len, size_t *line_len)
{
    const char *nl;

    if (len >= 3 && memcmp(head, UTF8_BOM, 3) == 0) {
        head += 3;
        len -= 3;
    }
    nl = memchr(head, '\n', len);
    *line_len = nl != NULL ? (size_t)(nl - head) : len;
    if (*line_len > 0 && head[*line_len - 1] == '\r')
        (*line_len)--;
    return head;
}
