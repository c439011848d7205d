/*
 * top_render.c - the screen, blocks, csv and json of --top (top_render.h).
 *
 * The csv and json rows are written by output/row.h, with exact decimals so
 * that a test can recompute them from the per-event output; here is only
 * which fields a row has. The text views use doubles, for people.
 */
#include <inttypes.h>
#include <string.h>

#include "output/escape.h"
#include "output/row.h"
#include "views/top_render.h"
#include "views/unknown.h"
#include "views/view.h"

#define BYTES_PER_MB 1e6      /* MB/s as the -s summary counts it (stats.c) */
#define FILE_WIDTH 40         /* text File column; longer paths keep their tail */
#define LINE_MAX 1024
/* The line under the time line when the rows are filtered and Cache-W is
 * not (dm_top_view.cache_whole_machine). */
#define CACHE_WHOLE_MACHINE \
    "Cache-W: every process on this machine (the filters pick block requests)"

/* VT100/ECMA-48 control sequences (the screen only). */
#define VT_HOME "\033[H"
#define VT_CLEAR_EOL "\033[K"
#define VT_CLEAR_EOS "\033[J"
#define VT_HIDE_CURSOR "\033[?25l"
#define VT_SHOW_CURSOR "\033[?25h"

static uint64_t ios(const struct dm_top_group *g)
{
    return g->reads + g->writes + g->flushes;
}

/* ---- the key columns of each --by ------------------------------------------- */

/*
 * What differs between --by process, file, disk and cgroup is said once,
 * here: the key columns of a row in each form (csv and json, text) and
 * whether the row carries a device's figures (r_await, w_await, aqu-sz,
 * %util, as iostat -x) instead of a process's (Reads/s ... Max ms).
 * Indexed by enum dm_top_by.
 */
struct by_columns {
    /* the key fields of a csv or json row (output/row.h) */
    void (*row_keys)(struct dm_row *r, const struct dm_top_group *g);
    /* the text titles of the key columns and the row's key cells, each
     * followed by one space */
    void (*text_titles)(char *buf, size_t cap);
    void (*text_keys)(char *buf, size_t cap, const struct dm_top_group *g);
    int device;                           /* 1: the device figures */
};

static const struct by_columns *columns_of(enum dm_top_by by);

/* ---- csv and json ----------------------------------------------------------- */

/* The fields a source without response times cannot fill (dm_top_view
 * no_latency): null in json, an empty csv cell, never a zero. */
static void no_latency_fields(struct dm_row *r, int device)
{
    dm_row_null(r, "avg_ms");
    dm_row_null(r, "max_ms");
    if (device) {
        dm_row_null(r, "r_await_ms");
        dm_row_null(r, "w_await_ms");
        dm_row_null(r, "aqu_sz");
        dm_row_null(r, "util_pct");
    }
}

/* One row's fields, the same in csv and json (and, in the titles form, the
 * csv header: g is then a zeroed group). */
static void row_fields(struct dm_row *r, const struct dm_top_interval *iv,
                       const struct dm_top_group *g, int no_latency)
{
    uint64_t len = iv->end_ns - iv->start_ns;

    dm_row_sec9(r, "interval_start", iv->start_ns);
    dm_row_sec9(r, "interval_end", iv->end_ns);
    columns_of(iv->by)->row_keys(r, g);
    dm_row_u64(r, "reads", g->reads);
    dm_row_u64(r, "writes", g->writes);
    dm_row_u64(r, "flushes", g->flushes);
    dm_row_u64(r, "read_bytes", g->read_bytes);
    dm_row_u64(r, "write_bytes", g->write_bytes);
    if (iv->has_cache_writes)
        dm_row_u64(r, "cache_write_bytes", g->cache_write_bytes);
    if (no_latency) {
        no_latency_fields(r, columns_of(iv->by)->device);
        return;
    }
    dm_row_mean_ms6(r, "avg_ms", g->latency_ns, ios(g));
    dm_row_ms6(r, "max_ms", g->max_ns);
    if (columns_of(iv->by)->device) {
        dm_row_mean_ms6(r, "r_await_ms", g->read_latency_ns, g->reads);
        dm_row_mean_ms6(r, "w_await_ms", g->write_latency_ns, g->writes);
        /* The command line caps the interval (DM_TOP_MAX_NS), so the remainders
         * times 1000 and 100 fit (row.h). */
        dm_row_ratio(r, "aqu_sz", g->overlap_ns, len, 3);
        dm_row_ratio(r, "util_pct", g->busy_ns * 100, len, 2);
    }
}

