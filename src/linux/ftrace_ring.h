/*
 * ftrace_ring.h - one CPU's tracefs ring buffer, read record by record.
 *
 * per_cpu/cpuN/trace_pipe_raw can be read two ways, chosen at open:
 *
 *   mmap  (Linux 6.10+, kernel Documentation/trace/ring-buffer-map.rst)
 *         The file is mapped: a meta page (struct dm_trace_buffer_meta,
 *         the uapi linux/trace_mmap.h struct trace_buffer_meta, which
 *         Debian 12's headers lack), then every sub-buffer by id. The
 *         TRACE_MMAP_IOCTL_GET_READER ioctl hands the reader a sub-buffer
 *         (meta reader.id) and marks it read up to meta reader.read; the
 *         records are parsed where they are, with no copy and no failing
 *         read. While the writer is still on that sub-buffer (a quiet CPU),
 *         the next ioctl gives the same id with a larger reader.read: the
 *         cursor then goes on from where it stopped, its time included.
 *   read  one sub-buffer per read(2) into a buffer (every kernel with
 *         instances; the kernel copies the page).
 *
 * Either way the reader holds one sub-buffer per CPU and fetches the next
 * only once every record of the current one was taken, so what the merge
 * has not taken yet stays in the kernel's ring (cpu_merge.h holds one
 * sample per CPU). The file is non-blocking: waiting is poll(2)'s job
 * (ftrace_transport.c); an empty ring answers at once.
 *
 * dm_ftrace_map_take() is the mapped path's bookkeeping without system
 * calls, so the unit tests drive it with hand-made sub-buffers.
 */
#ifndef DM_FTRACE_RING_H
#define DM_FTRACE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "linux/ftrace_page.h"

/* uapi linux/trace_mmap.h (Linux 6.10+): the meta page's fields, in the
 * kernel's order. meta_struct_len says how many of them this kernel
 * fills; the reader needs them up to overrun. */
struct dm_trace_buffer_meta {
    uint32_t meta_page_size;  /* bytes before sub-buffer 0 in the mapping */
    uint32_t meta_struct_len;
    uint32_t subbuf_size;     /* header + entries */
    uint32_t nr_subbufs;      /* the reader's included */
    struct {
        uint64_t lost_events;
        uint32_t id;          /* the reader's sub-buffer: 0..nr_subbufs-1 */
        uint32_t read;        /* bytes of its entries handed out */
    } reader;
    uint64_t flags;
    uint64_t entries;
    uint64_t overrun;
    uint64_t read;
};

enum dm_ftrace_path { DM_FTRACE_READ = 0, DM_FTRACE_MMAP = 1 };

struct dm_ftrace_cpu {
    int fd;                       /* trace_pipe_raw, O_NONBLOCK */
    enum dm_ftrace_path path;
    const struct dm_ftrace_layout *layout;
    /* mmap */
    void *meta_map;               /* the meta page */
    size_t meta_len;
    const uint8_t *subbufs;       /* nr_subbufs * subbuf_size */
    size_t data_len;
    uint32_t nr_subbufs;
    uint32_t id;                  /* sub-buffer being parsed; UINT32_MAX none */
    /* read */
    uint8_t *buf;                 /* one sub-buffer */
    /* both */
    int page_open;
    struct dm_ftrace_page pg;
    uint64_t loads;               /* ioctls or reads that brought data */
};

/*
 * Open per_cpu/cpuN/trace_pipe_raw at path for reading with the layout
 * (which must outlive c). want: the path to try; mmap falls back to read
 * when the kernel refuses the mapping (then *why, if not NULL, says why).
 * Returns 0, or a negative dm_err with a message in err.
 */
int dm_ftrace_cpu_open(struct dm_ftrace_cpu *c, const char *path,
                       const struct dm_ftrace_layout *layout, enum dm_ftrace_path want,
                       char *why, size_t whylen, char *err, size_t errlen);

void dm_ftrace_cpu_close(struct dm_ftrace_cpu *c);

/*
 * The next record of this CPU: 1 (*rec set, valid until the next call), 0
 * when the kernel has nothing more now, or DM_EOS when the ioctl or read
 * failed other than for want of data.
 */
int dm_ftrace_cpu_next(struct dm_ftrace_cpu *c, struct dm_ftrace_record *rec,
                       struct dm_ftrace_counts *counts);

/*
 * Mapped path, after a GET_READER ioctl: take in sub-buffer id, handed out
 * up to read bytes of entries, from the mapping's sub-buffers (nr of them,
 * each layout->subbuf_size bytes at subbufs). A new id opens that
 * sub-buffer's cursor; the same id extends the open one to read. Returns 1
 * when the cursor has records to give, 0 when nothing is new, DM_ECORRUPT
 * (counted in bad_pages) for an id or length the mapping cannot hold.
 */
int dm_ftrace_map_take(struct dm_ftrace_cpu *c, const uint8_t *subbufs, uint32_t nr,
                       uint32_t id, uint32_t read, struct dm_ftrace_counts *counts);

#endif /* DM_FTRACE_RING_H */
