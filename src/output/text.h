/*
 * text.h - text for stdout and stderr, written only through dm_write_all
 * (platform.h), never through stdio: that one writer takes every byte
 * diskmon prints to the OS with the OS's own calls and error codes. On
 * Windows that is what keeps a console's text right (WriteConsoleW, in
 * UTF-16, whatever the console's code page) and a closed pipe quiet (the
 * CRT would turn ERROR_NO_DATA into EINVAL, "Invalid argument"), for the
 * event lines, --top, the -s summary, --help and every message alike.
 *
 * A struct dm_text is a growing buffer that a view (--top, the -s summary)
 * draws into and then writes out in one call; dm_writef is one formatted
 * message (an error, a note) straight out. A memory stream (tests) gets the
 * bytes by fwrite, as dm_write_all does for any stream without a file.
 */
#ifndef DM_TEXT_H
#define DM_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "diskmon.h"

struct dm_text {
    char *data;     /* len bytes, then a NUL; NULL until the first byte */
    size_t len;
    size_t cap;
    int failed;     /* out of memory: bytes were lost (dm_text_write fails) */
};

void dm_text_put(struct dm_text *t, const char *s, size_t n);
void dm_text_puts(struct dm_text *t, const char *s);
void dm_text_putc(struct dm_text *t, char c);
void dm_text_printf(struct dm_text *t, const char *fmt, ...) DM_PRINTF(2, 3);

/* Write the text to f (dm_write_all) and empty it. Returns 0, or -1 with
 * errno set (EPIPE: the reader went away; ENOMEM: the text was cut). */
int dm_text_write(struct dm_text *t, FILE *f);
/* Empty the text, keeping its room (and failed: bytes lost stay said). */
void dm_text_empty(struct dm_text *t);
void dm_text_free(struct dm_text *t);

/* One message to f through dm_write_all. Returns 0 or -1 (errno set). */
int dm_writef(FILE *f, const char *fmt, ...) DM_PRINTF(2, 3);

/* Print the notes not printed yet (diskmon.h, struct dm_notes) on errf.
 * dm_run calls it after open(), after run() and after close(). */
void dm_notes_flush(struct dm_notes *n, FILE *errf);

#endif /* DM_TEXT_H */
