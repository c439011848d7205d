/*
 * pipeline.c - one capture from start to exit code.
 *
 * Threads: the source thread runs the source (the ETW ProcessTrace loop, the
 * Linux reader, or the .etl reader) and pushes into the ring; the printer
 * thread drains it; this (main) thread waits, watches for Ctrl+C, -t and the
 * progress line, and does the orderly stop: the source is always stopped
 * before anything waits on the printer, so a printer blocked on a full pipe
 * can never keep a kernel session alive. A printer still blocked after
 * Ctrl+C and a grace period is left behind; its statistics are taken from
 * it (printer.h) so the summary still comes out, on errf.
 *
 * Never destroy data: -r, -o and --metrics must be three files, and
 * --metrics a regular one, checked before anything opens (outputs.h); a -o
 * file is created only once the source has opened.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/filter.h"
#include "core/outputs.h"
#include "core/pipeline.h"
#include "core/printer.h"
#include "core/sink.h"
#include "output/text.h"
#include "platform/platform.h"
#include "views/unknown.h"

#define POLL_MS 20
/* The main thread sleeps until the source ends, the printer stops the run
 * or a signal comes, each of which wakes it; this only bounds a sleep. */
#define IDLE_WAIT_MS 1000u
#define PROGRESS_EVERY_NS 250000000u
/* How long to wait, after Ctrl+C, for a printer stuck writing to a pipe that
 * nobody reads. The session is already stopped by then. */
#define PRINTER_GRACE_MS 2000u

struct source_thread {
    struct dm_source *src;
    struct dm_sink *sink;
    dm_waiter *wake_main;
    int rc;
};

static void source_main(void *arg)
{
    struct source_thread *st = arg;

    st->rc = st->src->ops->run(st->src, st->sink);
    dm_ring_close(st->sink->ring);
    dm_waiter_wake(st->wake_main);
}

/* Everything the threads share, on the heap: if the printer has to be left
 * behind (stuck on a pipe after Ctrl+C), what it points to stays valid until
 * the process exits. */
struct run {
    volatile int stop;
    dm_waiter *wake_main;          /* the main thread sleeps on it */
    dm_waiter *wake_printer;       /* the printer, on the ring (ring.h) */
    struct dm_filter filter;
    struct dm_disk_census census;
    struct dm_sink sink;
    struct dm_printer printer;
    struct dm_view_config view_cfg; /* the views keep a pointer to it */
    char source_label[512];         /* view_cfg.source_label */
    struct source_thread st;
};

static void progress_line(FILE *errf, const char *path, const struct dm_sink *sink,
                          uint64_t start_ns, uint64_t events)
{
    uint64_t total = dm_atomic_load_acquire(&sink->progress_total);
    uint64_t done = dm_atomic_load_acquire(&sink->progress_done);
    double secs = (double)(dm_monotonic_ns() - start_ns) / 1e9;

    if (total == 0)
        return;
    dm_writef(errf, "\rdiskmon: %s %3u%%  %.0f events/s ", path,
              (unsigned)(done * 100 / total), secs > 0 ? (double)events / secs : 0.0);
}

static void progress_erase(FILE *errf)
{
    /* Overwrite with spaces rather than an ANSI sequence: works in every
     * console, including old Windows ones. */
    dm_writef(errf, "\r%79s\r", "");
}

/*
 * The views diskmon has (views/view_list.h, in the order the printer feeds
 * them and the end of the run finishes them). Each is built from the one
 * struct dm_view_config (view_config below) and stays out of the run when
 * the options did not ask for it.
 */
static const struct dm_view_ops *const view_table[] = {
#define DM_VIEW(name) &dm_##name##_view,
#include "views/view_list.h"
#undef DM_VIEW
};
_Static_assert(sizeof view_table / sizeof view_table[0] <= DM_PRINTER_VIEWS_MAX,
               "the printer has room for every view (printer.h)");

static uint64_t ring_dropped(const void *ring)
{
    return dm_ring_dropped((const struct dm_ring *)ring);
}

