/*
 * test_options.c - the command line: every option, both spellings, and bad
 * input rejected with one line that names the culprit.
 */
#include "cli/option_table.h"
#include "cli/options.h"
#include "diskmon.h"
#include "dmtest.h"

/* argv as a program gets it: writable strings (lists are split in place),
 * which live until the next parse. */
static int parse(struct dm_options *opt, char *err, const char *const *args, int n)
{
    static char store[32][128];
    char *argv[32];

    argv[0] = (char *)"diskmon";
    for (int i = 0; i < n && i < 31; i++) {
        snprintf(store[i], sizeof store[i], "%s", args[i]);
        argv[i + 1] = store[i];
    }
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
    DM_ASSERT_EQ_INT(o.n_pids, 1);
    DM_ASSERT_EQ_U64(o.pids[0], 42);
    DM_ASSERT_EQ_INT(o.n_comms, 1);
    DM_ASSERT_STR_EQ(o.comms[0], "fio");
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
        /* --top's SEC is optional, but "-1" is no option: a bad interval. */
        {{"--top", "-1"}, 2, "bad interval '-1' for --top"},
        {{"--top", "-.5"}, 2, "bad interval '-.5' for --top"},
        {{"--op", "read,erase"}, 2, "erase"},
        {{"--flags", "fua,dirty"}, 2, "dirty"},
        {{"--flags", "fua,,sync"}, 2, "empty flag name"},
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
        "--replay", "--format", "--output", "--disk", "--op", "--flags", "--pid", "--comm",
        "--min-latency", "--count", "--duration", "--clock", "--no-header",
        "--summary", "--hist", "--queue", "--force", "--cleanup", "--help",
        "--version", "--utc", "--cgroup"};
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

/* --help is printed from the table: every row's names and value are on a
 * line of their own ("  -r, --replay FILE"), its text in the column after,
 * and no line is wider than an 80-column terminal. */
DM_TEST(help_printed_from_every_row)
{
    static char text[16384];
    FILE *f = tmpfile();
    size_t n;

    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(dm_options_help(f), 0);
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    DM_ASSERT(n > 0 && n < sizeof text - 1);
    for (size_t i = 0; i < dm_option_row_count; i++) {
        const struct dm_option_row *row = &dm_option_rows[i];
        char names[80];

        if (row->short_name != 0)
            snprintf(names, sizeof names, "\n  -%c, --%s%s%s ", row->short_name,
                     row->long_name, row->value ? " " : "", row->value ? row->value : "");
        else
            snprintf(names, sizeof names, "\n      --%s%s%s ", row->long_name,
                     row->value ? " " : "", row->value ? row->value : "");
        if (strstr(text, names) == NULL) {
            dmt_fail_at(__FILE__, __LINE__, "--help has no line \"%s\"", names + 1);
            return;
        }
        DM_ASSERT(row->help != NULL && row->handle != NULL);
    }
    for (const char *line = text; *line != '\0';) {
        const char *nl = strchr(line, '\n');

        DM_ASSERT(nl != NULL);
        DM_ASSERT(nl - line <= 80);
        line = nl + 1;
    }
}

/* Every filter takes comma lists and repeats, always as a union. */
DM_TEST(filters_are_unions_of_lists_and_repeats)
{
    static char d1[] = "0,sda", d2[] = "1", p1[] = "4,144", p2[] = "8";
    static char c1[] = "msmpeng,system", c2[] = "svchost", o1[] = "read", o2[] = "Write,flush";
    const char *args[] = {"-d", d1, "-d", d2, "-p", p1, "--pid", p2, "-c", c1,
                          "--comm", c2, "--op", o1, "--op", o2};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, args, 16), 0);
    DM_ASSERT_EQ_INT(o.n_disks, 3);
    DM_ASSERT_STR_EQ(o.disks[0], "0");
    DM_ASSERT_STR_EQ(o.disks[1], "sda");
    DM_ASSERT_STR_EQ(o.disks[2], "1");
    DM_ASSERT_EQ_INT(o.n_pids, 3);
    DM_ASSERT_EQ_U64(o.pids[0], 4);
    DM_ASSERT_EQ_U64(o.pids[1], 144);
    DM_ASSERT_EQ_U64(o.pids[2], 8);
    DM_ASSERT_EQ_INT(o.n_comms, 3);
    DM_ASSERT_STR_EQ(o.comms[0], "msmpeng");
    DM_ASSERT_STR_EQ(o.comms[1], "system");
    DM_ASSERT_STR_EQ(o.comms[2], "svchost");
    DM_ASSERT_EQ_U64(o.op_mask, DM_OP_BIT(DM_REQ_READ) | DM_OP_BIT(DM_REQ_WRITE) |
                                    DM_OP_BIT(DM_REQ_FLUSH));
}

