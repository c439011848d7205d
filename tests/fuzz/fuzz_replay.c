/*
 * fuzz_replay.c - libFuzzer target: the whole replay pipeline, from the
 * bytes of an .etl file to formatted lines, as `diskmon -r FILE` runs it.
 *
 * The first input byte picks the output (its value modulo the 9 modes:
 * text, csv, json, and --top per process, file and disk, each as text
 * blocks or csv/json); the rest is the trace, written to a file because
 * replay opens a path. For text output it checks what a terminal gets:
 * no byte below 0x20 but the line end, no DEL, no C1 control (U+0080 to
 * U+009F, UTF-8 C2 80..C2 9F), and, for events, one line per event: after
 * the header every line starts with the next event number. Built and run
 * by tests/fuzz/run.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/options.h"
#include "core/pipeline.h"
#include "diskmon.h"
#include "etl_cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const modes[][6] = {
    {"-f", "text", NULL},
    {"-f", "csv", NULL},
    {"-f", "json", NULL},
    {"--top", "1", "--by", "process", NULL},
    {"--top", "0.5", "--by", "file", NULL},
    {"--top", "1", "--by", "disk", NULL},
    {"--top", "1", "--by", "file", "-f", "csv"},
    {"--top", "0.001", "--by", "disk", "-f", "json"},
    {"--top", "1", "-f", "json", NULL},
};
#define N_MODES (sizeof modes / sizeof modes[0])

/* Text: printable ASCII, UTF-8 other than C1 controls, and line ends. */
static void check_terminal_safe(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7F)
            abort();
        if (p[i] == 0xC2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F)
            abort();
    }
}

/* Event lines: the header, then lines numbered 1, 2, 3... (the # column,
 * right-aligned): a name that broke a line would start one without it. */
static void check_one_line_per_event(const char *p, size_t n)
{
    const char *line = memchr(p, '\n', n);
    unsigned long want = 1;

    if (line == NULL)
        return;
    line++;
    while (line < p + n) {
        const char *end = memchr(line, '\n', (size_t)(p + n - line));
        char *after;
        unsigned long got;

        if (end == NULL)
            abort(); /* every line ends */
        while (*line == ' ')
            line++;
        got = strtoul(line, &after, 10);
        if (got != want || after == line || *after != ' ')
            abort();
        want++;
        line = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    const char *args[16];
    int argc = 0;
    struct dm_options opt;
    char err[256], *out = NULL;
    size_t out_len = 0;
    FILE *f, *o, *e;
    unsigned mode;

    if (size < 1 || fuzz_etl_too_costly(data + 1, size - 1))
        return 0;
    mode = data[0] % N_MODES;
    if (path[0] == '\0')
        snprintf(path, sizeof path, "/tmp/dm_fuzz_replay_%ld.etl", (long)getpid());
    f = fopen(path, "wb");
    if (f == NULL)
        return 0;
    fwrite(data + 1, 1, size - 1, f);
    fclose(f);

    args[argc++] = "diskmon";
    args[argc++] = "-r";
    args[argc++] = path;
    for (unsigned i = 0; i < 6 && modes[mode][i] != NULL; i++)
        args[argc++] = modes[mode][i];
    if (dm_options_parse(&opt, argc, (char **)args, err, sizeof err) != 0)
        abort(); /* the modes are valid command lines */
    o = open_memstream(&out, &out_len);
    e = fopen("/dev/null", "w");
    if (o == NULL || e == NULL)
        abort();
    (void)dm_run(&opt, &dm_replay_source, o, e);
    fclose(o);
    fclose(e);
    if (opt.format == DM_FMT_TEXT) {
        check_terminal_safe((const unsigned char *)out, out_len);
        if (opt.top_ns == 0)
            check_one_line_per_event(out, out_len);
    }
    free(out);
    return 0;
}