static void filter_unknown(const void *filter, uint64_t out[DM_FIELD_COUNT])
{
    struct dm_filter_unknown u;

    dm_filter_unknown_read(filter, &u);
    memcpy(out, u.field, sizeof u.field);
}

/* How often the maps are rewritten live without --interval or --top. */
#define HEAT_DEFAULT_NS (10ull * 1000000000ull)

/* The input as the maps' titles name it: the trace, or the live disks
 * (the -d filter as typed). */
static void source_label(char *buf, size_t cap, const struct dm_options *opt)
{
    size_t n;

    if (opt->replay_path != NULL) {
        snprintf(buf, cap, "%s", opt->replay_path);
        return;
    }
    n = (size_t)snprintf(buf, cap, "live, %s", opt->n_disks > 0 ? "disks" : "all disks");
    for (int i = 0; i < opt->n_disks && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i > 0 ? "," : " ", opt->disks[i]);
}

/* What the views are built from: the options, the source, the printer. */
static void view_config(struct dm_view_config *cfg, const struct dm_options *opt,
                        const struct dm_source *src, struct dm_printer *p, FILE *errf)
{
    cfg->summary = opt->summary;
    cfg->hist = opt->hist;
    cfg->top_ns = opt->top_ns;
    cfg->top_by = opt->top_by;
    cfg->format = opt->format;
    cfg->no_header = opt->no_header;
    cfg->metrics_path = opt->metrics_path;
    cfg->metrics_top = opt->metrics_top;
    cfg->metrics_ns = opt->metrics_ns;
    cfg->heatmap_path = opt->heatmap_path;
    cfg->offset_map_path = opt->offset_map_path;
    cfg->report_path = opt->report_path;
    cfg->heatmap_step_ms = opt->heatmap_step_ms;
    cfg->heat_ns = opt->metrics_path != NULL ? opt->metrics_ns
                   : opt->top_ns != 0        ? opt->top_ns
                                             : HEAT_DEFAULT_NS;
    cfg->start_wall_ns = src->start_wall_ns;
    cfg->live = src->is_live;
    cfg->source_name = src->backend != NULL ? src->backend : src->ops->name;
    cfg->lost_base = src->lost_events;
    cfg->task_io = src->task_io;
    cfg->disk_size = src->disk_size;
    cfg->disk_size_ctx = src->disk_size_ctx;
    cfg->no_latency = src->no_latency;
    cfg->out = p->out;
    cfg->drawn = &p->drawn;
    cfg->errf = errf;
    cfg->ring_dropped = ring_dropped;
    cfg->ring_ctx = p->ring;
}

/* Build the views the options ask for into the printer. The daemon mode of
 * --metrics (no -o, -f or --top, options.h) and a view that draws (--top)
 * leave no event lines. Returns 0 or a negative dm_err. */
static int setup_views(struct run *run, const struct dm_options *opt,
                       const struct dm_source *src, FILE *errf)
{
    struct dm_printer *p = &run->printer;

    view_config(&run->view_cfg, opt, src, p, errf);
    run->view_cfg.requests_filtered = !run->filter.pass_all;
    run->view_cfg.unknown = filter_unknown;
    run->view_cfg.unknown_ctx = &run->filter;
    source_label(run->source_label, sizeof run->source_label, opt);
    run->view_cfg.source_label = run->source_label;
    p->live = src->is_live;
    p->no_lines = opt->metrics_path != NULL && opt->output_path == NULL &&
                  !opt->format_given && opt->top_ns == 0;
    for (size_t i = 0; i < sizeof view_table / sizeof view_table[0]; i++) {
        void *state;
        int rc = view_table[i]->create(&run->view_cfg, &state);

        if (rc != 0)
            return rc;
        if (state == NULL)
            continue;
        p->views[p->n_views].ops = view_table[i];
        p->views[p->n_views].state = state;
        p->n_views++;
        if (view_table[i]->draws)
            p->no_lines = 1;
    }
    return 0;
}