static void write_row(struct dm_text *out, enum dm_row_form form,
                      const struct dm_top_interval *iv, const struct dm_top_group *g,
                      int no_latency)
{
    struct dm_row r;

    dm_row_begin(&r, out, form);
    row_fields(&r, iv, g, no_latency);
    dm_row_end(&r);
}

static void csv_header(struct dm_text *out, enum dm_top_by by, int cache_writes)
{
    struct dm_top_interval iv;
    struct dm_top_group none;

    memset(&iv, 0, sizeof iv);
    memset(&none, 0, sizeof none);
    iv.by = by;
    iv.has_cache_writes = cache_writes;
    write_row(out, DM_ROW_CSV_TITLES, &iv, &none, 0);
}

/* ---- text (screen and blocks) ----------------------------------------------------- */

static double per_sec(uint64_t v, uint64_t len_ns)
{
    return len_ns == 0 ? 0.0 : (double)v * 1e9 / (double)len_ns;
}

/* A text figure of the interval: v per second, or, in a last interval too
 * short for rates (counts_only), v itself. */
static double figure(const struct dm_top_interval *iv, uint64_t v)
{
    return iv->counts_only ? (double)v : per_sec(v, iv->end_ns - iv->start_ns);
}

static double ms_of(uint64_t sum_ns, uint64_t n)
{
    return n == 0 ? 0.0 : (double)sum_ns / (double)n / 1e6;
}

static void time_line(char *buf, size_t cap, const struct dm_top_interval *iv,
                      uint64_t lost, const uint64_t *unknown)
{
    uint64_t len = iv->end_ns - iv->start_ns;
    char cache[64] = "";

    /* Linux live --by process: the cache writes beside the block writes. */
    if (iv->has_cache_writes)
        snprintf(cache, sizeof cache, ", %.2f MB%s cached",
                 figure(iv, iv->cache_write_bytes) / BYTES_PER_MB, iv->counts_only ? "" : "/s");
    if (iv->counts_only) {
        snprintf(buf, cap,
                 "%.3f-%.3f s: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64 " flushes, "
                 "%.2f MB read, %.2f MB written%s, %" PRIu64 " lost (the last %.3f s, "
                 "under a tenth of the interval: counts, not rates)",
                 (double)iv->start_ns / 1e9, (double)iv->end_ns / 1e9, iv->reads,
                 iv->writes, iv->flushes, (double)iv->read_bytes / BYTES_PER_MB,
                 (double)iv->write_bytes / BYTES_PER_MB, cache, lost, (double)len / 1e9);
        return;
    }
    snprintf(buf, cap,
             "%.3f-%.3f s: %.1f reads/s, %.1f writes/s, %.1f flushes/s, "
             "%.2f MB/s read, %.2f MB/s written%s, %" PRIu64 " lost",
             (double)iv->start_ns / 1e9, (double)iv->end_ns / 1e9,
             per_sec(iv->reads, len), per_sec(iv->writes, len), per_sec(iv->flushes, len),
             per_sec(iv->read_bytes, len) / BYTES_PER_MB,
             per_sec(iv->write_bytes, len) / BYTES_PER_MB, cache, lost);
    dm_unknown_append(buf, cap, unknown, ", ");
    if (iv->gap) {
        size_t n = strlen(buf);

        snprintf(buf + n, cap - n,
                 "; a gap of %.3f s drawn as one interval (the clock jumped: "
                 "suspend and resume, a stalled VM; or diskmon was held up)",
                 (double)len / 1e9);
    }
}

/* The column titles; in a last interval too short for rates (counts), the
 * figures' titles lose their "/s". */
static void titles(char *buf, size_t cap, enum dm_top_by by, int cache_writes, int counts)
{
    const struct by_columns *c = columns_of(by);
    size_t n;

    c->text_titles(buf, cap);
    n = strlen(buf);
    if (c->device)
        snprintf(buf + n, cap - n, "%8s %8s %8s %8s %8s %8s %7s %6s", counts ? "r" : "r/s",
                 counts ? "w" : "w/s", counts ? "rMB" : "rMB/s", counts ? "wMB" : "wMB/s",
                 "r_await", "w_await", "aqu-sz", "%util");
    else
        snprintf(buf + n, cap - n, "%9s %9s %10s %10s%s %9s %9s",
                 counts ? "Reads" : "Reads/s", counts ? "Writes" : "Writes/s",
                 counts ? "Read MB" : "Read MB/s", counts ? "Write MB" : "Write MB/s",
                 !cache_writes ? "" : counts ? "   Cache-W MB" : " Cache-W MB/s", "Avg ms",
                 "Max ms");
}

