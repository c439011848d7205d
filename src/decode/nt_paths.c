/*
 * nt_paths.c - the NT kernel's strings: UTF-16LE names out of untrusted
 * record bytes, and NT device paths (\Device\HarddiskVolume2\...) turned
 * into DOS paths (C:\...) by a table of volume prefixes (nt_paths.h).
 */
#include <string.h>

#include "base/bytes.h"
#include "decode/nt_paths.h"
#include "diskmon.h"

/* Four UTF-16 units at b, little-endian, as one 64-bit word: unit k in
 * bits 16k..16k+15. */
static uint64_t four_units(const uint8_t *b)
{
    return dm_le64(b);
}

/* Whether one of the four units in v is 0: a unit u has its bit 15 set in
 * (u - 1) & ~u only when u == 0 (the borrow of a lower unit can only make
 * a later unit look zero when that lower unit was itself 0, so the answer
 * "some unit is 0" is exact; the scan then finds which). */
static int has_zero_unit(uint64_t v)
{
    return ((v - UINT64_C(0x0001000100010001)) & ~v & UINT64_C(0x8000800080008000)) != 0;
}

size_t dm_utf16_units(const uint8_t *b, size_t len, int *terminated)
{
    size_t n = 0;

    /* Paths run to hundreds of units: four at a time while none is 0. */
    while (2 * n + 7 < len && !has_zero_unit(four_units(b + 2 * n)))
        n += 4;
    for (; 2 * n + 1 < len; n++) {
        if (dm_le16(b + 2 * n) == 0) {
            *terminated = 1;
            return n;
        }
    }
    *terminated = 0;
    return n;
}

size_t dm_utf16_to_utf8(const uint8_t *b, size_t units, char *dst)
{
    size_t o = 0;

    for (size_t i = 0; i < units; i++) {
        uint32_t c;

        /* Paths are mostly ASCII: four such units at a time. */
        while (i + 4 <= units) {
            uint64_t v = four_units(b + 2 * i);

            if ((v & UINT64_C(0xFF80FF80FF80FF80)) != 0)
                break;
            dst[o] = (char)(v & 0x7F);
            dst[o + 1] = (char)((v >> 16) & 0x7F);
            dst[o + 2] = (char)((v >> 32) & 0x7F);
            dst[o + 3] = (char)((v >> 48) & 0x7F);
            o += 4;
            i += 4;
        }
        if (i == units)
            break;
        c = dm_le16(b + 2 * i);
        if (c < 0x80) { /* one test for the ASCII units left */
            dst[o++] = (char)c;
            continue;
        }
        if (c >= 0xD800 && c <= 0xDBFF && i + 1 < units) {
            uint32_t c2 = dm_le16(b + 2 * (i + 1));
            if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
                c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
                i++;
            } else {
                c = 0xFFFD;
            }
        } else if (c >= 0xD800 && c <= 0xDFFF) {
            c = 0xFFFD;
        }
        if (c < 0x800) {
            dst[o++] = (char)(0xC0 | (c >> 6));
            dst[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            dst[o++] = (char)(0xE0 | (c >> 12));
            dst[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            dst[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            dst[o++] = (char)(0xF0 | (c >> 18));
            dst[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            dst[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            dst[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    dst[o] = '\0';
    return o;
}

/*
 * Store the concatenation a + b into dst[cap] (NUL-terminated). When it does
 * not fit, keep its END (the file name matters more than the volume) and
 * start at a UTF-8 character boundary. Returns 1 if bytes were dropped.
 */
static int copy_tail(char *dst, size_t cap, const char *a, size_t alen,
                     const char *b, size_t blen)
{
    size_t total = alen + blen, skip = 0, o = 0;

    if (total > cap - 1) {
        skip = total - (cap - 1);
        /* 10xxxxxx is a UTF-8 continuation byte. */
        while (skip < total &&
               ((unsigned char)(skip < alen ? a[skip] : b[skip - alen]) & 0xC0) == 0x80)
            skip++;
    }
    if (skip < alen) {
        memcpy(dst, a + skip, alen - skip);
        o = alen - skip;
        memcpy(dst + o, b, blen);
        o += blen;
    } else {
        memcpy(dst, b + (skip - alen), total - skip);
        o = total - skip;
    }
    dst[o] = '\0';
    return skip > 0;
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* The volume whose NT prefix starts path (case-insensitively, ending at a
 * backslash or at the end of path), the longest if several; NULL if none. */
static const struct dm_volume *find_volume(const struct dm_volumes *vols,
                                           const char *path, size_t len)
{
    const struct dm_volume *best = NULL;

    for (int i = 0; i < vols->n; i++) {
        const struct dm_volume *v = &vols->v[i];
        size_t k = 0;

        if (v->nt_len > len || (best != NULL && v->nt_len <= best->nt_len))
            continue;
        while (k < v->nt_len && ascii_lower((unsigned char)path[k]) ==
                                    ascii_lower((unsigned char)v->nt[k]))
            k++;
        if (k == v->nt_len && (len == k || path[k] == '\\'))
            best = v;
    }
    return best;
}

int dm_volumes_store_path(const struct dm_volumes *vols, char *dst, size_t cap,
                          const char *path, size_t len, uint8_t *mapped)
{
    const struct dm_volume *v = find_volume(vols, path, len);

    *mapped = v != NULL;
    if (v == NULL)
        return copy_tail(dst, cap, "", 0, path, len);
    return copy_tail(dst, cap, v->dos, v->dos_len, path + v->nt_len,
                     len - v->nt_len);
}

/* Length of s without one trailing backslash. */
static size_t stem_len(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && s[n - 1] == '\\' ? n - 1 : n;
}

int dm_volumes_add(struct dm_volumes *vols, const char *nt_prefix, const char *dos_prefix)
{
    size_t nt_len, dos_len;
    struct dm_volume *v = NULL;

    if (nt_prefix == NULL || dos_prefix == NULL)
        return DM_EUSAGE;
    nt_len = stem_len(nt_prefix);
    dos_len = stem_len(dos_prefix);
    if (nt_len == 0 || nt_len >= DM_VOLUME_NT_MAX || dos_len >= DM_VOLUME_DOS_MAX)
        return DM_EUSAGE;
    /* "\??\" -> "" in the samples: a mapping to nothing, of no use. */
    if (dos_prefix[0] == '\0')
        return 0;
    for (int i = 0; i < vols->n; i++) {
        struct dm_volume *w = &vols->v[i];
        if (w->nt_len == nt_len && memcmp(w->nt, nt_prefix, nt_len) == 0)
            v = w;
    }
    if (v == NULL) {
        if (vols->n == DM_VOLUME_MAX)
            return DM_ENOMEM;
        v = &vols->v[vols->n++];
    }
    memcpy(v->nt, nt_prefix, nt_len);
    v->nt[nt_len] = '\0';
    v->nt_len = nt_len;
    memcpy(v->dos, dos_prefix, dos_len);
    v->dos[dos_len] = '\0';
    v->dos_len = dos_len;
    vols->generation++;
    return 0;
}