/* An output stream's stdio buffer serves only --top's drawing: the header
 * and the event lines go out from the printer's own buffer, one write per
 * buffer (printer.h). */
#define OUTPUT_BUFFER (64u << 10)

void dm_output_buffered(FILE *out)
{
    setvbuf(out, NULL, _IOFBF, OUTPUT_BUFFER);
}

static FILE *open_output(const char *path, FILE *errf)
{
    FILE *out = fopen(path, "wb");

    if (out == NULL) {
        dm_writef(errf, "diskmon: cannot open output file %s: %s\n", path, strerror(errno));
        return NULL;
    }
    dm_output_buffered(out);
    return out;
}

/* After a replay with -d: name the -d entries that matched no disk of the
 * trace, and the disks it does hold, so `-d sda` on a Windows trace is not a
 * silent empty result. Returns 1 when an entry matched nothing: the usage
 * mistake a live run refuses at the start (a -d of a disk that does not
 * exist), found only at the trace's end. */
static int report_unmatched_disks(const struct dm_options *opt,
                                   const struct dm_disk_census *c, FILE *errf)
{
    struct dm_text t = {0}; /* one message, one write */
    char list[512];
    size_t len = 0;
    int unmatched = 0;

    list[0] = '\0';
    for (int i = 0; i < opt->n_disks && i < DM_MAX_DISK_FILTERS; i++) {
        if (c->entry_matched[i])
            continue;
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
                                "%s%s", unmatched ? ", " : "", opt->disks[i]);
        unmatched++;
        if (len >= sizeof list)
            break;
    }
    if (unmatched == 0)
        return 0;
    dm_text_printf(&t, "diskmon: -d %s matched no disk in %s; ", list, opt->replay_path);
    if (c->n == 0) {
        dm_text_puts(&t, "the trace has no disk I/O\n");
    } else {
        dm_text_printf(&t, "its disk%s: ", c->n > 1 ? "s are" : " is");
        for (int i = 0; i < c->n; i++)
            dm_text_printf(&t, "%s%s", i > 0 ? ", " : "", c->names[i]);
        dm_text_printf(&t, "%s\n", c->more ? ", ..." : "");
    }
    dm_text_write(&t, errf);
    dm_text_free(&t);
    return 1;
}

/* Requests a filter could not decide on (core/filter.h): not shown, so
 * the run ends as one that lost events (exit 3), with one line. */
static void report_unknown(const struct dm_filter *f, FILE *errf, int *exit_code)
{
    struct dm_filter_unknown u;
    char line[512] = "diskmon";

    dm_filter_unknown_read(f, &u);
    if (u.requests == 0)
        return;
    dm_unknown_append(line, sizeof line, u.field, ": ");
    dm_writef(errf, "%s (the filter could not tell whether they match)\n", line);
    if (*exit_code == DM_EXIT_OK)
        *exit_code = DM_EXIT_LOST;
}

int dm_run(const struct dm_options *opt, const struct dm_source_ops *ops,
           FILE *out, FILE *errf)
{
    struct dm_run_info info;

    return dm_run_ex(opt, ops, out, errf, &info);
}

/* What the main thread keeps through a run's stages (dm_run_ex). */
struct stages {
    const struct dm_options *opt;
    const struct dm_source_ops *ops;
    FILE *errf;
    FILE *own_out; /* the -o file, opened here */
    struct dm_run_info *info;
    struct dm_source src;
    struct run *run; /* NULL until start_views */
    dm_thread *source_thr, *printer_thr;
    int printer_joined, progress_shown;
    uint64_t start_ns;
    int exit_code;
};

/* Open the source, then the -o file. Returns -1 when both are open, else
 * the exit code of a run that ends here (the source was closed). */
