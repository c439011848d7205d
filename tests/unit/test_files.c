/*
 * test_files.c - file identity and kind (platform.h "Files") and the
 * pipeline's refusal to write over its input, on the OS the tests run on:
 * device and inode on POSIX, volume serial number and file index on Windows
 * (these tests run under Wine in tests/scripts/windows.sh). Hard links are
 * made with the OS's own call, so the check cannot pass by comparing names.
 */
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64 /* readdir on 32-bit builds: 64-bit inode numbers */
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "core/pipeline.h"
#include "diskmon.h"
#include "dmtest.h"
#include "platform/platform.h"

#ifdef DM_TEST_WIN32
#include <windows.h>
static int make_hard_link(const char *existing, const char *link_path)
{
    return CreateHardLinkA(link_path, existing, NULL) ? 0 : -1;
}
#else
#include <unistd.h>
static int make_hard_link(const char *existing, const char *link_path)
{
    return link(existing, link_path);
}
#endif

/* A path in the temporary directory, unique to this process and name. */
static void temp_path(char *out, size_t len, const char *name)
{
    const char *dir = getenv("TMPDIR");
    int local;

    if (dir == NULL || dir[0] == '\0')
        dir = getenv("TEMP");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    snprintf(out, len, "%s/dm_test_files_%lx_%s", dir,
             (unsigned long)((uintptr_t)&local & 0xffffffu), name);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static int file_equals(const char *path, const char *text)
{
    char buf[256];
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

DM_TEST(identity_same_file_and_hard_link)
{
    char a[512], b[512], c[512];
    struct dm_file_id ia, ib, ic;
    int linked;

    temp_path(a, sizeof a, "a.etl");
    temp_path(b, sizeof b, "b.etl");
    temp_path(c, sizeof c, "c.etl");
    DM_ASSERT_EQ_INT(write_file(a, "trace"), 0);
    DM_ASSERT_EQ_INT(write_file(c, "other"), 0);
    remove(b);
    linked = make_hard_link(a, b) == 0;
    DM_ASSERT_EQ_INT(dm_file_id_of_path(a, &ia), 1);
    DM_ASSERT_EQ_INT(dm_file_id_of_path(c, &ic), 1);
    DM_ASSERT(ia.volume != ic.volume || ia.index != ic.index);
    if (linked) {
        DM_ASSERT_EQ_INT(dm_file_id_of_path(b, &ib), 1);
        DM_ASSERT(ia.volume == ib.volume && ia.index == ib.index);
    }
    remove(b);
    DM_ASSERT_EQ_INT(dm_file_id_of_path(b, &ib), 0); /* gone: no identity */
    remove(a);
    remove(c);
    if (!linked)
        DM_SKIP("hard links are not supported in the temporary directory");
}

DM_TEST(identity_of_stream)
{
    char a[512];
    struct dm_file_id ia, is;
    FILE *f;

    temp_path(a, sizeof a, "s.etl");
    DM_ASSERT_EQ_INT(write_file(a, "trace"), 0);
    f = fopen(a, "ab");
    DM_ASSERT(f != NULL);
    DM_ASSERT_EQ_INT(dm_file_id_of_path(a, &ia), 1);
    DM_ASSERT_EQ_INT(dm_file_id_of_stream(f, &is), 1);
    fclose(f);
    remove(a);
    DM_ASSERT(ia.volume == is.volume && ia.index == is.index);
}

DM_TEST(kind_of_paths)
{
    char a[512], d[512];
    uint64_t size = 0;
    const char *dir = getenv("TMPDIR");

    temp_path(a, sizeof a, "k.etl");
    DM_ASSERT_EQ_INT(write_file(a, "12345"), 0);
    DM_ASSERT_EQ_INT(dm_file_kind(a, &size), DM_FILE_REGULAR);
    DM_ASSERT_EQ_U64(size, 5);
    remove(a);
    DM_ASSERT_EQ_INT(dm_file_kind(a, &size), DM_FILE_MISSING);
    snprintf(d, sizeof d, "%s", dir != NULL && dir[0] != '\0' ? dir : ".");
    DM_ASSERT_EQ_INT(dm_file_kind(d, &size), DM_FILE_DIRECTORY);
}

/* dm_run with -o onto the -r file (through a hard link where possible):
 * exit 2, the message names both, and the input is untouched. */
DM_TEST(run_refuses_output_onto_input)
{
    char a[512], b[512], msg[512];
    struct dm_options opt;
    FILE *errf = tmpfile();
    size_t n;
    int rc;

    DM_ASSERT(errf != NULL);
    temp_path(a, sizeof a, "in.etl");
    temp_path(b, sizeof b, "link.etl");
    DM_ASSERT_EQ_INT(write_file(a, "not really a trace, but precious"), 0);
    remove(b);
    memset(&opt, 0, sizeof opt);
    opt.replay_path = a;
    opt.output_path = make_hard_link(a, b) == 0 ? b : a;
    rc = dm_run(&opt, &dm_replay_source, NULL, errf);
    rewind(errf);
    n = fread(msg, 1, sizeof msg - 1, errf);
    msg[n] = '\0';
    fclose(errf);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_USAGE);
    DM_ASSERT(file_equals(a, "not really a trace, but precious"));
    DM_ASSERT(strstr(msg, "is the input trace") != NULL);
    remove(b);
    remove(a);
}

/* A -o file that exists is not touched when the input cannot be opened. */
DM_TEST(run_keeps_output_when_input_fails)
{
    char in[512], out[512];
    struct dm_options opt;
    FILE *errf = tmpfile();
    int rc;

    DM_ASSERT(errf != NULL);
    temp_path(in, sizeof in, "missing.etl");
    temp_path(out, sizeof out, "keep.txt");
    remove(in);
    DM_ASSERT_EQ_INT(write_file(out, "keep me"), 0);
    memset(&opt, 0, sizeof opt);
    opt.replay_path = in;
    opt.output_path = out;
    rc = dm_run(&opt, &dm_replay_source, NULL, errf);
    fclose(errf);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_ERROR);
    DM_ASSERT(file_equals(out, "keep me"));
    remove(out);
}

