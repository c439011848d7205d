/*
 * test_win32_io.c - dm_write_all on Windows against FAKE WriteFile,
 * WriteConsoleW and GetConsoleMode (platform/win32_io.h): a reader that went
 * away, consoles that report odd counts, and non-ASCII text reaching a
 * console as UTF-16. Wine cannot be made to give these answers on demand;
 * what the fakes answer is what docs/etw.md §8 documents: ERROR_NO_DATA
 * 232 and ERROR_BROKEN_PIPE 109 from a write to a pipe whose reader exited
 * (MicrosoftDocs/cpp-docs#3029, libuv PR #4562), a console count above the
 * request (microsoft/terminal#40). Built only for Windows.
 */
#include <errno.h>
#include <io.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "cli/options.h"
#include "core/pipeline.h"
#include "platform/platform.h"
#include "platform/win32_io.h"

#include "dmtest.h"

/* ---- the fakes ------------------------------------------------------------ */

enum console_mode {
    CONSOLE_EXACT = 0,   /* writes all, reports all */
    CONSOLE_PARTIAL,     /* writes at most 7 units, reports what it wrote */
    CONSOLE_MORE         /* writes all, reports 3 more than asked */
};

static struct {
    HANDLE console;          /* the handle the fake calls a console */
    enum console_mode mode;
    WCHAR units[1 << 16];    /* what the console received */
    size_t n_units;
    int calls;
    unsigned char bytes[1 << 16]; /* what WriteFile received */
    size_t n_bytes;
    DWORD fail_error;        /* WriteFile fails with this ... */
    size_t fail_after;       /* ... once this many bytes were taken */
} fw;

static BOOL WINAPI fake_write_file(HANDLE h, LPCVOID buf, DWORD len, LPDWORD written,
                                   LPOVERLAPPED ov)
{
    size_t room = sizeof fw.bytes - fw.n_bytes;

    (void)h;
    (void)ov;
    *written = 0;
    if (fw.fail_error != 0 && fw.n_bytes >= fw.fail_after) {
        SetLastError(fw.fail_error);
        return FALSE;
    }
    if (len > room)
        len = (DWORD)room;
    memcpy(fw.bytes + fw.n_bytes, buf, len);
    fw.n_bytes += len;
    *written = len;
    return TRUE;
}

static BOOL WINAPI fake_write_console(HANDLE h, const WCHAR *buf, DWORD len,
                                      LPDWORD written)
{
    DWORD take = len;

    fw.calls++;
    if (h != fw.console)
        return FALSE;
    if (fw.mode == CONSOLE_PARTIAL && take > 7)
        take = 7;
    if (fw.n_units + take > sizeof fw.units / sizeof fw.units[0])
        return FALSE;
    memcpy(fw.units + fw.n_units, buf, take * sizeof *buf);
    fw.n_units += take;
    *written = fw.mode == CONSOLE_MORE ? take + 3 : take;
    return TRUE;
}

static BOOL WINAPI fake_get_console_mode(HANDLE h, LPDWORD mode)
{
    *mode = 0;
    return fw.console != NULL && h == fw.console;
}

static const struct dm_win32_io fake_io = {
    fake_write_file,
    fake_write_console,
    fake_get_console_mode,
};

/* A temp file whose handle the fake console claims (console != 0), or a
 * plain one that goes to the fake WriteFile. */
static FILE *open_target(int console, char *path, size_t len)
{
    char dir[MAX_PATH];
    DWORD n = GetTempPathA((DWORD)sizeof dir, dir);
    FILE *f;

    snprintf(path, len, "%sdm_test_win32_io_%lu.txt", n > 0 ? dir : ".\\",
             (unsigned long)GetCurrentProcessId());
    f = fopen(path, "w+b");
    memset(&fw, 0, sizeof fw);
    if (f != NULL && console)
        fw.console = (HANDLE)_get_osfhandle(_fileno(f));
    dm_win32_io = &fake_io;
    return f;
}

static void close_target(FILE *f, const char *path)
{
    dm_win32_io = &dm_win32_io_real;
    if (f != NULL)
        fclose(f);
    remove(path);
}

/* What the console received, back in UTF-8 (an independent conversion:
 * WideCharToMultiByte), NUL-terminated. */
