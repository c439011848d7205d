/*
 * escape.h - names (process, file, disk) as CSV fields, JSON strings and
 * terminal text, the same bytes for every writer that prints them: the event
 * lines, --top's rows and the metrics file.
 *
 * The pointer writers (dm_escape_csv, dm_escape_json) append with no bounds
 * checks of their own, for the per-event path: the caller makes sure the
 * buffer holds plen + DM_ESCAPE_MAX * len + DM_ESCAPE_SLACK bytes from p.
 * They may store anywhere in that room, not only up to the returned end.
 */
#ifndef DM_ESCAPE_H
#define DM_ESCAPE_H

#include <stddef.h>

/* The most one byte of a name becomes: a control byte as \u00XX (json). */
#define DM_ESCAPE_MAX 6
/* Room past the name's share: two quotes and the 16-byte block stores of
 * the scanners, rounded up (the event lines' own slack is the same 40). */
#define DM_ESCAPE_SLACK 40

/* A CSV field (RFC 4180): prefix (plain bytes, e.g. "...") and s (len
 * bytes), quoted with quotes doubled when s holds a comma, quote or line
 * break. Returns the end. */
char *dm_escape_csv(char *p, const char *prefix, size_t plen, const char *s, size_t len);

/* A JSON string (RFC 8259) of prefix (plain ASCII) and s (len bytes, a NUL
 * after them): quotes, backslashes and control characters escaped, a byte
 * that is not valid UTF-8 as U+FFFD, so the line stays valid JSON whatever
 * a process named itself. Returns the end. */
char *dm_escape_json(char *p, const char *prefix, size_t plen, const char *s, size_t len);

/* The length of the valid UTF-8 sequence at s, or 0 when it is not one
 * (the terminating NUL is no continuation byte, so it stops there). */
size_t dm_utf8_len(const unsigned char *s);

/* The length of the well-formed UTF-8 sequence at s (of left bytes, left
 * >= 1), 0 if the bytes are not one: no overlong forms, no surrogates,
 * nothing past U+10FFFF (RFC 3629, section 4). Unlike dm_utf8_len it
 * needs no NUL after the bytes. */
size_t dm_utf8_seq(const unsigned char *s, size_t left);

/* The most one byte of a label value becomes: an invalid byte as U+FFFD. */
#define DM_ESCAPE_LABEL_MAX 3

/* A Prometheus label value (text format 0.0.4), without its quotes:
 * backslash, double quote and line feed escaped as \\, \" and \n; a byte
 * that is not valid UTF-8 becomes U+FFFD, since label values are UTF-8.
 * s is NUL-terminated; the caller has room for DM_ESCAPE_LABEL_MAX bytes per
 * byte of s. Returns the end. */
char *dm_escape_label(char *p, const char *s);

/* A name as text for a terminal (the text event lines, --top's screen and
 * blocks): valid UTF-8 as it is, but C0 controls, DEL and C1 controls
 * (U+0080..U+009F) as \xNN, NN the code point in lower-case hex, and each
 * byte that is not valid UTF-8 as \xNN of the byte. A name holding a line
 * break or an escape sequence so stays on its line and cannot command the
 * terminal (a lone 0x9B is CSI to a terminal in an 8-bit mode), and reads
 * the same on every line it is on, for grep. Backslashes are left as they
 * are (every Windows path holds them). At most 4 bytes per byte of s, and
 * it stores up to 8 bytes past the end (the room escape.h asks for).
 * Returns the end. */
char *dm_escape_term(char *p, const char *s, size_t len);

/* s (NUL-terminated) for a terminal, as above, into buf of cap bytes,
 * NUL-terminated, cut after a whole character when it does not fit (with
 * 4 * strlen(s) + 8 bytes it always fits, without an allocation). Returns
 * the bytes written. */
size_t dm_escape_term_string(char *buf, size_t cap, const char *s);

/* s as a JSON string or a CSV field, as above, into buf of cap bytes
 * (NUL-terminated; cut when it does not fit). Returns the bytes written. */
size_t dm_escape_json_string(char *buf, size_t cap, const char *s);
size_t dm_escape_csv_string(char *buf, size_t cap, const char *s);

/* The first len bytes of line into buf (cap bytes), cut to cap - 1 and
 * NUL-terminated: what did not fit in cap was written into a buffer of its
 * own size first, and its beginning is kept (cut, never overflowed).
 * Returns the bytes kept. */
size_t dm_escape_cut_to(char *buf, size_t cap, const char *line, size_t len);

#endif /* DM_ESCAPE_H */
