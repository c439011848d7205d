/*
 * saved_tgids.c - a snapshot of the kernel's saved_tgids (rules in
 * saved_tgids.h).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/saved_tgids.h"
#include "platform/platform.h"

#define READ_CHUNK (64u << 10)

static int add(struct dm_saved_tgids *s, uint32_t pid, uint32_t tgid)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct dm_tgid_pair *p = realloc(s->pairs, cap * sizeof *p);

        if (p == NULL)
            return DM_ENOMEM;
        s->pairs = p;
        s->cap = cap;
    }
    s->pairs[s->n].pid = pid;
    s->pairs[s->n].tgid = tgid;
    s->n++;
    return 0;
}

static int by_pid(const void *a, const void *b)
{
    uint32_t x = ((const struct dm_tgid_pair *)a)->pid;
    uint32_t y = ((const struct dm_tgid_pair *)b)->pid;

    return (x > y) - (x < y);
}

/* One line's decimal number at *p, moving *p past it; -1 when none. */
static int64_t number(const char **p, const char *end)
{
    uint64_t v = 0;
    const char *q = *p;

    while (q < end && *q == ' ')
        q++;
    if (q == end || *q < '0' || *q > '9')
        return -1;
    while (q < end && *q >= '0' && *q <= '9' && v <= UINT32_MAX)
        v = v * 10 + (uint64_t)(*q++ - '0');
    *p = q;
    return v > UINT32_MAX ? -1 : (int64_t)v;
}

int dm_saved_tgids_parse(struct dm_saved_tgids *s, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    int sorted = 1;

    s->n = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        int64_t pid, tgid;

        if (eol == NULL)
            eol = end;
        pid = number(&p, eol);
        tgid = pid < 0 ? -1 : number(&p, eol);
        /* A malformed line is skipped, as fscanf would not. */
        if (pid >= 0 && tgid >= 0) {
            if (s->n > 0 && s->pairs[s->n - 1].pid >= (uint32_t)pid)
                sorted = 0;
            if (add(s, (uint32_t)pid, (uint32_t)tgid) != 0)
                return DM_ENOMEM;
        }
        p = eol + (eol < end);
    }
    /* The kernel lists its map in pid order; sort anyway if not. */
    if (!sorted)
        qsort(s->pairs, s->n, sizeof *s->pairs, by_pid);
    return 0;
}

/* Read the whole file (it is generated, so its size is unknown). */
static char *slurp(const char *path, size_t *len)
{
    size_t cap = READ_CHUNK, n = 0;
    char *buf = malloc(cap);
    int fd;

    if (buf == NULL)
        return NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        free(buf);
        return NULL;
    }
    for (;;) {
        ssize_t got;

        if (cap - n < READ_CHUNK) {
            char *b = realloc(buf, cap * 2);

            if (b == NULL)
                break;
            buf = b;
            cap *= 2;
        }
        got = read(fd, buf + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    *len = n;
    return buf;
}

uint32_t dm_saved_tgid(struct dm_saved_tgids *s, const char *path, uint32_t tid,
                       uint64_t event_ns)
{
    size_t lo = 0, hi;

    if (s->taken_ns == 0 || s->taken_ns < event_ns + DM_TGIDS_MARGIN_NS) {
        uint64_t now = dm_monotonic_ns();
        size_t len = 0;
        char *text = slurp(path, &len);

        if (text == NULL)
            return 0;
        if (dm_saved_tgids_parse(s, text, len) != 0)
            s->n = 0;
        free(text);
        s->taken_ns = now;
        s->reads++;
    }
    hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->pairs[mid].pid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->pairs[lo].pid == tid ? s->pairs[lo].tgid : 0;
}

void dm_saved_tgids_free(struct dm_saved_tgids *s)
{
    free(s->pairs);
    memset(s, 0, sizeof *s);
}