/* Options of another OS's live source are refused by the live source
 * itself, with one line naming the option (main.c turns it into exit
 * status 2). */
DM_TEST(live_options_of_another_os)
{
    struct dm_options opt;
    const char *why;

    if (dm_live_source == NULL)
        DM_SKIP("this build has no live source");
    DM_ASSERT(dm_live_source->refuse != NULL);
    memset(&opt, 0, sizeof opt);
    DM_ASSERT(dm_live_source->refuse(&opt) == NULL);
#ifdef DM_TEST_WIN32
    opt.force = 1;
    DM_ASSERT(dm_live_source->refuse(&opt) == NULL);
    opt.queue = 1;
    why = dm_live_source->refuse(&opt);
    DM_ASSERT(why != NULL && strncmp(why, "--queue ", 8) == 0 && strchr(why, '\n') == NULL);
#else
    opt.queue = 1;
    opt.cleanup = 1; /* Linux gives --cleanup its own meaning: stale instances */
    DM_ASSERT(dm_live_source->refuse(&opt) == NULL);
    opt.force = 1;
    why = dm_live_source->refuse(&opt);
    DM_ASSERT(why != NULL && strncmp(why, "--force ", 8) == 0 && strchr(why, '\n') == NULL);
#endif
    DM_ASSERT(dm_replay_source.refuse == NULL);
}

/* The file at path replaced with len bytes of data, in one write. */
static int replace(const char *path, const char *data, size_t len, char *why, size_t why_len)
{
    struct dm_replace *r;
    int rc = dm_replace_open(&r, path, why, why_len);

    if (rc != 0)
        return rc;
    dm_replace_write(r, data, len);
    return dm_replace_commit(r, why, why_len);
}