static int open_source(struct stages *s, FILE **out)
{
    const struct dm_options *opt = s->opt;
    const struct dm_source_ops *ops = s->ops;
    struct dm_source *src = &s->src;
    FILE *errf = s->errf;
    int rc;

    rc = dm_outputs_check(opt, *out, errf);
    if (rc != 0)
        return rc;
    memset(src, 0, sizeof *src);
    src->ops = ops;
    rc = ops->open(src, opt);
    dm_notes_flush(&src->notes, errf);
    if (rc == DM_ESTOPPED) {
        /* The source finished its whole job in open() (--cleanup). */
        if (src->errmsg[0] != '\0')
            dm_writef(errf, "diskmon: %s\n", src->errmsg);
        ops->close(src);
        dm_notes_flush(&src->notes, errf);
        return DM_EXIT_OK;
    }
    if (rc != 0) {
        dm_writef(errf, "diskmon: %s\n", src->errmsg[0] ? src->errmsg : dm_strerror(rc));
        ops->close(src);
        dm_notes_flush(&src->notes, errf);
        /* A source may find a usage mistake only when it opens (-d NAME of
         * a disk that does not exist). */
        return rc == DM_EUSAGE ? DM_EXIT_USAGE : DM_EXIT_ERROR;
    }
    /* Only now, with the input known to be readable, may the output file be
     * created or truncated: a failed run leaves an existing -o file intact. */
    if (*out == NULL) {
        *out = s->own_out = open_output(opt->output_path, errf);
        if (*out == NULL) {
            ops->close(src);
            dm_notes_flush(&src->notes, errf);
            return DM_EXIT_ERROR;
        }
    }
    return -1;
}

/* The run's shared state: filter, sink, ring, printer and the views the
 * options ask for. Returns 0, or -1 with the exit code set (s->run NULL
 * when even its memory was refused: the source is closed then). */
static int start_views(struct stages *s, FILE *out)
{
    const struct dm_options *opt = s->opt;
    struct dm_source *src = &s->src;
    FILE *errf = s->errf;
    struct run *run;

    run = calloc(1, sizeof *run);
    if (run == NULL) {
        dm_writef(errf, "diskmon: %s\n", dm_strerror(DM_ENOMEM));
        s->ops->close(src);
        dm_notes_flush(&src->notes, errf);
        if (s->own_out != NULL)
            fclose(s->own_out);
        s->exit_code = DM_EXIT_ERROR;
        return -1;
    }
    s->run = run;
    dm_filter_init(&run->filter, opt);
    if (!src->is_live && opt->n_disks > 0)
        dm_filter_keep_census(&run->filter, &run->census);
    run->sink.ring = dm_ring_create(src->is_live ? DM_RING_LIVE_BYTES
                                                   : DM_RING_REPLAY_BYTES);
    run->sink.filter = &run->filter;
    run->sink.wait_when_full = !src->is_live;
    run->sink.stop_flag = &run->stop;
    run->printer.ring = run->sink.ring;
    run->printer.out = out;
    run->printer.fo.format = opt->format;
    run->printer.fo.clock = opt->clock;
    run->printer.fo.utc = opt->utc;
    run->printer.fo.tz = src->time_zone;
    run->printer.fo.queue = opt->queue;
    run->printer.fo.show_file = src->has_files;
    run->printer.fo.start_wall_ns = src->start_wall_ns;
    run->printer.no_header = opt->no_header;
    run->printer.count_limit = opt->count;
    run->printer.time_limit_ns = src->is_live ? 0 : opt->duration_ns;
    run->printer.stop_flag = &run->stop;
    run->st.src = src;
    run->st.sink = &run->sink;
    run->wake_main = run->st.wake_main = run->printer.wake_main = dm_waiter_create(1);
    run->wake_printer = dm_waiter_create(0);
    if (run->sink.ring != NULL)
        dm_ring_set_waiter(run->sink.ring, run->wake_printer);
    if (run->sink.ring == NULL || run->wake_main == NULL || run->wake_printer == NULL ||
        setup_views(run, opt, src, errf) != 0) {
        dm_writef(errf, "diskmon: %s\n", dm_strerror(DM_ENOMEM));
        s->exit_code = DM_EXIT_ERROR;
        return -1;
    }
    return 0;
}