/* A long path keeps its tail (the file name), behind "...", cut at the
 * start of a character; control bytes shown as escapes (dm_escape_term). */
static const char *tail_cell(const char *s, char *buf, size_t cap);

static const char *file_cell(const struct dm_top_group *g, char *buf, size_t cap)
{
    if (g->is_other)
        return "(other)";
    if (!g->has_file)
        return "-";
    return tail_cell(g->file, buf, cap);
}

/* A path for a FILE_WIDTH column, escaped for the terminal: a longer one
 * keeps its tail (the file's name; a cgroup's leaf) after "...". */
static const char *tail_cell(const char *s, char *buf, size_t cap)
{
    char term[4 * (DM_FILE_MAX + 3) + 8];
    size_t n, from;

    n = dm_escape_term_string(term, sizeof term, s);
    from = n <= FILE_WIDTH ? 0 : n - (FILE_WIDTH - 3);
    while (from > 0 && from < n && ((unsigned char)term[from] & 0xC0) == 0x80)
        from++;
    if (cap < FILE_WIDTH + 1)
        return "-";
    memcpy(buf, "...", from > 0 ? 3 : 0);
    memcpy(buf + (from > 0 ? 3 : 0), term + from, n - from + 1);
    return buf;
}

/* A latency cell of a text row: v with prec decimals, or "-" for a source
 * without response times (never 0: aqu-sz and %util are made of the
 * durations too). */
static const char *lat_cell(char *buf, size_t cap, int no_latency, int prec, double v)
{
    if (no_latency)
        return "-";
    snprintf(buf, cap, "%.*f", prec, v);
    return buf;
}

static void row_text(char *buf, size_t cap, const struct dm_top_interval *iv,
                     const struct dm_top_group *g, int no_latency)
{
    const struct by_columns *c = columns_of(iv->by);
    uint64_t len = iv->end_ns - iv->start_ns;
    double rmb = figure(iv, g->read_bytes) / BYTES_PER_MB;
    double wmb = figure(iv, g->write_bytes) / BYTES_PER_MB;
    int prec = iv->counts_only ? 0 : 1; /* requests: whole counts, or rates */
    char cache[32] = "", l[4][32];
    size_t n;

    c->text_keys(buf, cap, g);
    n = strlen(buf);
    if (c->device)
        snprintf(buf + n, cap - n, "%8.*f %8.*f %8.2f %8.2f %8s %8s %7s %6s", prec,
                 figure(iv, g->reads), prec, figure(iv, g->writes), rmb, wmb,
                 lat_cell(l[0], sizeof l[0], no_latency, 3, ms_of(g->read_latency_ns, g->reads)),
                 lat_cell(l[1], sizeof l[1], no_latency, 3,
                          ms_of(g->write_latency_ns, g->writes)),
                 lat_cell(l[2], sizeof l[2], no_latency, 2,
                          len ? (double)g->overlap_ns / (double)len : 0.0),
                 lat_cell(l[3], sizeof l[3], no_latency, 1,
                          len ? (double)g->busy_ns * 100.0 / (double)len : 0.0));
    else {
        if (iv->has_cache_writes)
            snprintf(cache, sizeof cache, " %12.2f",
                     figure(iv, g->cache_write_bytes) / BYTES_PER_MB);
        snprintf(buf + n, cap - n, "%9.*f %9.*f %10.2f %10.2f%s %9s %9s", prec,
                 figure(iv, g->reads), prec, figure(iv, g->writes), rmb, wmb, cache,
                 lat_cell(l[0], sizeof l[0], no_latency, 3, ms_of(g->latency_ns, ios(g))),
                 lat_cell(l[1], sizeof l[1], no_latency, 3, (double)g->max_ns / 1e6));
    }
}

/* ---- the key columns, per --by ------------------------------------------------ */

/* The Process cell of a text row: the (other) row says so only where it is
 * the key (--by process). */
static const char *process_cell(const struct dm_top_group *g, int is_key, char *buf,
                                size_t cap)
{
    if (g->is_other)
        return is_key ? "(other)" : "-";
    if (!g->has_process)
        return "-";
    dm_escape_term_string(buf, cap, g->process);
    return buf;
}

