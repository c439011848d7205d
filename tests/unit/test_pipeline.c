/*
 * test_pipeline.c - the pipeline's one diagnostics channel (diskmon.h,
 * struct dm_notes) and its one loss line, through dm_run with a scripted
 * source: a plain in-test source (no OS, no fake of one) that emits two
 * events, writes a note in open(), run() and close(), and reports losses
 * with its own account of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/format.h"
#include "cli/options.h"
#include "core/pipeline.h"
#include "core/printer.h"
#include "core/sink.h"
#include "diskmon.h"
#include "dmtest.h"

static int scripted_open(struct dm_source *src, const struct dm_options *opt)
{
    (void)opt;
    src->is_live = 1;
    dm_note(&src->notes, "diskmon: note from open\n");
    return 0;
}

static int scripted_run(struct dm_source *src, struct dm_sink *sink)
{
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.disk_name = ev.process = ev.file = "";
    ev.duration_ns = 1000;
    ev.transfer_size = 4096;
    for (int i = 0; i < 2; i++) {
        ev.time_ns = (uint64_t)(i + 1) * 1000000u;
        if (dm_sink_emit(sink, &ev) == DM_ESTOPPED)
            break;
    }
    dm_note(&src->notes, "diskmon: note from run\n");
    src->lost_events = 4;
    snprintf(src->loss_detail, sizeof src->loss_detail,
             "block tracepoints via tracefs: 4 events dropped by the kernel");
    return 0;
}

static void scripted_stop(struct dm_source *src)
{
    (void)src;
}

static void scripted_close(struct dm_source *src)
{
    dm_note(&src->notes, "diskmon: note from close\n");
}

static const struct dm_source_ops scripted_source = {
    "scripted", scripted_open, scripted_run, scripted_stop, scripted_close, NULL,
};

static size_t read_back(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    return n;
}

/* Each note once, in order, on errf; one loss line that carries the
 * source's account; exit 3 (events lost). */
DM_TEST(notes_and_one_loss_line)
{
    struct dm_options opt;
    char *argv[] = {(char *)"diskmon", (char *)"--no-header", NULL};
    char err[2048], out[1024];
    FILE *outf = tmpfile(), *errf = tmpfile();
    int rc;

    DM_ASSERT(outf != NULL && errf != NULL);
    DM_ASSERT_EQ_INT(dm_options_parse(&opt, 2, argv, err, sizeof err), 0);
    rc = dm_run(&opt, &scripted_source, outf, errf);
    read_back(errf, err, sizeof err);
    read_back(outf, out, sizeof out);
    fclose(outf);
    fclose(errf);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_LOST);
    DM_ASSERT_STR_EQ(err,
                     "diskmon: note from open\n"
                     "diskmon: note from run\n"
                     "diskmon: 4 events lost (4 lost before diskmon saw them; "
                     "block tracepoints "
                     "via tracefs: 4 events dropped by the kernel)\n"
                     "diskmon: note from close\n");
    /* Two event lines reached the output. */
    DM_ASSERT(strchr(out, '\n') != NULL && strchr(strchr(out, '\n') + 1, '\n') != NULL);
}

/* A note that does not fit is cut but stays one line; nothing overflows. */
DM_TEST(notes_cut_not_overflowed)
{
    struct dm_notes n;
    char line[300];

    memset(&n, 0, sizeof n);
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    for (int i = 0; i < 10; i++)
        dm_note(&n, "diskmon: %s\n", line);
    DM_ASSERT(n.len < sizeof n.text);
    DM_ASSERT_EQ_INT(n.text[n.len - 1], '\n');
    DM_ASSERT_EQ_U64(strlen(n.text), n.len);
    dm_note(NULL, "ignored\n"); /* no notes: no crash */
}

/* --- the printer's output buffer ---------------------------------------------
 * A replay-like scripted source (waits when the ring is full, names files)
 * emits MANY_EVENTS events whose lines, about 300 bytes each, fill the
 * printer's buffer (printer.h, DM_PRINTER_BUFFER) many times over. The
 * output must be exactly the header and each event's dm_format_event line
 * in order (the formatter itself is checked against a reference in
 * test_format.c): nothing lost, doubled or reordered where a buffer ends. */
#define MANY_EVENTS 20000

/* The names of the events below live in the test's own storage, and only
 * this function hands them to an event (the event's fixed arrays take a
 * copy; were the names pointers, it would point them there). */
static void name_event(struct dm_event *ev, const char *disk, const char *process,
                       const char *file)
{
    /* Borrowed, as a source's are (diskmon.h): the callers' storage. */
    ev->disk_name = disk;
    ev->process = process;
    ev->file = file;
}

/* Event i; its names stay valid until the next call (the sink copies them
 * into the ring). */
static struct dm_event many_event(int i)
{
    static char process[DM_PROCESS_MAX], file[DM_FILE_MAX];
    struct dm_event ev;