/* Temporary files of path's replacing left in its folder: PATH.*.tmp. */
static int temporaries_of(const char *path)
{
    char dir[512], prefix[512];
    const char *slash = strrchr(path, '/');
    DIR *d;
    struct dirent *e;
    int n = 0;

    if (slash == NULL)
        return -1;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    snprintf(prefix, sizeof prefix, "%s.", slash + 1);
    d = opendir(dir);
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);

        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && len > 4 &&
             strcmp(e->d_name + len - 4, ".tmp") == 0;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* Written in steps, the file appears whole at the commit and not before;
 * an abort leaves the old file as it was and no temporary file. */
DM_TEST(replace_in_steps_and_abort)
{
    char a[512], why[256];
    struct dm_replace *r;
    int left; /* by an earlier run that failed half-way */

    temp_path(a, sizeof a, "s.prom");
    remove(a);
    left = temporaries_of(a);
    DM_ASSERT(left >= 0);
    DM_ASSERT_EQ_INT(replace(a, "old\n", 4, why, sizeof why), 0);
    DM_ASSERT_EQ_INT(dm_replace_open(&r, a, why, sizeof why), 0);
    dm_replace_write(r, "ab", 2);
    dm_replace_write(r, "", 0);
    dm_replace_write(r, "cde\n", 4);
    DM_ASSERT(file_equals(a, "old\n"));
    DM_ASSERT_EQ_INT(temporaries_of(a), left + 1);
    DM_ASSERT_EQ_INT(dm_replace_commit(r, why, sizeof why), 0);
    DM_ASSERT(file_equals(a, "abcde\n"));
    DM_ASSERT_EQ_INT(temporaries_of(a), left);
    DM_ASSERT_EQ_INT(dm_replace_open(&r, a, why, sizeof why), 0);
    dm_replace_write(r, "never\n", 6);
    dm_replace_abort(r);
    DM_ASSERT(file_equals(a, "abcde\n"));
    DM_ASSERT_EQ_INT(temporaries_of(a), left);
    remove(a);
}

#ifndef DM_TEST_WIN32
/* A symbolic link put at the target while the file was being written is
 * refused at the commit: the link stays, pointing where it did, the file
 * it points at is untouched, and the temporary file is gone. */
DM_TEST(replace_refuses_link_made_while_writing)
{
    char a[512], victim[512], why[256];
    struct dm_replace *r;
    int left;

    temp_path(a, sizeof a, "l.prom");
    temp_path(victim, sizeof victim, "victim.txt");
    remove(a);
    left = temporaries_of(a);
    DM_ASSERT(left >= 0);
    DM_ASSERT_EQ_INT(write_file(victim, "important\n"), 0);
    DM_ASSERT_EQ_INT(dm_replace_open(&r, a, why, sizeof why), 0);
    dm_replace_write(r, "new\n", 4);
    DM_ASSERT_EQ_INT(symlink(victim, a), 0);
    DM_ASSERT_EQ_INT(dm_replace_commit(r, why, sizeof why), DM_EUSAGE);
    DM_ASSERT(strstr(why, "symbolic link") != NULL);
    DM_ASSERT(dm_file_not_replaceable(a) != NULL);
    DM_ASSERT(file_equals(victim, "important\n"));
    DM_ASSERT_EQ_INT(temporaries_of(a), left);
    remove(a);
    remove(victim);
}
#endif

/* dm_replace_* writes a new file and replaces an existing one whole;
 * a directory is refused with the reason, and left a directory. */
