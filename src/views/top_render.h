/*
 * top_render.h - draw the intervals of --top: a screen redrawn in place on a
 * terminal, plain blocks anywhere else, or csv/json rows.
 *
 * Screen: each interval moves the cursor home and overwrites the previous
 * screen line by line (each line cut to the window's width and cleared to
 * its end, then the rest of the screen cleared), so nothing scrolls and the
 * terminal's scroll-back does not grow. The cursor is hidden while drawing
 * and shown again by dm_top_render_end. Blocks: a time line, the column
 * titles and the rows, then an empty line; no escape codes. csv/json: one
 * row per group per interval, none for an interval without events.
 *
 * Printer thread only. The renderer draws into the view's text, which the
 * caller writes out (dm_text_write: the one writer, never stdio) and
 * frees with dm_text_free.
 */
#ifndef DM_TOP_RENDER_H
#define DM_TOP_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "output/text.h"
#include "views/top.h"

enum dm_top_mode { DM_TOP_SCREEN = 0, DM_TOP_BLOCKS, DM_TOP_CSV, DM_TOP_JSON };

struct dm_top_view {
    enum dm_top_mode mode;
    enum dm_top_by by;
    struct dm_text out;  /* what was drawn, not written yet */
    int no_header;       /* csv: no header row; text: no column titles */
    int cache_writes;    /* --by process, live: the Cache-W column (top_cache.h) */
    /* Cache-W under a filter of the block requests (-d, -p, ...): it still
     * counts every process on the machine, and a line under the time line
     * says so. */
    int cache_whole_machine;
    /* The source has no response times (views/view.h no_latency): a line
     * under the time line says so, the latency columns show "-" (csv: an
     * empty cell, json: null). */
    int no_latency;
    int rows, cols;      /* screen: the window, set before each interval */
    /* Requests a filter could not decide on so far (views/unknown.h), set
     * before each interval; said on the time line. */
    uint64_t unknown[DM_FIELD_COUNT];
};

/* Before the first interval: the csv header row; screen: hide the cursor. */
void dm_top_render_begin(struct dm_top_view *v);

/* One interval; lost is the number of events lost so far. */
void dm_top_render(struct dm_top_view *v, const struct dm_top_interval *iv,
                   uint64_t lost);

/* After the last interval: the screen shows the cursor again, below the last
 * screen, which stays visible. */
void dm_top_render_end(struct dm_top_view *v);

#endif /* DM_TOP_RENDER_H */