/* The printer and the source on their threads. Returns 0, or -1 with the
 * run stopped and the exit code set. */
static int start_threads(struct stages *s)
{
    struct run *run = s->run;

    s->start_ns = dm_monotonic_ns();
    if (dm_thread_start(&s->printer_thr, dm_printer_main, &run->printer) != 0 ||
        dm_thread_start(&s->source_thr, source_main, &run->st) != 0) {
        dm_writef(s->errf, "diskmon: cannot start a thread\n");
        s->exit_code = DM_EXIT_ERROR;
        dm_atomic_store_int(&run->stop, 1);
        s->ops->stop(&s->src);
        dm_ring_close(run->sink.ring);
        return -1;
    }
    return 0;
}

/* The loop: until the source ends, or Ctrl+C, -n (the printer) or live -t
 * stops the source; meanwhile a replay's progress line on a terminal. */
static void watch(struct stages *s)
{
    const struct dm_options *opt = s->opt;
    struct run *run = s->run;
    int show_progress = opt->replay_path != NULL && dm_is_terminal(s->errf);
    uint64_t last_progress = 0, start_ns = s->start_ns;

    for (;;) {
        uint64_t now = dm_monotonic_ns();
        unsigned wait = show_progress ? POLL_MS : IDLE_WAIT_MS;

        if (s->src.is_live && opt->duration_ns != 0) {
            uint64_t left = now - start_ns >= opt->duration_ns
                                ? 0 : opt->duration_ns - (now - start_ns);
            uint64_t left_ms = (left + 999999u) / 1000000u;

            if (left_ms < wait)
                wait = (unsigned)left_ms;
        }
        /* Asleep until the source ends (it wakes us), the printer stops the
         * run, a signal comes, or -t or the progress line is due: an idle
         * capture wakes this thread about once a second. */
        if (wait > 0)
            dm_waiter_wait(run->wake_main, wait, NULL);
        if (dm_thread_join_timeout(s->source_thr, 0) == 0) {
            s->source_thr = NULL;
            break;
        }
        now = dm_monotonic_ns();
        if (dm_interrupted() || dm_atomic_load_int(&run->stop) ||
            (s->src.is_live && opt->duration_ns != 0 && now - start_ns >= opt->duration_ns)) {
            /* Keep the printer's DM_SINK_STOP_ENOUGH (-n) if it set one. */
            if (dm_atomic_load_int(&run->stop) == 0)
                dm_atomic_store_int(&run->stop, DM_SINK_STOP_ASKED);
            s->ops->stop(&s->src);
            break;
        }
        if (show_progress && now - last_progress >= PROGRESS_EVERY_NS) {
            progress_line(s->errf, opt->replay_path, &run->sink, start_ns,
                          dm_ring_pushed(run->sink.ring));
            s->progress_shown = 1;
            last_progress = now;
        }
    }
}

/* The source thread first, then the printer: it drains the ring, or is
 * left behind when Ctrl+C finds it stuck on a pipe nobody reads. */
static void join_threads(struct stages *s)
{
    struct run *run = s->run;
    FILE *errf = s->errf;

    if (s->source_thr != NULL)
        dm_thread_join(s->source_thr);
    if (s->progress_shown)
        progress_erase(errf);
    /* What the source has to say about its run (late events, where losses
     * came from) comes before the summary, as it did when sources wrote to
     * stderr themselves. The source thread has ended: the notes are ours. */
    dm_notes_flush(&s->src.notes, errf);
    /* The source has stopped (a live session is gone). Wait for the printer
     * to drain; if Ctrl+C comes while it is stuck on a pipe nobody reads,
     * give it a grace period and then leave without it. */
    if (s->printer_thr != NULL) {
        for (;;) {
            unsigned wait = dm_interrupted() ? PRINTER_GRACE_MS : POLL_MS * 5;

            if (dm_thread_join_timeout(s->printer_thr, wait) == 0) {
                s->printer_joined = 1;
                break;
            }
            if (dm_interrupted() && wait == PRINTER_GRACE_MS)
                break;
        }
    }
    /* A printer left behind still exists: take its results from it (it is
     * stuck in a write, never inside the statistics, see printer.h). */
    if (!s->printer_joined && s->printer_thr != NULL) {
        dm_printer_take_results(&run->printer);
        s->info->printer_left = 1;
    }
}

