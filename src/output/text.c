/*
 * text.c - output text through the one writer (text.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "output/text.h"
#include "platform/platform.h"

#define TEXT_FIRST_CAP 1024u
/* A message of dm_writef fits here; a longer one takes the heap. */
#define WRITEF_STACK 1024

/* Room for n more bytes and a NUL; 0, or -1 (and failed set). */
static int reserve(struct dm_text *t, size_t n)
{
    size_t cap = t->cap ? t->cap : TEXT_FIRST_CAP;
    char *p;

    if (t->failed)
        return -1;
    if (t->cap - t->len > n)
        return 0;
    while (cap - t->len <= n) {
        if (cap > ((size_t)-1) / 2) {
            t->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    p = realloc(t->data, cap);
    if (p == NULL) {
        t->failed = 1;
        return -1;
    }
    t->data = p;
    t->cap = cap;
    return 0;
}

void dm_text_put(struct dm_text *t, const char *s, size_t n)
{
    if (reserve(t, n) != 0)
        return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void dm_text_puts(struct dm_text *t, const char *s)
{
    dm_text_put(t, s, strlen(s));
}

void dm_text_putc(struct dm_text *t, char c)
{
    dm_text_put(t, &c, 1);
}

/* vsnprintf returns the length the text needs; MSVCRT's, which MinGW may
 * link, returns -1 instead when it was cut: then the room is doubled, up to
 * TEXT_PRINTF_MAX. */
#define TEXT_PRINTF_MAX (1u << 20)

void dm_text_printf(struct dm_text *t, const char *fmt, ...)
{
    size_t want = 64;

    for (;;) {
        va_list ap;
        size_t room;
        int n;

        if (reserve(t, want) != 0)
            return;
        room = t->cap - t->len;
        va_start(ap, fmt);
        n = vsnprintf(t->data + t->len, room, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        t->data[t->len] = '\0';
        want = n >= 0 ? (size_t)n : 2 * room;
        if (want > TEXT_PRINTF_MAX) {
            t->failed = 1;
            return;
        }
    }
}

int dm_text_write(struct dm_text *t, FILE *f)
{
    int failed = t->failed, rc = 0;

    if (t->len > 0)
        rc = dm_write_all(f, t->data, t->len);
    dm_text_empty(t);
    t->failed = 0;
    if (rc == 0 && failed) {
        errno = ENOMEM;
        rc = -1;
    }
    return rc;
}

void dm_text_empty(struct dm_text *t)
{
    t->len = 0;
    if (t->data != NULL)
        t->data[0] = '\0';
}

void dm_text_free(struct dm_text *t)
{
    free(t->data);
    memset(t, 0, sizeof *t);
}

int dm_writef(FILE *f, const char *fmt, ...)
{
    char stack[WRITEF_STACK];
    struct dm_text big = {0};
    va_list ap;
    int n, rc;

    va_start(ap, fmt);
    n = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof stack)
        return dm_write_all(f, stack, (size_t)n);
    /* Longer than the stack buffer (or MSVCRT's -1): through a dm_text. */
    for (size_t want = n >= 0 ? (size_t)n : 2 * sizeof stack;; want *= 2) {
        if (reserve(&big, want) != 0)
            break;
        va_start(ap, fmt);
        n = vsnprintf(big.data, big.cap, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < big.cap) {
            big.len = (size_t)n;
            break;
        }
        if (want > TEXT_PRINTF_MAX) {
            big.failed = 1;
            break;
        }
    }
    stack[sizeof stack - 1] = '\0'; /* MSVCRT leaves a cut one unended */
    rc = big.len > 0 ? dm_write_all(f, big.data, big.len)
                     : dm_write_all(f, stack, strlen(stack)); /* cut, rather than none */
    dm_text_free(&big);
    return rc;
}

void dm_notes_flush(struct dm_notes *n, FILE *errf)
{
    if (n->shown >= n->len)
        return;
    /* The one writer (output/text.h): a console gets UTF-16, whatever its
     * code page. */
    dm_write_all(errf, n->text + n->shown, n->len - n->shown);
    n->shown = n->len;
}
