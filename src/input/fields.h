/*
 * fields.h - the pieces of a line the line formats share: CSV fields
 * (RFC 4180, unquoted in place), whole-field numbers (no sign, no spaces,
 * no overflow) and diskmon's own words (requests, request flags).
 */
#ifndef DM_INPUT_FIELDS_H
#define DM_INPUT_FIELDS_H

#include <stddef.h>
#include <stdint.h>

struct dm_row;

/* A row with no fields yet: the event zeroed, every name "". */
void dm_row_reset(struct dm_row *row);

/* A sniff function's first line as a row of parse: 1 when parse takes it
 * (a row or a header), 0 otherwise. The line is copied: parse works in
 * place. */
int dm_sniff_parse(const char *head, size_t len,
                   int (*parse)(char *line, size_t len, struct dm_row *row));

/* The first line of head (up to its line end, without a CR before it) and
 * its length; for the sniff functions. A first line that starts with a
 * UTF-8 byte order mark has it skipped. */
const char *dm_input_first_line(const char *head, size_t len, size_t *line_len);

struct dm_csv_field {
    char *p;
    size_t len;
};

/* Split a CSV line (len bytes, no line end) into at most max fields; a
 * quoted field is unquoted in place (its doubled quotes made single).
 * Returns the number of fields, or -1 when a quote is not closed, text
 * follows a closing quote, or there are more than max fields. */
int dm_csv_split(char *line, size_t len, struct dm_csv_field *f, int max);

/* The field as an unsigned decimal: 0, or -1 when it is empty, holds any
 * other byte (a sign, a space) or does not fit in 64 bits. */
int dm_field_u64(const char *p, size_t len, uint64_t *v);

/* "I" or "I.F" as I * 10^digits + F scaled to digits decimals: seconds as
 * ns with digits 9, ms as ns with digits 6. More than digits decimals: -1
 * when strict (diskmon's own lines never have more), else the rest is
 * cut. -1 also for an empty or signed field and for an overflow. */
int dm_field_fixed(const char *p, size_t len, unsigned digits, int strict, uint64_t *v);

/* Copy the field into dst (cap bytes) as a NUL-terminated name: -1 when it
 * does not fit or holds a NUL (a name never does). */
int dm_field_name(char *dst, size_t cap, const char *p, size_t len);

/* 1 when the field is word (case-insensitive for ASCII when nocase). */
int dm_field_is(const char *p, size_t len, const char *word, int nocase);

/* The request a word of dm_request_names names, or -1. */
int dm_field_request(const char *p, size_t len);

/* The request flags of '|'-joined dm_req_flag_names words ("" is none):
 * 0, or -1 for a word diskmon does not write. */
int dm_field_req_flags(const char *p, size_t len, uint16_t *flags);

#endif /* DM_INPUT_FIELDS_H */
