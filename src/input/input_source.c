/*
 * input_source.c - the source -r runs (input.h, dm_input_source): opens
 * the input, reads its start, picks the format (--input-format, or the
 * first in input_list.h that recognises the start) and runs it: a format
 * with a source of its own (.etl) through that source, on a dm_source of
 * its own whose results are handed on; a line format through the line
 * runner (lines.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "input/input.h"
#include "input/lines.h"
#include "platform/platform.h"

/* How long a read of the start waits before looking for Ctrl+C. */
#define HEAD_WAIT_MS 100u

struct input {
    const struct dm_input_format *fmt;
    struct dm_source inner;      /* a format with a source of its own */
    struct dm_lines *lines;      /* a line format */
};

/* What the inner source set, handed on to src (whose own ops, state and
 * the notes already printed stay): after its open(), and after its
 * close(), when no other thread looks at src. */
static void take_results(struct dm_source *src, const struct dm_source *inner)
{
    const struct dm_source_ops *ops = src->ops;
    void *impl = src->impl;
    size_t shown = src->notes.shown, info_shown = src->info.shown;

    *src = *inner;
    src->ops = ops;
    src->impl = impl;
    src->notes.shown = shown < src->notes.len ? shown : src->notes.len;
    src->info.shown = info_shown < src->info.len ? info_shown : src->info.len;
}

/* What the inner source's run() set (the fields diskmon.h says main reads
 * after run() returned), handed on from the source thread. Only those: the
 * main thread reads src->impl (input_stop) and src->is_live while the run
 * goes on, so a copy of the whole struct here, even one that puts them
 * back, races with it (a stop that read impl mid-copy called through the
 * inner source's state: a crash about one run in a hundred under -t). */
static void take_run_results(struct dm_source *src, const struct dm_source *inner)
{
    size_t shown = src->notes.shown;

    src->lost_events = inner->lost_events;
    src->lost_buffers = inner->lost_buffers;
    src->malformed = inner->malformed;
    memcpy(src->errmsg, inner->errmsg, sizeof src->errmsg);
    memcpy(src->loss_detail, inner->loss_detail, sizeof src->loss_detail);
    src->notes = inner->notes;
    src->notes.shown = shown < src->notes.len ? shown : src->notes.len;
}

/* The start of the input, up to DM_SNIFF_BYTES: a file's, or a stream's
 * up to the end of its first line (a slow pipe is not waited on for more).
 * 0, DM_ESTOPPED on Ctrl+C, or a negative dm_err. */
static int read_head(dm_infile *in, char *head, size_t *len, char *why, size_t cap)
{
    int stream = dm_infile_size(in) == 0;

    *len = 0;
    while (*len < DM_SNIFF_BYTES) {
        size_t got = 0;
        int rc = dm_infile_read(in, head + *len, DM_SNIFF_BYTES - *len, HEAD_WAIT_MS, &got);

        if (rc < 0) {
            snprintf(why, cap, "%s", dm_strerror(rc));
            return rc;
        }
        if (rc == 1)
            break;
        if (got == 0 && dm_interrupted())
            return DM_ESTOPPED;
        if (stream && memchr(head + *len, '\n', got) != NULL) {
            *len += got;
            break;
        }
        *len += got;
    }
    return 0;
}

static int not_recognised(struct dm_source *src, const char *name, size_t len)
{
    char names[320];

    dm_input_names(names, sizeof names);
    snprintf(src->errmsg, sizeof src->errmsg,
             "%s: %s; diskmon reads %s (--input-format NAME picks one)", name,
             len == 0 ? "it is empty" : "not a format diskmon reads", names);
    return DM_EUSAGE;
}

/* --cgroup and --by cgroup on a format without a cgroup field (.etl, the
 * public traces) would pick nothing or group everything under "-": refused,
 * naming why. A capture of diskmon's own has the field (empty where the
 * capturing machine knew no cgroup: those rows are unknown, filter.h). */
static int cgroups_refused(struct dm_source *src, const struct dm_options *opt,
                           const struct dm_input_format *fmt, const char *name)
{
    if ((fmt->flags & DM_INPUT_CGROUPS) ||
        (opt->n_cgroups == 0 && !(opt->top_ns != 0 && opt->top_by == DM_TOP_BY_CGROUP)))
        return 0;
    snprintf(src->errmsg, sizeof src->errmsg,
             "%s: %s is for inputs that name each request's cgroup; %s have no cgroup "
             "field (a Linux capture's -f json or csv has one)", name,
             opt->n_cgroups > 0 ? "--cgroup" : "--by cgroup", fmt->what);
    return DM_EUSAGE;
}

