/*
 * svg.c - the SVG writer (svg.h): a stack of open elements over a struct
 * dm_text, and the one XML escaper every attribute and text goes through.
 */
#include <stdarg.h>
#include <string.h>

#include "output/digits.h"
#include "output/escape.h"
#include "output/svg.h"

_Static_assert(DM_SVG_NUMBER_SLACK >= DM_DIGITS_SLACK, "svg.h's slack covers the digit writers'");

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
#define REPLACEMENT "\xEF\xBF\xBD"

void dm_xml_escape(struct dm_text *t, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, plain = 0;

    while (i < len) {
        unsigned char c = s[i];
        const char *ref = NULL;
        size_t n = 1;

        switch (c) {
        case '&': ref = "&amp;"; break;
        case '<': ref = "&lt;"; break;
        case '>': ref = "&gt;"; break;
        case '"': ref = "&quot;"; break;
        case '\'': ref = "&#39;"; break;
        case '\t': case '\n': case '\r': break;
        default:
            if (c < 0x20) {
                ref = REPLACEMENT; /* XML 1.0 section 2.2: not a Char */
            } else if (c >= 0x80) {
                n = dm_utf8_seq(s + i, len - i);
                /* U+FFFE and U+FFFF (EF BF BE, EF BF BF) are no Char either */
                if (n == 0 || (n == 3 && c == 0xEF && s[i + 1] == 0xBF && s[i + 2] >= 0xBE)) {
                    ref = REPLACEMENT;
                    n = 1;
                }
            }
            break;
        }
        if (ref == NULL) {
            i += n;
            continue;
        }
        dm_text_put(t, str + plain, i - plain);
        dm_text_puts(t, ref);
        i += n;
        plain = i;
    }
    dm_text_put(t, str + plain, len - plain);
}

char *dm_put_decimal(char *p, uint64_t value, unsigned decimals)
{
    if (decimals > 19)
        decimals = 19;
    if (decimals == 0)
        return dm_put_u64(p, value);
    {
        uint64_t scale = dm_pow10_u64[decimals], frac = value % scale;

        p = dm_put_u64(p, value / scale);
        *p++ = '.';
        /* the decimals zero-padded, most significant first */
        for (unsigned i = decimals; i-- > 0;) {
            p[i] = (char)('0' + frac % 10);
            frac /= 10;
        }
        return p + decimals;
    }
}

size_t dm_fixed_text(char *buf, uint64_t value, unsigned decimals)
{
    char *p = dm_put_decimal(buf, value, decimals);

    *p = '\0';
    return (size_t)(p - buf);
}

size_t dm_fixed_text_short(char *buf, uint64_t value, unsigned decimals)
{
    size_t n = dm_fixed_text(buf, value, decimals);

    if (decimals == 0)
        return n;
    while (buf[n - 1] == '0')
        buf[--n] = '\0';
    if (buf[n - 1] == '.')
        buf[--n] = '\0';
    return n;
}

void dm_svg_init(struct dm_svg *s, struct dm_text *t)
{
    memset(s, 0, sizeof *s);
    s->t = t;
}

void dm_svg_spill_to(struct dm_svg *s, void (*spill)(void *ctx, struct dm_text *t), void *ctx)
{
    s->spill = spill;
    s->spill_ctx = ctx;
}

/* After a whole element (or a cell's markup): hand the bytes on when there
 * are enough of them. */
static void maybe_spill(struct dm_svg *s)
{
    if (s->spill != NULL && s->t->len >= DM_SVG_SPILL_BYTES)
        s->spill(s->spill_ctx, s->t);
}

/* End a start tag left open for attributes. */
static void end_tag(struct dm_svg *s)
{
    if (s->in_tag) {
        dm_text_putc(s->t, '>');
        s->in_tag = 0;
    }
}

