/*
 * notes.c - the notes a source hands to the pipeline (diskmon.h, struct
 * dm_notes); output/text.c writes them to the error stream.
 */
#include <stdarg.h>
#include <stdio.h>

#include "diskmon.h"

void dm_note(struct dm_notes *n, const char *fmt, ...)
{
    va_list ap;
    size_t room;
    int w;

    if (n == NULL || n->len + 1 >= sizeof n->text)
        return;
    room = sizeof n->text - n->len;
    va_start(ap, fmt);
    w = vsnprintf(n->text + n->len, room, fmt, ap);
    va_end(ap);
    if (w < 0)
        n->text[n->len] = '\0';
    else if ((size_t)w < room)
        n->len += (size_t)w;
    else { /* cut, but still a line */
        n->len = sizeof n->text - 1;
        n->text[n->len - 1] = '\n';
    }
}