static int open_format(struct dm_source *src, const struct dm_options *opt,
                       struct input *ip, dm_infile *in, const char *head, size_t len,
                       const char *name)
{
    int rc;

    if (ip->fmt->source == NULL)
        return dm_lines_open(&ip->lines, ip->fmt, in, head, len, name, src);
    if (dm_infile_size(in) == 0) {
        dm_infile_close(in);
        snprintf(src->errmsg, sizeof src->errmsg,
                 "%s: %s are read twice, so from a file, not from a pipe or "
                 "standard input", name, ip->fmt->what);
        return DM_EUSAGE;
    }
    dm_infile_close(in);
    ip->inner.ops = ip->fmt->source;
    rc = ip->fmt->source->open(&ip->inner, opt);
    take_results(src, &ip->inner);
    return rc;
}

static int input_open(struct dm_source *src, const struct dm_options *opt)
{
    const char *path = opt != NULL ? opt->replay_path : NULL;
    const char *name = path != NULL && strcmp(path, "-") == 0 ? "standard input" : path;
    struct input *ip;
    dm_infile *in = NULL;
    char head[DM_SNIFF_BYTES], why[256];
    size_t len = 0;
    int rc;

    src->is_live = 0;
    src->errmsg[0] = '\0';
    if (path == NULL) {
        snprintf(src->errmsg, sizeof src->errmsg, "no input given: use -r FILE");
        return DM_EUSAGE;
    }
    ip = calloc(1, sizeof *ip);
    if (ip == NULL) {
        snprintf(src->errmsg, sizeof src->errmsg, "out of memory opening %s", name);
        return DM_ENOMEM;
    }
    src->impl = ip;
    rc = dm_infile_open(&in, path, why, sizeof why);
    if (rc != 0) {
        /* the wording the .etl reader had for the same failures */
        if (strcmp(why, "it is a directory") == 0)
            snprintf(src->errmsg, sizeof src->errmsg, "%s: is a directory, not a trace or "
                     "capture file", name);
        else
            snprintf(src->errmsg, sizeof src->errmsg, "%s: cannot open: %s (check the path "
                     "and permissions)", name, why);
        return rc == DM_ENOTFOUND ? DM_EOPEN : rc;
    }
    rc = read_head(in, head, &len, why, sizeof why);
    if (rc != 0) {
        dm_infile_close(in);
        if (rc != DM_ESTOPPED)
            snprintf(src->errmsg, sizeof src->errmsg, "cannot read %s: %s", name, why);
        return rc;
    }
    ip->fmt = opt->input_format != NULL ? dm_input_by_name(opt->input_format)
                                        : dm_input_sniff(head, len);
    if (ip->fmt == NULL) {
        dm_infile_close(in);
        return not_recognised(src, name, len);
    }
    rc = cgroups_refused(src, opt, ip->fmt, name);
    if (rc != 0) {
        dm_infile_close(in);
        return rc;
    }
    return open_format(src, opt, ip, in, head, len, name);
}

static int input_run(struct dm_source *src, struct dm_sink *sink)
{
    struct input *ip = src->impl;
    int rc;

    if (ip == NULL || ip->fmt == NULL)
        return DM_EUSAGE;
    if (ip->lines != NULL)
        return dm_lines_run(ip->lines, src, sink);
    rc = ip->inner.ops->run(&ip->inner, sink);
    take_run_results(src, &ip->inner);
    return rc;
}

/* A line format's reads wait at most 100 ms and then look at the sink's
 * stop flag; an inner source is woken by its own stop. */
static void input_stop(struct dm_source *src)
{
    struct input *ip = src->impl;

    if (ip != NULL && ip->inner.ops != NULL)
        ip->inner.ops->stop(&ip->inner);
}

static void input_close(struct dm_source *src)
{
    struct input *ip = src->impl;

    if (ip == NULL)
        return;
    if (ip->inner.ops != NULL) {
        ip->inner.ops->close(&ip->inner);
        take_results(src, &ip->inner);
    }
    dm_lines_close(ip->lines);
    free(ip);
    src->impl = NULL;
}

const struct dm_source_ops dm_input_source = {
    "replay", input_open, input_run, input_stop, input_close, NULL,
};
