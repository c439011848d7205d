/*
 * test_options.c - the command line: every option, both spellings, and bad
 * input rejected with one line that names the culprit.
 */
#include "core/options.h"
#include "diskmon.h"
#include "dmtest.h"

static int parse(struct dm_options *opt, char *err, const char *const *args, int n)
{
    char *argv[32];

    argv[0] = (char *)"diskmon";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    return dm_options_parse(opt, n + 1, argv, err, 256);
}

DM_TEST(defaults)
{
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, NULL, 0), 0);
    DM_ASSERT(o.replay_path == NULL);
    DM_ASSERT_EQ_INT(o.format, DM_FMT_TEXT);
    DM_ASSERT_EQ_U64(o.op_mask, 0xF);
    DM_ASSERT_EQ_U64(o.count, 0);
    DM_ASSERT(!o.summary && !o.hist && !o.clock && !o.no_header);
}

DM_TEST(every_option)
{
    static char disks[] = "0,2";
    const char *args[] = {"-r", "t.etl", "-f", "json", "-o", "out.txt", "-d", disks,
                          "--op", "read", "-p", "42", "-c", "fio", "-m", "1.5",
                          "-n", "10", "-t", "2.5", "--clock", "--no-header", "-s",
                          "--hist"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, args, 24), 0);
    DM_ASSERT_STR_EQ(o.replay_path, "t.etl");
    DM_ASSERT_EQ_INT(o.format, DM_FMT_JSON);
    DM_ASSERT_STR_EQ(o.output_path, "out.txt");
    DM_ASSERT_EQ_INT(o.n_disks, 2);
    DM_ASSERT_STR_EQ(o.disks[1], "2");
    DM_ASSERT_EQ_U64(o.op_mask, 1);
    DM_ASSERT(o.has_pid);
    DM_ASSERT_EQ_U64(o.pid, 42);
    DM_ASSERT_STR_EQ(o.comm, "fio");
    DM_ASSERT_EQ_U64(o.min_latency_ns, 1500000);
    DM_ASSERT_EQ_U64(o.count, 10);
    DM_ASSERT_EQ_U64(o.duration_ns, 2500000000u);
    DM_ASSERT(o.clock && o.no_header && o.summary && o.hist);
}

DM_TEST(long_equals_and_attached_short)
{
    const char *args[] = {"--format=csv", "-n5", "--replay=x.etl", "-dsda"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, args, 4), 0);
    DM_ASSERT_EQ_INT(o.format, DM_FMT_CSV);
    DM_ASSERT_EQ_U64(o.count, 5);
    DM_ASSERT_STR_EQ(o.replay_path, "x.etl");
    DM_ASSERT_STR_EQ(o.disks[0], "sda");
}

DM_TEST(help_and_version_flags)
{
    const char *h[] = {"-h"};
    const char *v[] = {"--version"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, h, 1), 0);
    DM_ASSERT(o.show_help);
    DM_ASSERT_EQ_INT(parse(&o, err, v, 1), 0);
    DM_ASSERT(o.show_version);
}

/* Each bad command line is refused with DM_EUSAGE and a message that
 * contains the offending text. */
DM_TEST(bad_input_is_refused)
{
    static const struct {
        const char *args[3];
        int n;
        const char *must_mention;
    } bad[] = {
        {{"--bogus"}, 1, "--bogus"},
        {{"-x"}, 1, "-x"},
        {{"-f", "xml"}, 2, "xml"},
        {{"-n", "0"}, 2, "0"},
        {{"-n", "12abc"}, 2, "12abc"},
        {{"-n", "-3"}, 2, "-3"},
        {{"-p", "99999999999"}, 2, "99999999999"},
        {{"-m", "fast"}, 2, "fast"},
        {{"-t", "-1"}, 2, "-1"},
        {{"--op", "read,erase"}, 2, "read,erase"},
        {{"-r"}, 1, "-r"},
        {{"stray"}, 1, "stray"},
        {{"--summary=yes"}, 1, "summary"},
        {{"-r", "a.etl", "--queue"}, 3, "--queue"},
        {{"-r", "a.etl", "--force"}, 3, "--force"},
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct dm_options o;
        char err[256];
        int rc = parse(&o, err, bad[i].args, bad[i].n);

        if (rc != DM_EUSAGE || strstr(err, bad[i].must_mention) == NULL ||
            strchr(err, '\n') != NULL) {
            dmt_fail_at(__FILE__, __LINE__, "case %u: rc %d, message \"%s\"", (unsigned)i, rc, err);
            return;
        }
    }
}

DM_TEST(help_text_lists_every_option)
{
    static const char *const names[] = {
        "--replay", "--format", "--output", "--disk", "--op", "--pid", "--comm",
        "--min-latency", "--count", "--duration", "--clock", "--no-header",
        "--summary", "--hist", "--queue", "--force", "--cleanup", "--help",
        "--version"};
    char text[8192];
    FILE *f = tmpfile();
    size_t n;

    DM_ASSERT(f != NULL);
    dm_options_help(f);
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        DM_ASSERT(strstr(text, names[i]) != NULL);
}

const struct dmt_case dm_suite_options[] = {
    {"defaults", defaults},
    {"every_option", every_option},
    {"long_equals_and_attached_short", long_equals_and_attached_short},
    {"help_and_version_flags", help_and_version_flags},
    {"bad_input_is_refused", bad_input_is_refused},
    {"help_text_lists_every_option", help_text_lists_every_option},
    {NULL, NULL},
};
