/*
 * outputs.c - the run's files, checked before anything is opened
 * (outputs.h). diskmon runs as root: writing the event lines over the trace
 * being read, renaming the metrics over it or over the event lines, or
 * replacing a device node or a symbolic link's target would destroy data
 * nobody asked it to touch. Identity, not spelling, decides (platform.h
 * "Files").
 */
#include "core/outputs.h"
#include "core/pipeline.h"
#include "output/text.h"
#include "platform/platform.h"

/* 1 when the stream out is the file at path. */
static int stream_is(FILE *out, const char *path)
{
    struct dm_file_id s, p;

    return out != NULL && path != NULL && dm_file_id_of_stream(out, &s) &&
           dm_file_id_of_path(path, &p) && s.volume == p.volume && s.index == p.index;
}

static int same(const char *a, const char *b)
{
    return a != NULL && b != NULL && dm_file_same(a, b);
}

static int metrics_check(const struct dm_options *opt, FILE *out, FILE *errf);

/* A file a view replaces (--heatmap, --offset-map, --report): a regular file or a
 * new name, not the trace, not the event lines, not another view's file. */
static int picture_check(const struct dm_options *opt, FILE *out, FILE *errf,
                         const char *option, const char *path)
{
    const char *what = path != NULL ? dm_file_not_replaceable(path) : NULL;
    const char *others[] = {opt->replay_path, opt->output_path, opt->metrics_path,
                            opt->heatmap_path, opt->offset_map_path, opt->report_path};

    if (path == NULL)
        return 0;
    if (what != NULL) {
        dm_writef(errf, "diskmon: %s %s is %s: not replacing it (%s writes a regular "
                        "file: name one, or a new name)\n", option, path, what, option);
        return DM_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (others[i] != path && same(others[i], path)) {
            dm_writef(errf, "diskmon: %s %s is also the file of another option: not "
                            "overwriting it (name another file)\n", option, path);
            return DM_EXIT_USAGE;
        }
    if (stream_is(out, path)) {
        dm_writef(errf, "diskmon: standard output is the %s file %s (redirect it elsewhere, "
                        "or use -o)\n", option, path);
        return DM_EXIT_USAGE;
    }
    return 0;
}

int dm_outputs_check(const struct dm_options *opt, FILE *out, FILE *errf)
{
    if (picture_check(opt, out, errf, "--heatmap", opt->heatmap_path) != 0 ||
        picture_check(opt, out, errf, "--offset-map", opt->offset_map_path) != 0 ||
        picture_check(opt, out, errf, "--report", opt->report_path) != 0)
        return DM_EXIT_USAGE;
    return metrics_check(opt, out, errf);
}

/* -r, -o and --metrics. */
static int metrics_check(const struct dm_options *opt, FILE *out, FILE *errf)
{
    const char *in = opt->replay_path, *metrics = opt->metrics_path;
    const char *what = metrics != NULL ? dm_file_not_replaceable(metrics) : NULL;

    if (what != NULL) {
        dm_writef(errf, "diskmon: --metrics %s is %s: not replacing it (--metrics "
                      "writes a regular file: name one, or a new name)\n", metrics, what);
        return DM_EXIT_USAGE;
    }
    if (out == NULL && same(opt->output_path, in)) {
        dm_writef(errf, "diskmon: %s is the input trace %s: not overwriting it "
                      "(write the output to another file)\n", opt->output_path, in);
        return DM_EXIT_USAGE;
    }
    if (stream_is(out, in)) {
        dm_writef(errf, "diskmon: standard output is the input trace %s: not overwriting it "
                      "(write the output to another file)\n", in);
        return DM_EXIT_USAGE;
    }
    if (same(metrics, in)) {
        dm_writef(errf, "diskmon: --metrics %s is the input trace %s: not overwriting it "
                      "(write the metrics to another file)\n", metrics, in);
        return DM_EXIT_USAGE;
    }
    if (out == NULL && same(opt->output_path, metrics)) {
        dm_writef(errf, "diskmon: -o %s and --metrics %s are the same file: the metrics "
                      "would replace the event lines (name two files)\n",
                opt->output_path, metrics);
        return DM_EXIT_USAGE;
    }
    if (stream_is(out, metrics)) {
        dm_writef(errf, "diskmon: standard output is the metrics file %s: the metrics "
                      "would replace the event lines (redirect it elsewhere, or use -o)\n",
                metrics);
        return DM_EXIT_USAGE;
    }
    return 0;
}