void dm_svg_open(struct dm_svg *s, const char *name)
{
    end_tag(s);
    if (s->depth == DM_SVG_DEPTH) {
        s->overflow = 1; /* a bug of the caller: say so in the file */
        dm_text_puts(s->t, "<!-- too deep -->");
        return;
    }
    s->open[s->depth++] = name;
    dm_text_putc(s->t, '<');
    dm_text_puts(s->t, name);
    s->in_tag = 1;
}

void dm_svg_attr(struct dm_svg *s, const char *name, const char *value)
{
    if (!s->in_tag)
        return;
    dm_text_putc(s->t, ' ');
    dm_text_puts(s->t, name);
    dm_text_puts(s->t, "=\"");
    dm_xml_escape(s->t, value, strlen(value));
    dm_text_putc(s->t, '"');
}

void dm_svg_attr_int(struct dm_svg *s, const char *name, int64_t value)
{
    char buf[32 + DM_SVG_NUMBER_SLACK], *p = buf;

    if (value < 0) {
        *p++ = '-';
        p = dm_put_u64(p, (uint64_t)0 - (uint64_t)value);
    } else {
        p = dm_put_u64(p, (uint64_t)value);
    }
    *p = '\0';
    dm_svg_attr(s, name, buf);
}

void dm_svg_attr_fixed(struct dm_svg *s, const char *name, uint64_t value, unsigned decimals)
{
    char buf[32 + DM_SVG_NUMBER_SLACK];

    dm_fixed_text(buf, value, decimals);
    dm_svg_attr(s, name, buf);
}

void dm_svg_text(struct dm_svg *s, const char *text)
{
    end_tag(s);
    dm_xml_escape(s->t, text, strlen(text));
}

void dm_svg_text_n(struct dm_svg *s, const char *text, size_t len)
{
    end_tag(s);
    dm_xml_escape(s->t, text, len);
}

void dm_svg_textf(struct dm_svg *s, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    dm_svg_text(s, buf);
}

void dm_svg_raw(struct dm_svg *s, const char *markup, size_t len)
{
    end_tag(s);
    dm_text_put(s->t, markup, len);
    maybe_spill(s);
}

void dm_svg_close(struct dm_svg *s)
{
    if (s->depth == 0)
        return;
    s->depth--;
    if (s->in_tag) {
        dm_text_puts(s->t, "/>");
        s->in_tag = 0;
    } else {
        dm_text_puts(s->t, "</");
        dm_text_puts(s->t, s->open[s->depth]);
        dm_text_putc(s->t, '>');
    }
    maybe_spill(s);
}

void dm_svg_end(struct dm_svg *s)
{
    while (s->depth > 0)
        dm_svg_close(s);
    dm_text_putc(s->t, '\n');
}

void dm_svg_begin(struct dm_svg *s, int xml_decl, int64_t width, int64_t height)
{
    char box[80 + DM_SVG_NUMBER_SLACK], *p = box;

    if (xml_decl)
        dm_text_puts(s->t, DM_XML_DECL);
    dm_svg_open(s, "svg");
    /* Inline in HTML the parser knows <svg>, and the attribute, allowed
     * there, lets the same bytes serve a file of their own. */
    dm_svg_attr(s, "xmlns", "http://www.w3.org/2000/svg");
    dm_svg_attr_int(s, "width", width);
    dm_svg_attr_int(s, "height", height);
    p = dm_put_lit(p, DM_LIT("0 0 "));
    p = dm_put_u64(p, width > 0 ? (uint64_t)width : 0);
    *p++ = ' ';
    p = dm_put_u64(p, height > 0 ? (uint64_t)height : 0);
    *p = '\0';
    dm_svg_attr(s, "viewBox", box);
}

void dm_svg_element(struct dm_svg *s, const char *name, const char *text, ...)
{
    va_list ap;
    const char *attr;

    dm_svg_open(s, name);
    va_start(ap, text);
    while ((attr = va_arg(ap, const char *)) != NULL)
        dm_svg_attr(s, attr, va_arg(ap, const char *));
    va_end(ap);
    if (text != NULL)
        dm_svg_text(s, text);
    dm_svg_close(s);
}