static void process_row(struct dm_row *r, const struct dm_top_group *g)
{
    if (g->has_pid && !g->is_other)
        dm_row_u64(r, "pid", g->pid);
    else
        dm_row_null(r, "pid");
    dm_row_str(r, "process", g->is_other ? "(other)" : g->has_process ? g->process : NULL);
}

static void process_titles(char *buf, size_t cap)
{
    snprintf(buf, cap, "%7s %-16s ", "PID", "Process");
}

static void process_keys(char *buf, size_t cap, const struct dm_top_group *g)
{
    char pid[16], term_process[4 * DM_PROCESS_MAX + 8];

    if (g->has_pid && !g->is_other)
        snprintf(pid, sizeof pid, "%" PRIu32, g->pid);
    else
        snprintf(pid, sizeof pid, "-");
    snprintf(buf, cap, "%7s %-16s ", pid,
             process_cell(g, 1, term_process, sizeof term_process));
}

static void file_row(struct dm_row *r, const struct dm_top_group *g)
{
    dm_row_str(r, "file", g->is_other ? "(other)" : g->has_file ? g->file : NULL);
    dm_row_str(r, "process", !g->is_other && g->has_process ? g->process : NULL);
}

static void file_titles(char *buf, size_t cap)
{
    snprintf(buf, cap, "%-*s %-16s ", FILE_WIDTH, "File", "Process");
}

static void file_keys(char *buf, size_t cap, const struct dm_top_group *g)
{
    char file[FILE_WIDTH + 8], term_process[4 * DM_PROCESS_MAX + 8];

    snprintf(buf, cap, "%-*s %-16s ", FILE_WIDTH, file_cell(g, file, sizeof file),
             process_cell(g, 0, term_process, sizeof term_process));
}

static void disk_row(struct dm_row *r, const struct dm_top_group *g)
{
    dm_row_str(r, "disk", g->is_other ? "(other)" : g->disk);
}

static void disk_titles(char *buf, size_t cap)
{
    snprintf(buf, cap, "%-8s ", "Disk");
}

static void disk_keys(char *buf, size_t cap, const struct dm_top_group *g)
{
    char term_disk[4 * DM_DISK_NAME_MAX + 8];

    dm_escape_term_string(term_disk, sizeof term_disk, g->disk);
    snprintf(buf, cap, "%-8s ", g->is_other ? "(other)" : term_disk);
}

static void cgroup_row(struct dm_row *r, const struct dm_top_group *g)
{
    dm_row_str(r, "cgroup", g->is_other ? "(other)" : g->cgroup[0] != '\0' ? g->cgroup : NULL);
}

static void cgroup_titles(char *buf, size_t cap)
{
    snprintf(buf, cap, "%-*s ", FILE_WIDTH, "Cgroup");
}

static void cgroup_keys(char *buf, size_t cap, const struct dm_top_group *g)
{
    char cell[FILE_WIDTH + 8];

    snprintf(buf, cap, "%-*s ", FILE_WIDTH,
             g->is_other               ? "(other)"
             : g->cgroup[0] == '\0' ? "-"
                                       : tail_cell(g->cgroup, cell, sizeof cell));
}

/* A whole-disk row (partition "") has none: json null, an empty csv cell. */
static void partition_row(struct dm_row *r, const struct dm_top_group *g)
{
    disk_row(r, g);
    dm_row_str(r, "partition", !g->is_other && g->partition[0] != '\0' ? g->partition : NULL);
}

static void partition_titles(char *buf, size_t cap)
{
    snprintf(buf, cap, "%-8s %-12s ", "Disk", "Partition");
}

/* A whole-disk row (partition "") shows "-" under Partition. */
static void partition_keys(char *buf, size_t cap, const struct dm_top_group *g)
{
    char term_disk[4 * DM_DISK_NAME_MAX + 8], term_part[4 * DM_PARTITION_MAX + 8];

    dm_escape_term_string(term_disk, sizeof term_disk, g->disk);
    dm_escape_term_string(term_part, sizeof term_part, g->partition);
    snprintf(buf, cap, "%-8s %-12s ", g->is_other ? "(other)" : term_disk,
             g->is_other || g->partition[0] == '\0' ? "-" : term_part);
}