/* The source's and the output's failures, each one line. */
static void report_failures(struct stages *s)
{
    struct run *run = s->run;
    FILE *errf = s->errf;

    if (run->st.rc != 0 && run->st.rc != DM_ESTOPPED) {
        dm_writef(errf, "diskmon: %s\n",
                  s->src.errmsg[0] ? s->src.errmsg : dm_strerror(run->st.rc));
        s->exit_code = DM_EXIT_ERROR;
    }
    if (s->printer_joined && run->printer.write_errno != 0) {
        /* Name the file: "Input/output error" alone (-o /proc/version)
         * does not say which side failed. */
        if (s->own_out != NULL)
            dm_writef(errf, "diskmon: cannot write output file %s: %s\n", s->opt->output_path,
                      strerror(run->printer.write_errno));
        else
            dm_writef(errf, "diskmon: cannot write to standard output: %s\n",
                      strerror(run->printer.write_errno));
        s->exit_code = DM_EXIT_ERROR;
    }
}

/* The one loss line: the source's own account of its part (Linux: which
 * transport, what the kernel dropped) is folded in, not a second line. */
static void report_loss(struct stages *s, const struct dm_loss *loss, struct dm_text *text)
{
    const struct dm_source *src = &s->src;
    uint64_t lost = loss->ring_dropped + loss->source_lost;

    if (lost == 0 && src->lost_buffers > 0) {
        /* Only whole buffers: their events were never counted. */
        dm_writef(s->errf, "diskmon: events lost (%s)\n", src->loss_detail);
        if (s->exit_code == DM_EXIT_OK)
            s->exit_code = DM_EXIT_LOST;
    } else if (lost > 0) {
        /* Only the parts that are not zero: "0 dropped" beside a loss reads
         * as a contradiction to a user counting the parts. */
        dm_text_printf(text, "diskmon: %" PRIu64 " event%s lost (", lost,
                       lost == 1 ? "" : "s");
        if (loss->ring_dropped > 0)
            dm_text_printf(text, "%" PRIu64 " dropped because the output could not keep up%s",
                           loss->ring_dropped, loss->source_lost > 0 ? ", " : "");
        if (loss->source_lost > 0)
            dm_text_printf(text, "%" PRIu64 " lost before diskmon saw %s", loss->source_lost,
                           loss->source_lost == 1 ? "it" : "them");
        dm_text_printf(text, "%s%s)\n", src->loss_detail[0] != '\0' ? "; " : "",
                       src->loss_detail);
        dm_text_write(text, s->errf);
        if (s->exit_code == DM_EXIT_OK)
            s->exit_code = DM_EXIT_LOST;
    }
}

/* The end of the run on errf: failures, the views' reports (the summary),
 * what a blocked output never printed, the replay's unmatched -d entries
 * and the loss line; each may set the exit code. */
