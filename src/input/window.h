/*
 * window.h - rows put back in time order through a bounded window, for the
 * public traces, whose rows come in the order requests were issued (or in
 * no order at all) while diskmon shows completions in time order.
 *
 * A row goes out once the window is full or a row later than it by the
 * window's span has come; so a row is out of place only when it came more
 * than the span (or more than cap rows) after rows later than it. Such a
 * row still goes out, late, and is counted (dm_window_late), never
 * dropped. Rows with the same time keep the order they came in.
 */
#ifndef DM_INPUT_WINDOW_H
#define DM_INPUT_WINDOW_H

#include <stddef.h>
#include <stdint.h>

/* A row as the window keeps it: the numbers of a public trace's event and
 * the index of its disk name (the line runner's table). */
struct dm_window_row {
    uint64_t time_ns;
    uint64_t duration_ns;
    uint64_t byte_offset;
    uint32_t transfer_size;
    uint32_t disk;
    uint32_t seq;          /* the order rows came in (set by push) */
    uint16_t name;         /* the runner's disk name index */
    uint8_t request;
    uint8_t no_duration;   /* the event's DM_EV_NO_DURATION, in the padding */
};

struct dm_window;

/* A window of at most cap rows and span_ns of time; NULL when out of
 * memory. */
struct dm_window *dm_window_create(size_t cap, uint64_t span_ns);
void dm_window_destroy(struct dm_window *w);

/* Add a row. The caller takes out what dm_window_pop gives first, so that
 * there is room (pop gives a row whenever the window is full). */
void dm_window_push(struct dm_window *w, const struct dm_window_row *row);

/* The next row that may go out, into *out: 1, or 0 when none may yet.
 * flush: at the end of the input, every row in turn. */
int dm_window_pop(struct dm_window *w, struct dm_window_row *out, int flush);

/* Rows that went out after a row later than them. */
uint64_t dm_window_late(const struct dm_window *w);

#endif /* DM_INPUT_WINDOW_H */
