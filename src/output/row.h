/*
 * row.h - one row of named fields, as a csv line or a json object (the
 * rows of --top, views/top_render.c), in the escapes of an event's line
 * (escape.h) and with exact decimals.
 *
 * A row is written field by field between dm_row_begin and dm_row_end; the
 * same calls in DM_ROW_CSV_TITLES form write the csv header instead (each
 * field's key), so a header and its rows cannot disagree. An absent value
 * is json null and an empty csv cell. Exact decimals: integer arithmetic on
 * nanoseconds, rounded half up, so that a test can recompute them from the
 * per-event output.
 */
#ifndef DM_ROW_H
#define DM_ROW_H

#include <stdint.h>

#include "output/text.h"

enum dm_row_form { DM_ROW_CSV, DM_ROW_JSON, DM_ROW_CSV_TITLES };

struct dm_row {
    struct dm_text *out;
    enum dm_row_form form;
    int fields; /* written so far: a separator before every field but the first */
};

void dm_row_begin(struct dm_row *r, struct dm_text *out, enum dm_row_form form);
/* json "}\n"; csv (and its titles) "\r\n", as RFC 4180 ends a record. */
void dm_row_end(struct dm_row *r);

/* A string, escaped; NULL: absent. */
void dm_row_str(struct dm_row *r, const char *key, const char *s);
void dm_row_u64(struct dm_row *r, const char *key, uint64_t v);
void dm_row_null(struct dm_row *r, const char *key);
/* ns as seconds with 9 decimals, and as ms with 6: exact. */
void dm_row_sec9(struct dm_row *r, const char *key, uint64_t ns);
void dm_row_ms6(struct dm_row *r, const char *key, uint64_t ns);
/* The mean of sum_ns over n in whole ns (rounded half up), as ms with 6
 * decimals; 0 when n is 0. */
void dm_row_mean_ms6(struct dm_row *r, const char *key, uint64_t sum_ns, uint64_t n);
/* x / d rounded half up, with digits decimals (at most 9); 0 when d is 0.
 * x % d * 10^digits must fit in 64 bits (the caller bounds d). */
void dm_row_ratio(struct dm_row *r, const char *key, uint64_t x, uint64_t d, int digits);

#endif /* DM_ROW_H */
