/*
 * test_pipeline.c - the pipeline's one diagnostics channel (diskmon.h,
 * struct dm_notes) and its one loss line, through dm_run with a scripted
 * source: a plain in-test source (no OS, no fake of one) that emits two
 * events, writes a note in open(), run() and close(), and reports losses
 * with its own account of them.
 */
#include <stdio.h>
#include <string.h>

#include "core/options.h"
#include "core/pipeline.h"
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
    "scripted", scripted_open, scripted_run, scripted_stop, scripted_close,
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

const struct dmt_case dm_suite_pipeline[] = {
    {"notes_and_one_loss_line", notes_and_one_loss_line},
    {"notes_cut_not_overflowed", notes_cut_not_overflowed},
    {NULL, NULL},
};
