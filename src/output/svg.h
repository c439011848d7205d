/*
 * svg.h - SVG (and the HTML page around it) written into a struct dm_text:
 * elements, attributes and text, every name escaped, every number written
 * exactly from integers.
 *
 * The writer keeps the stack of open elements, so a document is always
 * closed in order (dm_svg_end closes what is left) and a start tag is ended
 * with "/>" when nothing went inside it. Text and attribute values go
 * through dm_xml_escape: names come from the traced machine (a process may
 * call itself "<script>"), so nothing a process, file or disk is named can
 * add markup. XML 1.0 (section 2.2, "Characters") allows no C0 control but
 * tab, line feed and carriage return, even as a character reference: those
 * bytes, and bytes that are not valid UTF-8, become U+FFFD, as the JSON
 * writer does (escape.h).
 *
 * Numbers: dm_svg_attr_int for pixels and counts, dm_svg_attr_fixed for a
 * quantity kept as an integer of a smaller unit (whole milliseconds as
 * seconds with 3 decimals, whole microseconds as milliseconds): the digits
 * are those of the integer, never a float's rounding.
 */
#ifndef DM_SVG_H
#define DM_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "output/text.h"

/* Open elements at most: svg, g, a cell, its title, and room to spare. */
#define DM_SVG_DEPTH 16

struct dm_svg {
    struct dm_text *t;
    const char *open[DM_SVG_DEPTH]; /* the names of the open elements */
    int depth;
    int in_tag;                  /* the last start tag's '>' is not written yet */
    int overflow;                /* more than DM_SVG_DEPTH: elements were dropped */
    void (*spill)(void *ctx, struct dm_text *t); /* NULL: t grows whole */
    void *spill_ctx;
};

/* Start writing into t (appended to). */
void dm_svg_init(struct dm_svg *s, struct dm_text *t);

/* Past this many bytes in t, the writer hands them on (dm_svg_spill_to):
 * a 64 KiB buffer stays in the cache and is rewritten in place, where a
 * whole map of megabytes took a page fault every 4 KiB (docs/benchmarks.md). */
#define DM_SVG_SPILL_BYTES (64u * 1024)

/* After an element is written and t holds DM_SVG_SPILL_BYTES or more,
 * spill(ctx, t) takes its bytes and empties it: the document goes out as
 * it is made (a file, file_out.h) and t never holds it whole. */
void dm_svg_spill_to(struct dm_svg *s, void (*spill)(void *ctx, struct dm_text *t), void *ctx);

/* The XML declaration a file of its own starts with. */
#define DM_XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* <svg xmlns width height viewBox="0 0 width height">, open. With
 * xml_decl, DM_XML_DECL first (a file of its own); without, for HTML
 * (the namespace attribute is allowed there, so one drawing serves both).
 *
 * The writer serves HTML too (the report): there an element that may
 * hold content must not be closed as "<td/>", so give such elements text
 * (dm_svg_text with "" when empty) before closing them. */
void dm_svg_begin(struct dm_svg *s, int xml_decl, int64_t width, int64_t height);

/* <name, open: attributes may follow until the next element, text or close. */
void dm_svg_open(struct dm_svg *s, const char *name);
/* name="value", value escaped. */
void dm_svg_attr(struct dm_svg *s, const char *name, const char *value);
void dm_svg_attr_int(struct dm_svg *s, const char *name, int64_t value);
/* value / 10^decimals with exactly that many decimals: 1200, 3 -> "1.200". */
void dm_svg_attr_fixed(struct dm_svg *s, const char *name, uint64_t value,
                       unsigned decimals);
/* Character data inside the open element, escaped. */
void dm_svg_text(struct dm_svg *s, const char *text);
/* len bytes of character data (no NUL needed), escaped. */
void dm_svg_text_n(struct dm_svg *s, const char *text, size_t len);
/* printf-style character data (the numbers a caller formats itself), escaped. */
void dm_svg_textf(struct dm_svg *s, const char *fmt, ...) DM_PRINTF(2, 3);
/* Markup the caller built itself (its names already through
 * dm_xml_escape), after the pending start tag is ended: for the many
 * cells of a map, each written with one call. */
void dm_svg_raw(struct dm_svg *s, const char *markup, size_t len);

/* Close the innermost open element. */
void dm_svg_close(struct dm_svg *s);
/* Close every open element. */
void dm_svg_end(struct dm_svg *s);

/* <name attr...>text</name> in one call, for labels: attrs is a list of
 * name, value pairs ending with NULL. */
void dm_svg_element(struct dm_svg *s, const char *name, const char *text, ...);

/* s (len bytes) as XML text or an attribute value into t: & < > " ' as
 * references, forbidden and invalid bytes as U+FFFD. */
void dm_xml_escape(struct dm_text *t, const char *s, size_t len);

/* Room past a number's digits that the digit writers may store into. */
#define DM_SVG_NUMBER_SLACK 40

/* value / 10^decimals, exactly, into buf (32 + DM_SVG_NUMBER_SLACK bytes);
 * returns the length. The _short form drops trailing zeros (and the point):
 * 1500, 3 -> "1.5"; 2000, 3 -> "2". */
size_t dm_fixed_text(char *buf, uint64_t value, unsigned decimals);
/* The same digits at p, no NUL; returns the end. Room: 40 bytes and
 * DM_SVG_NUMBER_SLACK. */
char *dm_put_decimal(char *p, uint64_t value, unsigned decimals);
size_t dm_fixed_text_short(char *buf, uint64_t value, unsigned decimals);

#endif /* DM_SVG_H */