DM_TEST(replace_writes_and_refuses_directory)
{
    char a[512], why[256];
    const char *dir = getenv("TMPDIR");
    uint64_t size = 0;

    temp_path(a, sizeof a, "r.prom");
    remove(a);
    DM_ASSERT_EQ_INT(replace(a, "first\n", 6, why, sizeof why), 0);
    DM_ASSERT(file_equals(a, "first\n"));
    DM_ASSERT_EQ_INT(replace(a, "2\n", 2, why, sizeof why), 0);
    DM_ASSERT(file_equals(a, "2\n"));
    DM_ASSERT(dm_file_not_replaceable(a) == NULL);
    remove(a);
    snprintf(a, sizeof a, "%s", dir != NULL && dir[0] != '\0' ? dir : ".");
    DM_ASSERT_EQ_INT(replace(a, "x", 1, why, sizeof why), DM_EUSAGE);
    DM_ASSERT(strstr(why, "a directory") != NULL);
    DM_ASSERT_EQ_INT(dm_file_kind(a, &size), DM_FILE_DIRECTORY);
}

/* A device is never a file to replace: /dev/null on POSIX; on Windows the
 * reserved names in any folder and with any extension (Microsoft Learn,
 * "Naming Files, Paths, and Namespaces"), and the \\.\ namespace. */
DM_TEST(devices_not_replaceable)
{
#ifdef DM_TEST_WIN32
    const char *what = dm_file_not_replaceable("NUL");

    DM_ASSERT(what != NULL && strstr(what, "device name") != NULL);
    DM_ASSERT(dm_file_not_replaceable("C:\\x\\nul.prom") != NULL);
    DM_ASSERT(dm_file_not_replaceable("con") != NULL);
    DM_ASSERT(dm_file_not_replaceable("COM1.txt") != NULL);
    DM_ASSERT(dm_file_not_replaceable("\\\\.\\PhysicalDrive0") != NULL);
    DM_ASSERT(dm_file_not_replaceable("nullish.prom") == NULL);
    DM_ASSERT(dm_file_not_replaceable("COM10.prom") == NULL);
#else
    const char *what = dm_file_not_replaceable("/dev/null");

    DM_ASSERT(what != NULL && strcmp(what, "a character device") == 0);
#endif
}

/* Names not created yet are the same file when they are the same name in
 * the same folder, however the folder is spelled; Windows ignores case. */
DM_TEST(same_names_not_created_yet)
{
    char a[512], b[512], c[512];
    const char *slash;

    temp_path(a, sizeof a, "new.txt");
    temp_path(c, sizeof c, "other.txt");
    remove(a);
    remove(c);
    slash = strrchr(a, '/');
    DM_ASSERT(slash != NULL);
    /* FOLDER/./new.txt */
    snprintf(b, sizeof b, "%.*s/./%s", (int)(slash - a), a, slash + 1);
    DM_ASSERT_EQ_INT(dm_file_same(a, a), 1);
    DM_ASSERT_EQ_INT(dm_file_same(a, b), 1);
    DM_ASSERT_EQ_INT(dm_file_same(a, c), 0);
#ifdef DM_TEST_WIN32
    temp_path(b, sizeof b, "NEW.TXT");
    DM_ASSERT_EQ_INT(dm_file_same(a, b), 1);
#endif
    DM_ASSERT_EQ_INT(write_file(a, "x"), 0);
    DM_ASSERT_EQ_INT(dm_file_same(a, c), 0); /* one exists, one does not */
    remove(a);
}

const struct dmt_case dm_suite_files[] = {
    {"replace_writes_and_refuses_directory", replace_writes_and_refuses_directory},
    {"replace_in_steps_and_abort", replace_in_steps_and_abort},
#ifndef DM_TEST_WIN32
    {"replace_refuses_link_made_while_writing", replace_refuses_link_made_while_writing},
#endif
    {"devices_not_replaceable", devices_not_replaceable},
    {"same_names_not_created_yet", same_names_not_created_yet},
    {"identity_same_file_and_hard_link", identity_same_file_and_hard_link},
    {"identity_of_stream", identity_of_stream},
    {"kind_of_paths", kind_of_paths},
    {"run_refuses_output_onto_input", run_refuses_output_onto_input},
    {"run_keeps_output_when_input_fails", run_keeps_output_when_input_fails},
    {"live_options_of_another_os", live_options_of_another_os},
    {NULL, NULL},
};