static void end_summary(struct stages *s)
{
    const struct dm_options *opt = s->opt;
    const struct dm_source *src = &s->src;
    struct run *run = s->run;
    FILE *errf = s->errf;
    uint64_t printed = run->printer.counted, max_time_ns = run->printer.max_time_ns;
    struct dm_loss loss;
    struct dm_view_end end;
    struct dm_text text = {0}; /* the summary and the loss line, each one write */

    report_failures(s);
    loss.ring_dropped = dm_ring_dropped(run->sink.ring);
    loss.source_lost = src->lost_events;
    loss.malformed = src->malformed;
    filter_unknown(&run->filter, loss.unknown);
    /* The summary goes to errf even when the output is blocked: it describes
     * the events that reached the printer. */
    /* A replay cut by -t covered -t of trace time, however long before it
     * the last event came (none at all in `-t 1` of a trace whose first
     * I/O is at 1.2 s). */
    if (!src->is_live && run->printer.time_limit_hit && max_time_ns < opt->duration_ns)
        max_time_ns = opt->duration_ns;
    /* The views' reports (the summary) go into text, one write; --metrics
     * makes its last write (replay: the only one) with the run's whole
     * account of losses. */
    end.elapsed_ns = src->is_live ? dm_monotonic_ns() - s->start_ns : max_time_ns;
    end.loss = &loss;
    end.report = &text;
    for (int v = 0; v < run->printer.n_views; v++) {
        const struct dm_view *view = &run->printer.views[v];

        if (view->ops->finish != NULL && view->ops->finish(view->state, &end) != 0)
            s->exit_code = DM_EXIT_ERROR;
    }
    dm_text_write(&text, errf);
    if (s->info->printer_left) {
        uint64_t decoded = dm_ring_pushed(run->sink.ring);

        dm_writef(errf,
                  "diskmon: the output was blocked: %" PRIu64 " of %" PRIu64
                  " events decoded were never printed\n",
                  decoded > printed ? decoded - printed : 0, decoded);
    }
    if (!src->is_live && opt->n_disks > 0 && run->st.rc == 0 &&
        !dm_atomic_load_int(&run->stop) && report_unmatched_disks(opt, &run->census, errf) &&
        s->exit_code == DM_EXIT_OK)
        s->exit_code = DM_EXIT_USAGE;
    report_loss(s, &loss, &text);
    report_unknown(&run->filter, errf, &s->exit_code);
    dm_text_free(&text);
}

/* Close the source and the -o file, and free the run unless a printer left
 * behind still holds it. Returns the exit code. */
static int close_run(struct stages *s)
{
    struct run *run = s->run;
    FILE *errf = s->errf;

    if (run == NULL)
        return s->exit_code; /* start_views closed what was open */
    s->ops->close(&s->src);
    dm_notes_flush(&s->src.notes, errf);
    dm_interrupt_done();
    if (s->own_out != NULL && !s->info->printer_left && fclose(s->own_out) != 0 &&
        s->exit_code != DM_EXIT_ERROR) {
        dm_writef(errf, "diskmon: cannot write output file %s: %s\n", s->opt->output_path,
                  strerror(errno));
        s->exit_code = DM_EXIT_ERROR;
    }
    if (s->printer_joined || s->printer_thr == NULL) {
        for (int v = 0; v < run->printer.n_views; v++)
            run->printer.views[v].ops->destroy(run->printer.views[v].state);
        dm_text_free(&run->printer.drawn);
        dm_ring_destroy(run->sink.ring);
        dm_waiter_destroy(run->wake_main);
        dm_waiter_destroy(run->wake_printer);
        free(run);
    }
    /* else: the printer thread still holds them; the process is exiting. */
    return s->exit_code;
}

/* A run's shape: open the source, start the views and the threads, watch
 * until the end, join, the end summary and the exit code. */
int dm_run_ex(const struct dm_options *opt, const struct dm_source_ops *ops,
              FILE *out, FILE *errf, struct dm_run_info *info)
{
    struct stages s = {.opt = opt, .ops = ops, .errf = errf, .info = info,
                       .exit_code = DM_EXIT_OK};
    int rc;

    memset(info, 0, sizeof *info);
    if (out == NULL && opt->output_path == NULL)
        out = stdout; /* nothing else was named */
    rc = open_source(&s, &out);
    if (rc >= 0)
        return rc;
    if (start_views(&s, out) == 0) {
        if (start_threads(&s) == 0)
            watch(&s);
        join_threads(&s);
        end_summary(&s);
    }
    return close_run(&s);
}
