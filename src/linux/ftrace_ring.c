/*
 * ftrace_ring.c - one CPU's tracefs ring, mapped or read (ftrace_ring.h).
 *
 * The mapped layout and the ioctl are the kernel's (Documentation/trace/
 * ring-buffer-map.rst; kernel/trace/ring_buffer.c, ring_buffer_map_get_reader):
 * the meta page first, meta_page_size bytes, then the sub-buffers in id
 * order. GET_READER, on a ring with data, either marks the rest of the
 * current reader sub-buffer read (the writer was still on it) or swaps in
 * the next sub-buffer and marks it read up to its commit; either way
 * reader.read is then the end of what the reader may parse, and the bytes
 * before it stay as they are until the next GET_READER. On an empty ring it
 * changes nothing. Missed events are flagged in the new sub-buffer's commit
 * word as on the read path, which ftrace_page.c counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diskmon.h"
#include "linux/ftrace_ring.h"
#include "platform/platform.h"

/* uapi linux/trace_mmap.h: TRACE_MMAP_IOCTL_GET_READER. */
#define GET_READER _IO('R', 0x20)
/* The meta fields the reader uses, up to and including overrun. */
#define META_NEEDED (offsetof(struct dm_trace_buffer_meta, overrun) + sizeof(uint64_t))

static void unmap(struct dm_ftrace_cpu *c)
{
    if (c->subbufs != NULL)
        munmap((void *)c->subbufs, c->data_len);
    if (c->meta_map != NULL)
        munmap(c->meta_map, c->meta_len);
    c->subbufs = NULL;
    c->meta_map = NULL;
}

/* Map the ring; 0, or -1 with the reason in why. */
static int map_ring(struct dm_ftrace_cpu *c, char *why, size_t whylen)
{
    long page = sysconf(_SC_PAGESIZE);
    const struct dm_trace_buffer_meta *meta;
    void *p;

    c->meta_len = (size_t)page;
    p = mmap(NULL, c->meta_len, PROT_READ, MAP_SHARED, c->fd, 0);
    if (p == MAP_FAILED) {
        snprintf(why, whylen, "mmap of trace_pipe_raw: %s", strerror(errno));
        return -1;
    }
    c->meta_map = p;
    meta = p;
    if (meta->meta_struct_len < META_NEEDED || meta->meta_page_size < (uint32_t)page ||
        meta->meta_page_size % (uint32_t)page != 0 ||
        meta->subbuf_size != c->layout->subbuf_size || meta->nr_subbufs < 2) {
        snprintf(why, whylen,
                 "the ring's meta page does not match (length %u, page %u, "
                 "sub-buffer %u bytes, expected %u, %u sub-buffers)",
                 (unsigned)meta->meta_struct_len, (unsigned)meta->meta_page_size,
                 (unsigned)meta->subbuf_size, (unsigned)c->layout->subbuf_size,
                 (unsigned)meta->nr_subbufs);
        unmap(c);
        return -1;
    }
    c->nr_subbufs = meta->nr_subbufs;
    c->data_len = (size_t)meta->nr_subbufs * meta->subbuf_size;
    p = mmap(NULL, c->data_len, PROT_READ, MAP_SHARED, c->fd, (off_t)meta->meta_page_size);
    if (p == MAP_FAILED) {
        snprintf(why, whylen, "mmap of the sub-buffers: %s", strerror(errno));
        unmap(c);
        return -1;
    }
    c->subbufs = p;
    return 0;
}