    memset(&ev, 0, sizeof ev);
    ev.partition = ev.cgroup = "";
    ev.time_ns = (uint64_t)i * 1000003u;
    ev.duration_ns = 1000u + (uint64_t)(i % 977) * 12345u;
    ev.byte_offset = (uint64_t)i * 4096u * 7919u;
    ev.transfer_size = 512u << (i % 9);
    ev.disk = (uint32_t)(i % 3);
    ev.pid = (uint32_t)(4 + i % 50);
    ev.tid = (uint32_t)(100 + i % 70);
    ev.request = (uint8_t)(i % 4);
    ev.flags = DM_EV_HAS_PID | DM_EV_HAS_TID | DM_EV_HAS_PROCESS | DM_EV_HAS_FILE;
    snprintf(process, sizeof process, "app%04d.exe", i % 97);
    /* Lengths from 20 to 240 bytes, some with a comma and a quote. */
    snprintf(file, sizeof file, "\\Device\\HarddiskVolume2\\%.*s\\f%07d%s.dat",
             i % 221, "data\\a\\much\\deeper\\folder\\tree\\used\\for\\longer\\names\\"
                      "data\\a\\much\\deeper\\folder\\tree\\used\\for\\longer\\names\\"
                      "data\\a\\much\\deeper\\folder\\tree\\used\\for\\longer\\names\\"
                      "data\\a\\much\\deeper\\folder\\tree\\used\\for\\longer\\names\\",
             i, i % 5 == 0 ? ",\"x\"" : "");
    name_event(&ev, "", process, file);
    return ev;
}

static int many_open(struct dm_source *src, const struct dm_options *opt)
{
    (void)opt;
    src->is_live = 0;
    src->has_files = 1;
    return 0;
}

static int many_run(struct dm_source *src, struct dm_sink *sink)
{
    (void)src;
    for (int i = 0; i < MANY_EVENTS; i++) {
        struct dm_event ev = many_event(i);

        if (dm_sink_emit(sink, &ev) == DM_ESTOPPED)
            break;
    }
    return 0;
}

static void many_close(struct dm_source *src)
{
    (void)src;
}

static const struct dm_source_ops many_source = {
    "many", many_open, many_run, scripted_stop, many_close, NULL,
};

/* The output of diskmon ARGS with many_source, read back into a new buffer
 * (*len bytes); NULL on failure. */
static char *run_many(int argc, char **argv, int *rc, size_t *len)
{
    struct dm_options opt;
    char err[256];
    FILE *outf = tmpfile(), *errf = tmpfile();
    char *buf = NULL;
    long size;

    if (outf == NULL || errf == NULL ||
        dm_options_parse(&opt, argc, argv, err, sizeof err) != 0)
        goto out;
    *rc = dm_run(&opt, &many_source, outf, errf);
    if (fseek(outf, 0, SEEK_END) != 0 || (size = ftell(outf)) < 0)
        goto out;
    buf = malloc((size_t)size + 1);
    rewind(outf);
    if (buf != NULL) {
        *len = fread(buf, 1, (size_t)size, outf);
        buf[*len] = '\0';
    }
out:
    if (outf != NULL)
        fclose(outf);
    if (errf != NULL)
        fclose(errf);
    return buf;
}

DM_TEST(printer_buffer_lines_in_order)
{
    static const char *const formats[] = {"text", "csv", "json"};

    for (int f = 0; f < 3; f++) {
        char *argv[] = {(char *)"diskmon", (char *)"-f", (char *)formats[f], NULL};
        struct dm_format_opts fo;
        char line[DM_LINE_MAX];
        size_t len = 0, at, n;
        int rc = -1;
        char *out = run_many(3, argv, &rc, &len);

        DM_ASSERT(out != NULL);
        DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
        memset(&fo, 0, sizeof fo);
        fo.format = (enum dm_format)f;
        fo.show_file = 1;
        at = dm_format_header(line, sizeof line, &fo);
        DM_ASSERT(at <= len && memcmp(out, line, at) == 0);
        /* Well past a few buffers' worth. */
        DM_ASSERT(len > 8 * (size_t)DM_PRINTER_BUFFER);
        for (int i = 0; i < MANY_EVENTS; i++) {
            struct dm_event ev = many_event(i);

            n = dm_format_event(line, sizeof line, &fo, (uint64_t)i + 1, &ev);
            if (at + n > len || memcmp(out + at, line, n) != 0) {
                dmt_fail_at(__FILE__, __LINE__, "%s line %d differs at byte %zu",
                            formats[f], i + 1, at);
                free(out);
                return;
            }
            at += n;
        }
        DM_ASSERT_EQ_U64(at, len);
        free(out);
    }
}

/* -n N prints exactly N lines after the header, whatever the batch and
 * buffer sizes, and the run ends well (exit 0). */
DM_TEST(printer_count_limit_exact)
{
    static const char *const counts[] = {"1", "255", "256", "257", "4321"};

    for (int c = 0; c < 5; c++) {
        char *argv[] = {(char *)"diskmon", (char *)"-n", (char *)counts[c],
                        (char *)"--no-header", NULL};
        size_t len = 0, lines = 0;
        int rc = -1;
        char *out = run_many(4, argv, &rc, &len);

        DM_ASSERT(out != NULL);
        DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
        for (size_t i = 0; i < len; i++)
            lines += out[i] == '\n';
        DM_ASSERT_EQ_U64(lines, strtoull(counts[c], NULL, 10));
        DM_ASSERT(len > 0 && out[len - 1] == '\n');
        free(out);
    }
}

const struct dmt_case dm_suite_pipeline[] = {
    {"printer_buffer_lines_in_order", printer_buffer_lines_in_order},
    {"printer_count_limit_exact", printer_count_limit_exact},
    {"notes_and_one_loss_line", notes_and_one_loss_line},
    {"notes_cut_not_overflowed", notes_cut_not_overflowed},
    {NULL, NULL},
};