static const struct by_columns by_table[] = {
    [DM_TOP_BY_PROCESS] = {process_row, process_titles, process_keys, 0},
    [DM_TOP_BY_FILE] = {file_row, file_titles, file_keys, 0},
    [DM_TOP_BY_DISK] = {disk_row, disk_titles, disk_keys, 1},
    [DM_TOP_BY_CGROUP] = {cgroup_row, cgroup_titles, cgroup_keys, 0},
    [DM_TOP_BY_PARTITION] = {partition_row, partition_titles, partition_keys, 1},
};

static const struct by_columns *columns_of(enum dm_top_by by)
{
    return &by_table[by];
}

/* One screen line: cut to the window (a wrapped line would scroll), then
 * cleared to its end; lines after the first start on a new line. */
static void screen_line(struct dm_top_view *v, const char *s, int first)
{
    size_t n = strlen(s);

    if (v->cols > 1 && n > (size_t)(v->cols - 1))
        n = (size_t)(v->cols - 1);
    if (!first)
        dm_text_putc(&v->out, '\n');
    dm_text_put(&v->out, s, n);
    dm_text_puts(&v->out, VT_CLEAR_EOL);
}

static void draw_text(struct dm_top_view *v, const struct dm_top_interval *iv,
                      uint64_t lost)
{
    char line[LINE_MAX];
    int screen = v->mode == DM_TOP_SCREEN;
    /* The screen keeps to the window: time line, titles, then rows. */
    int titled = !v->no_header;
    int max_rows = screen && v->rows > 1 + titled ? v->rows - 1 - titled : iv->n_rows;

    if (screen)
        dm_text_puts(&v->out, VT_HOME);
    time_line(line, sizeof line, iv, lost, v->unknown);
    if (screen)
        screen_line(v, line, 1);
    else
        dm_text_printf(&v->out, "%s\n", line);
    /* Under a filter, a line of its own (the time line is cut on a narrow
     * screen) says that Cache-W is not filtered (top_render.h). */
    if (iv->has_cache_writes && v->cache_whole_machine) {
        if (screen)
            screen_line(v, CACHE_WHOLE_MACHINE, 0);
        else
            dm_text_printf(&v->out, "%s\n", CACHE_WHOLE_MACHINE);
        max_rows -= screen && max_rows > 1;
    }
    /* A source without response times: said once under each time line, as
     * -s says it under its table. */
    if (v->no_latency) {
        if (screen)
            screen_line(v, DM_NO_LATENCY_NOTE, 0);
        else
            dm_text_printf(&v->out, "%s\n", DM_NO_LATENCY_NOTE);
        max_rows -= screen && max_rows > 1;
    }
    /* --no-header: no column titles here either, as in line output. */
    if (titled) {
        titles(line, sizeof line, v->by, v->cache_writes, iv->counts_only);
        if (screen)
            screen_line(v, line, 0);
        else
            dm_text_printf(&v->out, "%s\n", line);
    }
    for (int i = 0; i < iv->n_rows && i < max_rows; i++) {
        row_text(line, sizeof line, iv, iv->rows[i], v->no_latency);
        if (screen)
            screen_line(v, line, 0);
        else
            dm_text_printf(&v->out, "%s\n", line);
    }
    if (screen)
        dm_text_puts(&v->out, VT_CLEAR_EOS);
    else
        dm_text_putc(&v->out, '\n');
}

/* ---- entry points ------------------------------------------------------------- */

void dm_top_render_begin(struct dm_top_view *v)
{
    if (v->mode == DM_TOP_SCREEN)
        dm_text_puts(&v->out, VT_HIDE_CURSOR);
    else if (v->mode == DM_TOP_CSV && !v->no_header)
        csv_header(&v->out, v->by, v->cache_writes);
}

void dm_top_render(struct dm_top_view *v, const struct dm_top_interval *iv,
                   uint64_t lost)
{
    switch (v->mode) {
    case DM_TOP_JSON:
    case DM_TOP_CSV:
        for (int i = 0; i < iv->n_rows; i++)
            write_row(&v->out, v->mode == DM_TOP_JSON ? DM_ROW_JSON : DM_ROW_CSV, iv,
                      iv->rows[i], v->no_latency);
        break;
    default:
        draw_text(v, iv, lost);
        break;
    }
}

void dm_top_render_end(struct dm_top_view *v)
{
    if (v->mode == DM_TOP_SCREEN)
        dm_text_puts(&v->out, "\n" VT_SHOW_CURSOR);
}