int dm_ftrace_cpu_open(struct dm_ftrace_cpu *c, const char *path,
                       const struct dm_ftrace_layout *layout, enum dm_ftrace_path want,
                       char *why, size_t whylen, char *err, size_t errlen)
{
    char reason[160] = "";

    memset(c, 0, sizeof *c);
    c->layout = layout;
    c->id = UINT32_MAX;
    c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (c->fd < 0) {
        int e = errno;

        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return dm_err_from_errno(e);
    }
    if (want == DM_FTRACE_MMAP && map_ring(c, reason, sizeof reason) == 0) {
        c->path = DM_FTRACE_MMAP;
        return 0;
    }
    if (why != NULL)
        snprintf(why, whylen, "%s", reason);
    c->path = DM_FTRACE_READ;
    c->buf = malloc(layout->subbuf_size);
    if (c->buf == NULL) {
        dm_ftrace_cpu_close(c);
        snprintf(err, errlen, "out of memory");
        return DM_ENOMEM;
    }
    return 0;
}

void dm_ftrace_cpu_close(struct dm_ftrace_cpu *c)
{
    unmap(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
}

int dm_ftrace_map_take(struct dm_ftrace_cpu *c, const uint8_t *subbufs, uint32_t nr,
                       uint32_t id, uint32_t read, struct dm_ftrace_counts *counts)
{
    const struct dm_ftrace_layout *l = c->layout;

    if (id >= nr || read > l->subbuf_size - l->data_off) {
        counts->bad_pages++;
        c->page_open = 0;
        c->id = UINT32_MAX;
        return DM_ECORRUPT;
    }
    if (id != c->id) {
        c->id = id;
        c->page_open = dm_ftrace_page_open(l, subbufs + (size_t)id * l->subbuf_size,
                                           l->subbuf_size, &c->pg, counts) == 0;
        if (!c->page_open)
            return 0;
        /* The commit may have grown past what the ioctl handed out: the
         * writer is still on this sub-buffer. The rest comes with the
         * next ioctl. */
        if (read < c->pg.size)
            c->pg.size = read;
    } else if (!c->page_open) {
        return 0; /* this sub-buffer was refused and counted already */
    } else if (read > c->pg.size) {
        c->pg.size = read;
    }
    return c->pg.pos < c->pg.size;
}

/* Bring the next data into the cursor: 1 when there is some, 0 when the
 * ring is empty now, DM_EOS on a failure. */
static int load(struct dm_ftrace_cpu *c, struct dm_ftrace_counts *counts)
{
    for (;;) {
        if (c->path == DM_FTRACE_MMAP) {
            const struct dm_trace_buffer_meta *meta = c->meta_map;
            uint32_t id, read;
            int rc;

            if (ioctl(c->fd, GET_READER) < 0) {
                if (errno == EINTR)
                    continue;
                return errno == EAGAIN ? 0 : DM_EOS;
            }
            /* The kernel wrote these before the ioctl returned; relaxed
             * loads keep the compiler from assuming they did not change. */
            id = __atomic_load_n(&meta->reader.id, __ATOMIC_RELAXED);
            read = __atomic_load_n(&meta->reader.read, __ATOMIC_RELAXED);
            rc = dm_ftrace_map_take(c, c->subbufs, c->nr_subbufs, id, read, counts);
            if (rc == 1)
                c->loads++;
            return rc == 1;
        } else {
            ssize_t n = read(c->fd, c->buf, c->layout->subbuf_size);

            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return errno == EAGAIN ? 0 : DM_EOS;
            if (n == 0)
                return 0;
            c->loads++;
            /* A short read is a truncated page: refused and counted by the
             * page parser; try the next one. */
            c->page_open = dm_ftrace_page_open(c->layout, c->buf, (size_t)n, &c->pg,
                                               counts) == 0;
            if (c->page_open)
                return 1;
        }
    }
}

int dm_ftrace_cpu_next(struct dm_ftrace_cpu *c, struct dm_ftrace_record *rec,
                       struct dm_ftrace_counts *counts)
{
    for (;;) {
        int rc;

        if (c->page_open && dm_ftrace_page_next(&c->pg, rec, counts) == 1)
            return 1;
        /* Mapped: the sub-buffer stays open, the same id may grow. */
        if (c->path == DM_FTRACE_READ)
            c->page_open = 0;
        rc = load(c, counts);
        if (rc != 1)
            return rc;
    }
}