DM_TEST(enumerated_values_any_case)
{
    const char *a[] = {"-f", "JSON", "--op", "WRITE"};
    const char *b[] = {"--format=Csv"};
    const char *c[] = {"-f", "TeXt"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, a, 4), 0);
    DM_ASSERT_EQ_INT(o.format, DM_FMT_JSON);
    DM_ASSERT_EQ_U64(o.op_mask, DM_OP_BIT(DM_REQ_WRITE));
    DM_ASSERT_EQ_INT(parse(&o, err, b, 1), 0);
    DM_ASSERT_EQ_INT(o.format, DM_FMT_CSV);
    DM_ASSERT_EQ_INT(parse(&o, err, c, 2), 0);
    DM_ASSERT_EQ_INT(o.format, DM_FMT_TEXT);
}

DM_TEST(double_dash_ends_options)
{
    const char *a[] = {"-r", "x.etl", "--"};
    const char *b[] = {"--", "-n"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, a, 3), 0);
    DM_ASSERT_STR_EQ(o.replay_path, "x.etl");
    DM_ASSERT_EQ_INT(parse(&o, err, b, 2), DM_EUSAGE);
    DM_ASSERT_STR_EQ(err, "unexpected argument '-n'");
}

DM_TEST(utc_implies_clock)
{
    const char *a[] = {"--utc"};
    struct dm_options o;
    char err[256];

    DM_ASSERT_EQ_INT(parse(&o, err, a, 1), 0);
    DM_ASSERT(o.utc && o.clock);
}

/* Which command lines read an event's partition (docs/output.md: the csv
 * and json lines carry it, -d may name one, --top --by partition groups
 * by it, --metrics counts per partition; text lines have no such column). */
DM_TEST(read_partition_only_when_asked)
{
    static const struct {
        const char *args[4];
        int n, reads;
    } c[] = {
        {{0}, 0, 0},
        {{"-s", "--hist"}, 2, 0},
        {{"--top"}, 1, 0},
        {{"--top", "--by", "file"}, 3, 0},
        {{"-f", "csv"}, 2, 1},
        {{"-f", "json"}, 2, 1},
        {{"-d", "0"}, 2, 1},
        {{"--top", "--by", "partition"}, 3, 1},
        {{"--metrics", "m.prom"}, 2, 1},
    };
    struct dm_options o;
    char err[256];

    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        DM_ASSERT_EQ_INT(parse(&o, err, c[i].args, c[i].n), 0);
        DM_ASSERT_EQ_INT(dm_options_read_partition(&o), c[i].reads);
    }
}

/* The exact one-line messages of a newcomer's findings (findings.sh has
 * the same cases through the executable). */
DM_TEST(findings_messages)
{
    static const struct {
        const char *args[4];
        int n;
        const char *message;
    } bad[] = {
        {{"trace.etl"}, 1, "unexpected argument 'trace.etl': did you mean -r trace.etl?"},
        {{"-r", "a.etl", "B.ETL"}, 3,
         "unexpected argument 'B.ETL': diskmon reads one trace per run (-r a.etl); run it once for each trace"},
        {{"-o", ""}, 2, "empty file name for -o"},
        {{"-r", ""}, 2, "empty file name for -r"},
        {{"--output="}, 1, "empty file name for --output="},
        {{"-c", ""}, 2, "empty process name in -c"},
        {{"-c", "a,,b"}, 2, "empty process name in -c"},
        {{"-p", "4,"}, 2, "empty process id in -p"},
        {{"-p", "4,x"}, 2, "bad process id 'x' for -p"},
        {{"--op", "read,erase"}, 2, "unknown request 'erase' for --op (read, write, flush or discard)"},
        {{"-f", "xml"}, 2, "unknown format 'xml' for -f (text, csv or json)"},
        /* Limits named in the message, not a wrong one ("above 0"). */
        {{"-t", "99999999999999999999"}, 2,
         "bad duration '99999999999999999999' for -t (seconds above 0, at most 18000000000)"},
        {{"--top", "0.0000001"}, 2,
         "bad interval '0.0000001' for --top (seconds, at least 0.001, at most 86400)"},
        /* Options that would be ignored are refused, as -r --queue is. */
        {{"-r", "a.etl", "--backend", "perf"}, 4, "--backend is for Linux live capture, not -r"},
        {{"--cgroup", "system.slice"}, 2,
         "bad cgroup 'system.slice' for --cgroup (a path from the cgroup root, starting with /)"},
        {{"--top", "--clock"}, 2,
         "--clock and --utc set the Time column of event lines; --top has no Time column"},
        {{"--utc", "--top", "2"}, 3,
         "--clock and --utc set the Time column of event lines; --top has no Time column"},
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct dm_options o;
        char err[256];
        int rc = parse(&o, err, bad[i].args, bad[i].n);

        if (rc != DM_EUSAGE || strcmp(err, bad[i].message) != 0) {
            dmt_fail_at(__FILE__, __LINE__, "case %u: rc %d, message \"%s\", want \"%s\"",
                        (unsigned)i, rc, err, bad[i].message);
            return;
        }
    }
}

