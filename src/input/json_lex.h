/*
 * json_lex.h - the JSON (RFC 8259) pieces of diskmon's json lines, for
 * input/dm_json.c: blanks, strings (unescaped into a buffer, or their raw
 * bytes when they hold no escape), numbers as text, any value skipped, and
 * time_utc's RFC 3339 form. A cursor walks one line; every function
 * returns -1 (the cursor anywhere) when the text is not what it reads.
 */
#ifndef DM_INPUT_JSON_LEX_H
#define DM_INPUT_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>

struct dm_json {
    const char *p, *end;
};

/* Spaces and tabs (inline: called between every two tokens). */
static inline void dm_json_ws(struct dm_json *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* A string at c->p (its opening quote) with no escape and no control byte:
 * 0 with its bytes at *s (*len of them) and the cursor past it; 1 when it
 * has an escape (the cursor then just past the opening quote, for
 * dm_json_string's slow path); -1 when it is no string. */
int dm_json_raw(struct dm_json *c, const char **s, size_t *len);

/* A string at c->p, unescaped into dst (cap bytes, NUL-terminated); *len
 * its bytes. \ufffd (the writer's mark for a byte that was not UTF-8,
 * output/escape.h) becomes the byte 0xFF, so that it is written back the
 * same. -1 also when it does not fit or holds \u0000. */
int dm_json_string(struct dm_json *c, char *dst, size_t cap, size_t *len);

/* A number's text (digits, '.', sign, exponent) at c->p. */
int dm_json_number(struct dm_json *c, const char **p, size_t *len);

/* Any value but an object or array: a string, a number, true, false or
 * null. */
int dm_json_skip(struct dm_json *c);

/* "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (output/format.c, put_json_utc) as ns
 * since 1970; -1 for anything else or a time before 1970. */
int dm_json_utc_ns(const char *s, size_t len, uint64_t *ns);

#endif /* DM_INPUT_JSON_LEX_H */