static size_t console_text(char *out, size_t len)
{
    int n = WideCharToMultiByte(CP_UTF8, 0, fw.units, (int)fw.n_units, out,
                                (int)len - 1, NULL, NULL);

    out[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

/* ---- a reader that went away ------------------------------------------- */

static void closed_pipe_is_epipe(DWORD code)
{
    char path[MAX_PATH + 64];
    FILE *f = open_target(0, path, sizeof path);
    int rc, e;

    DM_ASSERT(f != NULL);
    fw.fail_error = code;
    errno = 0;
    rc = dm_write_all(f, "line\n", 5);
    e = errno;
    close_target(f, path);
    DM_ASSERT_EQ_INT(rc, -1);
    DM_ASSERT_EQ_INT(e, EPIPE);
}

/* ERROR_NO_DATA: what a pipe says once its reader exited (findstr after
 * Ctrl+C); the CRT's _write would have said EINVAL. */
DM_TEST(write_no_data_232_is_epipe)
{
    closed_pipe_is_epipe(232);
}

/* ERROR_BROKEN_PIPE: the documented value for the same end. */
DM_TEST(write_broken_pipe_109_is_epipe)
{
    closed_pipe_is_epipe(109);
}

/* ERROR_PIPE_NOT_CONNECTED: Wine's answer for a Unix pipe whose reader
 * exited (measured with a WriteFile loop under Wine 8). */
DM_TEST(write_pipe_not_connected_233_is_epipe)
{
    closed_pipe_is_epipe(233);
}

/* Another error stays an error (not the quiet end): disk full. */
DM_TEST(write_disk_full_is_not_epipe)
{
    char path[MAX_PATH + 64];
    FILE *f = open_target(0, path, sizeof path);
    int rc, e;

    DM_ASSERT(f != NULL);
    fw.fail_error = 112; /* ERROR_DISK_FULL */
    errno = 0;
    rc = dm_write_all(f, "line\n", 5);
    e = errno;
    close_target(f, path);
    DM_ASSERT_EQ_INT(rc, -1);
    DM_ASSERT_EQ_INT(e, ENOSPC);
}

/* A file gets the UTF-8 bytes unchanged, not through the console path. */
DM_TEST(file_gets_utf8_bytes)
{
    static const char text[] = "C:\\B\xc3\xbc" "cher\\\xe6\x97\xa5\xe6\x9c\xac.txt\n";
    char path[MAX_PATH + 64];
    FILE *f = open_target(0, path, sizeof path);
    int rc, calls;
    size_t n;

    DM_ASSERT(f != NULL);
    rc = dm_write_all(f, text, sizeof text - 1);
    n = fw.n_bytes;
    calls = fw.calls;
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT_EQ_U64(n, sizeof text - 1);
    DM_ASSERT_MEM_EQ(fw.bytes, text, sizeof text - 1);
    DM_ASSERT_EQ_INT(calls, 0);
    close_target(f, path);
}

/* ---- consoles -------------------------------------------------------------- */

/* A line with non-ASCII names (2-, 3- and 4-byte UTF-8) repeated past the
 * console chunk, so chunk cuts fall inside multi-byte characters unless
 * they are cut between characters. */
static char *mixed_text(size_t *len)
{
    static const char piece[] = "12:00:01 w 4096 C:\\B\xc3\xbc" "cher\\\xe6\x97\xa5"
                                "\xe6\x9c\xac\\\xf0\x9f\x98\x80.txt\n";
    size_t n = 0, cap = 40000;
    char *s = malloc(cap + 1);

    while (s != NULL && n + sizeof piece - 1 <= cap) {
        memcpy(s + n, piece, sizeof piece - 1);
        n += sizeof piece - 1;
    }
    if (s != NULL)
        s[n] = '\0';
    *len = n;
    return s;
}

static void console_gets(enum console_mode mode)
{
    char path[MAX_PATH + 64];
    size_t len = 0, got_len;
    char *text = mixed_text(&len);
    char *got = malloc(len + 64);
    FILE *f = open_target(1, path, sizeof path);
    int rc, used_console;

    DM_ASSERT(text != NULL && got != NULL && f != NULL);
    if (text == NULL || got == NULL || f == NULL) {
        close_target(f, path);
        free(text);
        free(got);
        return;
    }
    fw.mode = mode;
    rc = dm_write_all(f, text, len);
    used_console = fw.calls > 0 && fw.n_bytes == 0;
    got_len = console_text(got, len + 64);
    close_target(f, path);
    DM_ASSERT_EQ_INT(rc, 0);
    DM_ASSERT(used_console);
    /* Every character exactly once: no tail written twice, no U+FFFD
     * from a character cut in two. */
    DM_ASSERT_EQ_U64(got_len, len);
    DM_ASSERT(memcmp(got, text, len) == 0);
    free(text);
    free(got);
}

DM_TEST(console_gets_utf16_intact)
{
    console_gets(CONSOLE_EXACT);
}

/* A console that takes a few characters at a time and reports the count
 * in characters (UTF-16 units): the rest follows, nothing twice. */
DM_TEST(console_counts_in_characters)
{
    console_gets(CONSOLE_PARTIAL);
}

/* A console that reports more than it was asked: taken as all written,
 * never a step past the end (no underflow, no loop). */
DM_TEST(console_count_above_request)
{
    console_gets(CONSOLE_MORE);
}

/* ---- the whole run ------------------------------------------------------- */

/* `diskmon -r t.etl | findstr x` after findstr exited: the first write
 * fails with 232, and the run ends as `| head -1` does on Linux: exit 0,
 * nothing on stderr (the summary only with -s). */
static void replay_into_closed_pipe(DWORD code)
{
    char etl[1024], path[MAX_PATH + 64], err_path[MAX_PATH + 64], errtext[1024];
    char dir[MAX_PATH];
    struct dm_options opt;
    FILE *out, *errf;
    char a0[] = "diskmon", a1[] = "-r";
    char *argv[4] = {a0, a1, etl, NULL};
    char msg[256];
    int rc;
    size_t n;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    snprintf(etl, sizeof etl, "%s/%s", dmt_shared_etl_dir(),
             "perfview-net452-x64-win8.etl");
    DM_ASSERT_EQ_INT(dm_options_parse(&opt, 3, argv, msg, sizeof msg), 0);
    GetTempPathA((DWORD)sizeof dir, dir);
    snprintf(err_path, sizeof err_path, "%sdm_test_win32_io_err_%lu.txt", dir,
             (unsigned long)GetCurrentProcessId());
    errf = fopen(err_path, "w+b");
    out = open_target(0, path, sizeof path);
    DM_ASSERT(out != NULL && errf != NULL);
    if (out == NULL || errf == NULL) {
        close_target(out, path);
        if (errf != NULL)
            fclose(errf);
        return;
    }
    fw.fail_error = code;
    rc = dm_run(&opt, &dm_replay_source, out, errf);
    fflush(errf);
    rewind(errf);
    n = fread(errtext, 1, sizeof errtext - 1, errf);
    errtext[n] = '\0';
    close_target(out, path);
    fclose(errf);
    remove(err_path);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
    DM_ASSERT_STR_EQ(errtext, "");
}

DM_TEST(replay_into_closed_pipe_232_exits_0)
{
    replay_into_closed_pipe(232);
}

DM_TEST(replay_into_closed_pipe_109_exits_0)
{
    replay_into_closed_pipe(109);
}

/* ---- --top and stderr through the one writer ------------------------------ */

/* A run of diskmon on the sample trace with args, stdout a fake pipe or
 * file (WriteFile; failing with fail_error unless 0), stderr a fake
 * console when err_console (else a real file). Returns the exit code;
 * *err is stderr's text: from the fake console, or read back. */
static int run_faked(const char *const *args, int nargs, DWORD fail_error,
                     int err_console, char *err, size_t errlen)
{
    char etl[1024], path[MAX_PATH + 64], err_path[MAX_PATH + 64], dir[MAX_PATH];
    char a0[] = "diskmon", msg[256];
    char *argv[16];
    struct dm_options opt;
    FILE *out, *errf;
    int argc = 0, rc;

    err[0] = '\0';
    snprintf(etl, sizeof etl, "%s/%s", dmt_shared_etl_dir(), "perfview-net452-x64-win8.etl");
    argv[argc++] = a0;
    for (int i = 0; i < nargs && argc < 15; i++)
        argv[argc++] = strcmp(args[i], "TRACE") == 0 ? etl : (char *)(uintptr_t)args[i];
    argv[argc] = NULL;
    if (dm_options_parse(&opt, argc, argv, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "options: %s", msg);
        return -1;
    }
    GetTempPathA((DWORD)sizeof dir, dir);
    snprintf(err_path, sizeof err_path, "%sdm_test_win32_io_err_%lu.txt", dir,
             (unsigned long)GetCurrentProcessId());
    errf = fopen(err_path, "w+b");
    out = open_target(0, path, sizeof path);
    if (out == NULL || errf == NULL) {
        close_target(out, path);
        if (errf != NULL)
            fclose(errf);
        snprintf(err, errlen, "cannot open the temporary files");
        return -1;
    }
    if (err_console)
        fw.console = (HANDLE)_get_osfhandle(_fileno(errf));
    fw.fail_error = fail_error;
    rc = dm_run(&opt, &dm_replay_source, out, errf);
    if (err_console) {
        console_text(err, errlen);
    } else {
        size_t n;

        fflush(errf);
        rewind(errf);
        n = fread(err, 1, errlen - 1, errf);
        err[n] = '\0';
    }
    close_target(out, path);
    fclose(errf);
    remove(err_path);
    return rc;
}

/* --top's intervals reach the writer (WriteFile), not stdio, which turned
 * the 232 of `diskmon --top | more`, then q, into "Invalid argument". */
DM_TEST(top_goes_through_the_writer)
{
    static const char *const args[] = {"-r", "TRACE", "--top", "1"};
    char err[1024];
    int rc;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    rc = run_faked(args, 4, 0, 0, err, sizeof err);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
    DM_ASSERT_STR_EQ(err, "");
    /* The first interval's time line, as WriteFile received it. */
    fw.bytes[fw.n_bytes < sizeof fw.bytes ? fw.n_bytes : sizeof fw.bytes - 1] = '\0';
    DM_ASSERT(fw.n_bytes > 0);
    DM_ASSERT(strstr((const char *)fw.bytes, "1.000-2.000 s: ") != NULL);
}

static void top_into_closed_pipe(DWORD code, const char *format)
{
    const char *args[] = {"-r", "TRACE", "--top", "1", "-f", format};
    char err[1024];
    int rc;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    rc = run_faked(args, format != NULL ? 6 : 4, code, 0, err, sizeof err);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
    DM_ASSERT_STR_EQ(err, "");
}

DM_TEST(top_into_closed_pipe_232_exits_0)
{
    top_into_closed_pipe(232, NULL);
}

DM_TEST(top_json_into_closed_pipe_109_exits_0)
{
    top_into_closed_pipe(109, "json");
}

/* An error message on a console arrives as UTF-16 (WriteConsoleW), the
 * path's non-ASCII letters intact whatever the console's code page. */
DM_TEST(error_message_reaches_console_as_utf16)
{
    static const char *const args[] = {"-r", "C:\\B\xc3\xbc" "cher\\\xe6\x97\xa5.etl"};
    char err[2048];
    int rc;

    rc = run_faked(args, 2, 0, 1, err, sizeof err);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_ERROR);
    DM_ASSERT(fw.calls > 0);
    DM_ASSERT(strstr(err, "diskmon: C:\\B\xc3\xbc" "cher\\\xe6\x97\xa5.etl") == err);
}

/* -s and --hist, written at the end, reach the console the same way, as
 * does a note (none is printed by a replay of this trace: the summary
 * stands for all of stderr's writers, which share dm_write_all). */
DM_TEST(summary_reaches_console_as_utf16)
{
    static const char *const args[] = {"-r", "TRACE", "-s", "--hist", "-n", "20"};
    char err[16384];
    int rc;

    DM_REQUIRE(dmt_shared_etl_present(), "sample traces (../shared/etl) not found");
    rc = run_faked(args, 6, 0, 1, err, sizeof err);
    DM_ASSERT_EQ_INT(rc, DM_EXIT_OK);
    DM_ASSERT(fw.calls > 0);
    DM_ASSERT(strstr(err, "20 events in ") != NULL);
    DM_ASSERT(strstr(err, "usecs") != NULL);
    /* the lines went to the file (WriteFile), the summary to the console */
    DM_ASSERT(fw.n_bytes > 0);
}

const struct dmt_case dm_suite_win32_io[] = {
    {"write_no_data_232_is_epipe", write_no_data_232_is_epipe},
    {"write_broken_pipe_109_is_epipe", write_broken_pipe_109_is_epipe},
    {"write_pipe_not_connected_233_is_epipe", write_pipe_not_connected_233_is_epipe},
    {"write_disk_full_is_not_epipe", write_disk_full_is_not_epipe},
    {"file_gets_utf8_bytes", file_gets_utf8_bytes},
    {"console_gets_utf16_intact", console_gets_utf16_intact},
    {"console_counts_in_characters", console_counts_in_characters},
    {"console_count_above_request", console_count_above_request},
    {"replay_into_closed_pipe_232_exits_0", replay_into_closed_pipe_232_exits_0},
    {"replay_into_closed_pipe_109_exits_0", replay_into_closed_pipe_109_exits_0},
    {"top_goes_through_the_writer", top_goes_through_the_writer},
    {"top_into_closed_pipe_232_exits_0", top_into_closed_pipe_232_exits_0},
    {"top_json_into_closed_pipe_109_exits_0", top_json_into_closed_pipe_109_exits_0},
    {"error_message_reaches_console_as_utf16", error_message_reaches_console_as_utf16},
    {"summary_reaches_console_as_utf16", summary_reaches_console_as_utf16},
    {NULL, NULL},
};