/* A refused argument is quoted escaped as names are: the message stays one
 * line and an escape sequence in the argument cannot reach the terminal. */
DM_TEST(refusal_quotes_arguments_escaped)
{
    struct dm_options opt;
    char err[256];
    const char *args[] = {"-t", "1\x1b[31m\n2\x7f"};

    DM_ASSERT_EQ_INT(parse(&opt, err, args, 2), DM_EUSAGE);
    for (const char *c = err; *c != '\0'; c++)
        DM_ASSERT((unsigned char)*c >= 0x20 && *c != 0x7f);
    DM_ASSERT(strstr(err, "'1\\x1b[31m\\x0a2\\x7f'") != NULL);
}

/* Numbers are plain decimals: what strtod would also take (hex, hex
 * floats, exponents, inf, nan, signs, blanks) is a usage error, and the
 * decimals that are taken give exact nanoseconds, rounded to the nearest. */
DM_TEST(numbers_plain_decimal_only)
{
    static const char *const not_decimal[] = {
        "0x10", "0X10", "1e3", "1E3", "0x1p-1", "inf", "INF", "nan", "infinity",
        "+1", "-0", " 1", "1 ", ".", "", "1.2.3", "1,5", "0b1", "1_000",
    };
    static const char *const opts[] = {"-t", "-m", "--top", "-n", "-p"};
    static const struct {
        const char *opt, *value;
        uint64_t ns;
    } good[] = {
        {"-t", "2", 2000000000u},
        {"-t", "0.5", 500000000u},
        {"-t", ".25", 250000000u},
        {"-t", "3.", 3000000000u},
        {"-t", "0.0000000015", 2}, /* 1.5 ns: the ninth digit, rounded up */
        {"-t", "0.0000000014999", 1}, /* digits past the ninth do not count */
        {"-t", "18446744073.709551615", UINT64_MAX},
        {"-m", "2.5", 2500000},
        {"-m", "0.0000005", 1},
        {"-m", "0", 0},
        {"--top", "0.001", 1000000},
        {"--top", "86400", 86400000000000u},
    };

    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++) {
        for (size_t i = 0; i < sizeof not_decimal / sizeof not_decimal[0]; i++) {
            const char *args[2] = {opts[o], not_decimal[i]};
            struct dm_options opt;
            char err[256];
            int rc;

            if (opts[o][1] == 'p' && strchr(not_decimal[i], ',') != NULL)
                continue; /* -p takes a list: 1,5 is two ids */
            rc = parse(&opt, err, args, 2);
            if (rc != DM_EUSAGE || strchr(err, '\n') != NULL) {
                dmt_fail_at(__FILE__, __LINE__, "%s '%s': rc %d, message \"%s\"",
                            opts[o], not_decimal[i], rc, err);
                return;
            }
        }
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *args[2] = {good[i].opt, good[i].value};
        struct dm_options opt;
        char err[256];
        uint64_t got;

        DM_ASSERT_EQ_INT(parse(&opt, err, args, 2), 0);
        got = good[i].opt[1] == 't' ? opt.duration_ns
            : good[i].opt[1] == 'm' ? opt.min_latency_ns : opt.top_ns;
        if (got != good[i].ns) {
            dmt_fail_at(__FILE__, __LINE__, "%s %s: %" PRIu64 " ns, want %" PRIu64,
                        good[i].opt, good[i].value, got, good[i].ns);
            return;
        }
    }
    {   /* one past the largest: 2^64 ns */
        const char *args[2] = {"-t", "18446744073.709551616"};
        struct dm_options opt;
        char err[256];

        DM_ASSERT_EQ_INT(parse(&opt, err, args, 2), DM_EUSAGE);
    }
}

const struct dmt_case dm_suite_options[] = {
    {"defaults", defaults},
    {"read_partition_only_when_asked", read_partition_only_when_asked},
    {"every_option", every_option},
    {"long_equals_and_attached_short", long_equals_and_attached_short},
    {"help_and_version_flags", help_and_version_flags},
    {"bad_input_is_refused", bad_input_is_refused},
    {"help_text_lists_every_option", help_text_lists_every_option},
    {"help_printed_from_every_row", help_printed_from_every_row},
    {"filters_are_unions_of_lists_and_repeats", filters_are_unions_of_lists_and_repeats},
    {"enumerated_values_any_case", enumerated_values_any_case},
    {"double_dash_ends_options", double_dash_ends_options},
    {"utc_implies_clock", utc_implies_clock},
    {"findings_messages", findings_messages},
    {"numbers_plain_decimal_only", numbers_plain_decimal_only},
    {"refusal_quotes_arguments_escaped", refusal_quotes_arguments_escaped},
    {NULL, NULL},
};
