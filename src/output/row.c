/*
 * row.c - one row of named fields as a csv line or a json object (row.h).
 */
#include <inttypes.h>
#include <stdio.h>

#include "diskmon.h"
#include "output/escape.h"
#include "output/row.h"

#define NS_PER_SEC 1000000000u
#define NS_PER_MS 1000000u

void dm_row_begin(struct dm_row *r, struct dm_text *out, enum dm_row_form form)
{
    r->out = out;
    r->form = form;
    r->fields = 0;
    if (form == DM_ROW_JSON)
        dm_text_putc(out, '{');
}

void dm_row_end(struct dm_row *r)
{
    dm_text_puts(r->out, r->form == DM_ROW_JSON ? "}\n" : "\r\n");
}

/* The separator and, in json, the key; in the titles form the key alone.
 * Returns 0 when the value is not to be written (titles). */
static int field(struct dm_row *r, const char *key)
{
    if (r->fields++ > 0)
        dm_text_putc(r->out, ',');
    if (r->form == DM_ROW_CSV_TITLES) {
        dm_text_puts(r->out, key);
        return 0;
    }
    if (r->form == DM_ROW_JSON)
        dm_text_printf(r->out, "\"%s\":", key);
    return 1;
}

/* A value that needs no escaping: a number, or json's null. */
static void bare(struct dm_row *r, const char *key, const char *value)
{
    if (field(r, key))
        dm_text_puts(r->out, value);
}

void dm_row_null(struct dm_row *r, const char *key)
{
    bare(r, key, r->form == DM_ROW_JSON ? "null" : "");
}

void dm_row_str(struct dm_row *r, const char *key, const char *s)
{
    /* As an event's line escapes its strings; an escape is at most 3
     * bytes a byte in json, 2 in csv (quotes doubled). */
    char buf[3 * DM_FILE_MAX + 16];

    if (s == NULL) {
        dm_row_null(r, key);
        return;
    }
    if (!field(r, key))
        return;
    if (r->form == DM_ROW_JSON)
        dm_escape_json_string(buf, sizeof buf, s);
    else
        dm_escape_csv_string(buf, 2 * DM_FILE_MAX + 16, s);
    dm_text_puts(r->out, buf);
}

void dm_row_u64(struct dm_row *r, const char *key, uint64_t v)
{
    char buf[24];

    snprintf(buf, sizeof buf, "%" PRIu64, v);
    bare(r, key, buf);
}

void dm_row_sec9(struct dm_row *r, const char *key, uint64_t ns)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%" PRIu64 ".%09" PRIu64, ns / NS_PER_SEC, ns % NS_PER_SEC);
    bare(r, key, buf);
}

void dm_row_ms6(struct dm_row *r, const char *key, uint64_t ns)
{
    char buf[32];

    snprintf(buf, sizeof buf, "%" PRIu64 ".%06" PRIu64, ns / NS_PER_MS, ns % NS_PER_MS);
    bare(r, key, buf);
}

void dm_row_mean_ms6(struct dm_row *r, const char *key, uint64_t sum_ns, uint64_t n)
{
    dm_row_ms6(r, key, n == 0 ? 0 : (sum_ns + n / 2) / n);
}

void dm_row_ratio(struct dm_row *r, const char *key, uint64_t x, uint64_t d, int digits)
{
    char buf[48];
    uint64_t scale = 1, whole, frac;

    for (int i = 0; i < digits; i++)
        scale *= 10;
    if (d == 0) {
        snprintf(buf, sizeof buf, "0.%0*d", digits, 0);
    } else {
        /* Split first so that x * scale cannot overflow: the remainder is
         * below d. */
        whole = x / d;
        frac = ((x % d) * scale + d / 2) / d;
        if (frac == scale) {
            whole++;
            frac = 0;
        }
        snprintf(buf, sizeof buf, "%" PRIu64 ".%0*" PRIu64, whole, digits, frac);
    }
    bare(r, key, buf);
}
