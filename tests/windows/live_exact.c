/*
 * live_exact.c - the one-command check of live capture on a real Windows.
 *
 * Usage: live_exact PATH\TO\diskmon.exe      (ctest runs it on Windows)
 *
 * It needs what diskmon needs: an elevated prompt on a real Windows 8 or
 * later. Anywhere else (not elevated, Wine) it prints why and exits 77, the
 * skip code CTest is told about. What it checks, against the real kernel:
 *
 *  exact      This program opens a file with FILE_FLAG_NO_BUFFERING |
 *             FILE_FLAG_WRITE_THROUGH (so every call is one disk request)
 *             *before* diskmon starts, so only the start rundown can name
 *             it; then diskmon -f json runs as a child, this program writes
 *             and reads known sizes at known offsets, calls
 *             FlushFileBuffers, and stops diskmon with CTRL_BREAK. Each Read
 *             and Write must appear exactly once, with this process's pid
 *             and image name, the file's drive-letter path (both sides
 *             compared as long paths: a hosted runner's TEMP is an 8.3
 *             path, docs/etw.md §8), the volume's disk number and the
 *             right byte count; a Flush by this pid must appear.
 *  exact/latency  The lines of that I/O appear in diskmon's output within
 *             LINE_BOUND_MS of the last call (the README's bound).
 *  exact/time-order  Every line's time is at or after the line before.
 *  self-test  diskmon --self-test (the user's own check, README "Self-test")
 *             exits 0 with every line PASS; the first FAIL line is shown.
 *  no-leftover  After each run no "NT Kernel Logger" or "diskmon" session
 *             diskmon started is left (QueryAllTraces).
 *  closed-pipe  diskmon's stdout is a pipe whose reader is gone: it exits
 *             0 with nothing on stderr (checklist step 7.1).
 *  force      With an NT Kernel Logger of this program's own running,
 *             diskmon --force stops it, captures, and leaves nothing.
 *  cleanup    A "diskmon" session left behind is stopped by --cleanup.
 *  outside-stop  Stopping diskmon's session from outside (and starting a new
 *             one under the same name at once, as another tool would) makes
 *             diskmon exit 1 saying so, without stopping the new session.
 *  console-close  Closing diskmon's console window stops its session
 *             within the 5 s Windows grants (skipped when the console is
 *             not a classic conhost window).
 *
 * Prints one line per check (PASS/FAIL/SKIP name: detail) and exits 0 when
 * all passed, 1 when one failed. It never stops a session it did not start
 * itself or see diskmon start: when an NT Kernel Logger is already running
 * (another tool), the checks that would need it are skipped.
 * Facts: docs/etw.md §1 and §7.
 */
#include <windows.h>
#include <evntrace.h>
#include <winioctl.h>
#include <shellapi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define SKIP_EXIT 77

/* diskmon's private session GUID (src/etw/etw_session.c). */
static const GUID diskmon_guid = {
    0x98177c6b, 0x6459, 0x4570, {0x9c, 0xca, 0x91, 0xc5, 0xa0, 0xf5, 0xe9, 0xac}};
/* SystemTraceControlGuid (docs/etw.md §1). */
static const GUID system_trace_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

/* How long diskmon may take to start its session, and how long events may
 * take to reach its output: the README's bound (etw_session.h
 * DM_ETW_LINE_BOUND_MS: 100 ms FlushTimer, 150 ms margin, 50 ms release
 * tick, 100 ms printer), checked as LINE_BOUND_MS, plus 50 ms for this
 * program's polling of the output file. */
#define START_WAIT_MS 15000u
#define SETTLE_MS 2000u
#define DRAIN_MS 3000u
#define EXIT_WAIT_MS 20000u
#define LINE_BOUND_MS 450u
#define POLL_MS 20u
#define POLL_SLACK_MS 50u

static int failures, passes;
static wchar_t diskmon_path[MAX_PATH];
static wchar_t self_path[MAX_PATH];
static wchar_t work_dir[MAX_PATH];

#ifdef __GNUC__
#define DM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DM_PRINTF(f, a)
#endif

static void result(const char *status, const char *name, const char *fmt, ...) DM_PRINTF(3, 4);

static void result(const char *status, const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s", status, name);
    if (fmt != NULL) {
        printf(": ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    printf("\n");
    fflush(stdout);
    if (strcmp(status, "FAIL") == 0)
        failures++;
    else if (strcmp(status, "PASS") == 0)
        passes++;
}

/* --- environment ------------------------------------------------------- */

static int under_wine(void)
{
    HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");

    return ntdll != NULL && GetProcAddress(ntdll, "wine_get_version") != NULL;
}

static int is_elevated(void)
{
    TOKEN_ELEVATION e;
    HANDLE token;
    DWORD got = 0;
    BOOL ok;

    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return 0;
    ok = GetTokenInformation(token, TokenElevation, &e, sizeof e, &got);
    CloseHandle(token);
    return ok && e.TokenIsElevated;
}

static int is_win8_or_later(void)
{
    OSVERSIONINFOEXW v;
    DWORDLONG mask = 0;

    memset(&v, 0, sizeof v);
    v.dwOSVersionInfoSize = sizeof v;
    v.dwMajorVersion = 6;
    v.dwMinorVersion = 2;
    mask = VerSetConditionMask(mask, VER_MAJORVERSION, VER_GREATER_EQUAL);
    mask = VerSetConditionMask(mask, VER_MINORVERSION, VER_GREATER_EQUAL);
    return VerifyVersionInfoW(&v, VER_MAJORVERSION | VER_MINORVERSION, mask) != 0;
}

/* --- sessions ---------------------------------------------------------- */

struct props_buf {
    EVENT_TRACE_PROPERTIES p;
    WCHAR logger_name[1024];
    WCHAR log_file_name[1024];
};

static void init_props(struct props_buf *b, const GUID *guid)
{
    memset(b, 0, sizeof *b);
    b->p.Wnode.BufferSize = (ULONG)sizeof *b;
    b->p.Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    b->p.Wnode.Guid = *guid;
    b->p.LoggerNameOffset = (ULONG)offsetof(struct props_buf, logger_name);
    b->p.LogFileNameOffset = (ULONG)offsetof(struct props_buf, log_file_name);
}

static int session_running(const WCHAR *name)
{
    struct props_buf b;

    init_props(&b, wcscmp(name, KERNEL_LOGGER_NAMEW) == 0 ? &system_trace_guid
                                                          : &diskmon_guid);
    return ControlTraceW(0, name, &b.p, EVENT_TRACE_CONTROL_QUERY) == ERROR_SUCCESS;
}

static ULONG stop_session(const WCHAR *name)
{
    struct props_buf b;

    init_props(&b, wcscmp(name, KERNEL_LOGGER_NAMEW) == 0 ? &system_trace_guid
                                                          : &diskmon_guid);
    return ControlTraceW(0, name, &b.p, EVENT_TRACE_CONTROL_STOP);
}

/* A session of this program's own: the NT Kernel Logger, or a leftover
 * "diskmon" (Windows 8+ system logger with diskmon's GUID), logging process
 * events in real time with no consumer. */
static ULONG start_own_session(const WCHAR *name)
{
    struct props_buf b;
    TRACEHANDLE h = 0;
    int kernel = wcscmp(name, KERNEL_LOGGER_NAMEW) == 0;

    init_props(&b, kernel ? &system_trace_guid : &diskmon_guid);
    b.p.LogFileNameOffset = 0;
    b.p.Wnode.ClientContext = 1;
    b.p.LogFileMode = EVENT_TRACE_REAL_TIME_MODE;
    if (!kernel)
        b.p.LogFileMode |= EVENT_TRACE_SYSTEM_LOGGER_MODE;
    b.p.EnableFlags = EVENT_TRACE_FLAG_PROCESS;
    return StartTraceW(&h, name, &b.p);
}

/* QueryAllTraces: is a session of this name running? */
static int listed(const WCHAR *name)
{
    enum { MAX_SESSIONS = 64 };
    static struct props_buf bufs[MAX_SESSIONS];
    PEVENT_TRACE_PROPERTIES ptrs[MAX_SESSIONS];
    ULONG count = 0;

    for (int i = 0; i < MAX_SESSIONS; i++) {
        init_props(&bufs[i], &system_trace_guid);
        ptrs[i] = &bufs[i].p;
    }
    if (QueryAllTracesW(ptrs, MAX_SESSIONS, &count) != ERROR_SUCCESS &&
        count == 0)
        return session_running(name); /* the list failed: ask by name */
    for (ULONG i = 0; i < count && i < MAX_SESSIONS; i++)
        if (_wcsicmp(bufs[i].logger_name, name) == 0)
            return 1;
    return 0;
}

static void check_no_leftover(const char *name, int kernel_was_ours)
{
    int kernel = kernel_was_ours && listed(KERNEL_LOGGER_NAMEW);
    int priv = listed(L"diskmon");
    int helper = listed(L"diskmon rundown"); /* the private session's helper */

    if (kernel || priv || helper)
        result("FAIL", name, "left running:%s%s%s",
               kernel ? " \"NT Kernel Logger\"" : "", priv ? " \"diskmon\"" : "",
               helper ? " \"diskmon rundown\"" : "");
    else
        result("PASS", name, "nothing left running");
    /* Whatever the verdict, leave the machine clean. */
    if (kernel)
        stop_session(KERNEL_LOGGER_NAMEW);
    if (priv)
        stop_session(L"diskmon");
    if (helper)
        stop_session(L"diskmon rundown");
}

/* --- the child ------------------------------------------------------------ */

struct child {
    PROCESS_INFORMATION pi;
    wchar_t out_path[MAX_PATH], err_path[MAX_PATH];
    char *out, *err; /* read after exit */
    DWORD exit_code;
};

static HANDLE inheritable_file(const wchar_t *path)
{
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};

    return CreateFileW(path, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
                       CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
}

/* Start diskmon with args; stdout (unless stdout_to is given: an
 * inheritable handle, which the caller closes after) and stderr go to files
 * in work_dir. flags: CREATE_NEW_PROCESS_GROUP (for CTRL_BREAK) or
 * CREATE_NEW_CONSOLE. */
static int child_start_to(struct child *c, const wchar_t *tag, const wchar_t *args,
                          DWORD flags, HANDLE stdout_to)
{
    STARTUPINFOW si;
    wchar_t cmd[2 * MAX_PATH];
    HANDLE out, err;
    BOOL ok;

    memset(c, 0, sizeof *c);
    swprintf(c->out_path, MAX_PATH, L"%ls\\%ls.out", work_dir, tag);
    swprintf(c->err_path, MAX_PATH, L"%ls\\%ls.err", work_dir, tag);
    swprintf(cmd, sizeof cmd / sizeof cmd[0], L"\"%ls\" %ls", diskmon_path, args);
    /* An inheritable handle of our own either way, closed below. */
    if (stdout_to == NULL)
        out = inheritable_file(c->out_path);
    else if (!DuplicateHandle(GetCurrentProcess(), stdout_to, GetCurrentProcess(), &out, 0,
                              TRUE, DUPLICATE_SAME_ACCESS))
        out = INVALID_HANDLE_VALUE;
    err = inheritable_file(c->err_path);
    if (out == INVALID_HANDLE_VALUE || err == INVALID_HANDLE_VALUE) {
        if (out != INVALID_HANDLE_VALUE)
            CloseHandle(out);
        if (err != INVALID_HANDLE_VALUE)
            CloseHandle(err);
        return -1;
    }
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.hStdOutput = out;
    si.hStdError = err;
    ok = CreateProcessW(NULL, cmd, NULL, NULL, TRUE, flags, NULL, NULL, &si, &c->pi);
    CloseHandle(out);
    CloseHandle(err);
    return ok ? 0 : -1;
}

static int child_start(struct child *c, const wchar_t *tag, const wchar_t *args,
                       DWORD flags)
{
    return child_start_to(c, tag, args, flags, NULL);
}

static char *slurp(const wchar_t *path)
{
    FILE *f = _wfopen(path, L"rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (buf != NULL) {
        size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);

        buf[got] = '\0';
    }
    fclose(f);
    return buf;
}

/* Wait for the child to end (killing it after the limit), then read its
 * output. Returns 0 if it ended by itself. */
static int child_finish(struct child *c, DWORD wait_ms)
{
    int ended = WaitForSingleObject(c->pi.hProcess, wait_ms) == WAIT_OBJECT_0;

    if (!ended) {
        TerminateProcess(c->pi.hProcess, 99);
        WaitForSingleObject(c->pi.hProcess, 5000);
    }
    GetExitCodeProcess(c->pi.hProcess, &c->exit_code);
    CloseHandle(c->pi.hProcess);
    CloseHandle(c->pi.hThread);
    c->out = slurp(c->out_path);
    c->err = slurp(c->err_path);
    return ended ? 0 : -1;
}

static void child_free(struct child *c)
{
    free(c->out);
    free(c->err);
    DeleteFileW(c->out_path);
    DeleteFileW(c->err_path);
}

static void child_break(struct child *c)
{
    GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, c->pi.dwProcessId);
}

/* Wait until diskmon's session exists (one that did not before), then
 * SETTLE_MS for the consumer to attach. Returns the session's name or NULL. */
static const WCHAR *wait_session(struct child *c, int kernel_before)
{
    for (DWORD waited = 0; waited < START_WAIT_MS; waited += 50) {
        if (WaitForSingleObject(c->pi.hProcess, 0) == WAIT_OBJECT_0)
            return NULL;
        if (!kernel_before && session_running(KERNEL_LOGGER_NAMEW)) {
            Sleep(SETTLE_MS);
            return KERNEL_LOGGER_NAMEW;
        }
        if (session_running(L"diskmon")) {
            Sleep(SETTLE_MS);
            return L"diskmon";
        }
        Sleep(50);
    }
    return NULL;
}

/* --- the I/O and its expected lines -------------------------------------- */

/* Sizes in sectors-of-4096 (a multiple of 512- and 4096-byte sectors),
 * distinct so each line names its call. Written back to back from offset 0,
 * then read back at the same offsets. */
static const unsigned io_blocks[] = {1, 2, 3, 5, 7};
#define N_IO (sizeof io_blocks / sizeof io_blocks[0])
#define BLOCK 4096u

struct expect {
    const char *request;
    unsigned bytes;
    int seen;
};

/* The file of the I/O, created before diskmon starts. */
static HANDLE open_io_file(const wchar_t *path)
{
    return CreateFileW(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
                       FILE_ATTRIBUTE_NORMAL | FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH,
                       NULL);
}

static int do_io(HANDLE f, struct expect *exp)
{
    uint8_t *buf;
    uint64_t offset = 0;
    DWORD done = 0;
    int ok = 1;
    size_t n = 0;

    buf = VirtualAlloc(NULL, 8 * BLOCK, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (buf == NULL)
        return -1;
    memset(buf, 0x5a, 8 * BLOCK);
    for (int pass = 0; pass < 2 && ok; pass++) {
        offset = 0;
        for (size_t i = 0; i < N_IO && ok; i++) {
            OVERLAPPED ov;
            DWORD len = io_blocks[i] * BLOCK;

            memset(&ov, 0, sizeof ov);
            ov.Offset = (DWORD)offset;
            ov.OffsetHigh = (DWORD)(offset >> 32);
            ok = pass == 0 ? WriteFile(f, buf, len, &done, &ov) : ReadFile(f, buf, len, &done, &ov);
            ok = ok && done == len;
            exp[n].request = pass == 0 ? "Write" : "Read";
            exp[n].bytes = len;
            exp[n].seen = 0;
            n++;
            offset += len;
        }
    }
    ok = ok && FlushFileBuffers(f);
    VirtualFree(buf, 0, MEM_RELEASE);
    return ok ? (int)n : -1;
}

/* A path as its long form (GetLongPathNameW), UTF-8: a hosted runner's
 * TEMP is an 8.3 path (C:\Users\RUNNER~1\...), diskmon prints the
 * kernel's long one. Unchanged when the file cannot be asked. */
static void long_path_utf8(const char *in, char *out, size_t len)
{
    wchar_t wide[MAX_PATH], long_form[MAX_PATH];

    snprintf(out, len, "%s", in);
    if (MultiByteToWideChar(CP_UTF8, 0, in, -1, wide, MAX_PATH) == 0 ||
        GetLongPathNameW(wide, long_form, MAX_PATH) == 0)
        return;
    WideCharToMultiByte(CP_UTF8, 0, long_form, -1, out, (int)len, NULL, NULL);
}

/* The disk number of the volume holding path (IOCTL_STORAGE_GET_DEVICE_NUMBER
 * on \\.\C:); -1 when unknown (e.g. a volume spanning disks). */
static long volume_disk(const wchar_t *path)
{
    wchar_t dev[8] = L"\\\\.\\C:";
    STORAGE_DEVICE_NUMBER sdn;
    DWORD got = 0;
    HANDLE h;
    long disk = -1;

    dev[4] = path[0];
    h = CreateFileW(dev, 0, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL, OPEN_EXISTING, 0, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return -1;
    if (DeviceIoControl(h, IOCTL_STORAGE_GET_DEVICE_NUMBER, NULL, 0, &sdn, sizeof sdn, &got, NULL))
        disk = (long)sdn.DeviceNumber;
    CloseHandle(h);
    return disk;
}

/* A JSON field of one line: numbers as text, strings unescaped (\\ and \"
 * only, which is all diskmon's paths need besides \u, kept as is). */
static int json_field(const char *line, const char *key, char *out, size_t len)
{
    char pat[64];
    const char *p;
    size_t n = 0;

    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = strstr(line, pat);
    if (p == NULL)
        return 0;
    p += strlen(pat);
    if (*p == '"') {
        for (p++; *p != '\0' && *p != '"' && n + 1 < len; p++) {
            if (*p == '\\' && (p[1] == '\\' || p[1] == '"'))
                p++;
            out[n++] = *p;
        }
    } else {
        while (*p != '\0' && *p != ',' && *p != '}' && n + 1 < len)
            out[n++] = *p++;
    }
    out[n] = '\0';
    return 1;
}

/* Check diskmon's JSON lines against the I/O done. */
static void check_lines(const char *name, char *out, struct expect *exp, int n_exp,
                        const char *file_utf8, long disk)
{
    char image[MAX_PATH], *base, want_image[16];
    unsigned long pid = GetCurrentProcessId();
    int flushes = 0, extra = 0, bad = 0;
    char why[512] = "";

    /* The kernel keeps the first 15 characters of the image name
     * (EPROCESS ImageFileName); diskmon prints those. */
    GetModuleFileNameA(NULL, image, sizeof image);
    base = strrchr(image, '\\');
    base = base != NULL ? base + 1 : image;
    snprintf(want_image, sizeof want_image, "%s", base);

    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char req[16], bytes[32], p[32], file[1024], proc[64], dsk[32];

        if (!json_field(line, "request", req, sizeof req) ||
            !json_field(line, "pid", p, sizeof p) || strtoul(p, NULL, 10) != pid)
            continue;
        if (strcmp(req, "Flush") == 0) {
            flushes++;
            continue;
        }
        if (!json_field(line, "file", file, sizeof file))
            continue;
        {
            char long_file[1024];

            long_path_utf8(file, long_file, sizeof long_file);
            if (_stricmp(long_file, file_utf8) != 0)
                continue;
        }
        json_field(line, "bytes", bytes, sizeof bytes);
        json_field(line, "process", proc, sizeof proc);
        json_field(line, "disk", dsk, sizeof dsk);
        {
            int matched = 0;

            for (int i = 0; i < n_exp; i++)
                if (strcmp(exp[i].request, req) == 0 &&
                    strtoul(bytes, NULL, 10) == exp[i].bytes) {
                    exp[i].seen++;
                    matched = 1;
                }
            if (!matched)
                extra++;
        }
        if (_stricmp(proc, want_image) != 0 && bad++ == 0)
            snprintf(why + strlen(why), sizeof why - strlen(why),
                     " process \"%s\" (want \"%s\");", proc, want_image);
        if (disk >= 0 && strtol(dsk, NULL, 10) != disk && bad++ == 0)
            snprintf(why + strlen(why), sizeof why - strlen(why), " disk %s (want %ld);",
                     dsk, disk);
    }
    for (int i = 0; i < n_exp; i++)
        if (exp[i].seen != 1) {
            bad++;
            snprintf(why + strlen(why), sizeof why - strlen(why), " %s of %u bytes seen %d times;",
                     exp[i].request, exp[i].bytes, exp[i].seen);
        }
    if (flushes == 0) {
        bad++;
        snprintf(why + strlen(why), sizeof why - strlen(why), " no Flush by pid %lu;", pid);
    }
    if (extra > 0) {
        bad++;
        snprintf(why + strlen(why), sizeof why - strlen(why),
                 " %d unexpected Read/Write lines on the file;", extra);
    }
    if (bad)
        result("FAIL", name, "%s", why);
    else
        result("PASS", name, "%d I/Os exactly once, pid %lu, \"%s\", disk %ld, %d flush(es)",
               n_exp, pid, want_image, disk, flushes);
}

/* --- the checks ------------------------------------------------------------ */

/* Lines of out whose "file" is file_utf8 (long form), and whether every
 * line's "time" is at or after the one before. */
static int lines_for_file(const char *out, const char *file_utf8, int *in_order)
{
    const char *p = out;
    double last = -1.0;
    int n = 0;

    *in_order = 1;
    while (p != NULL && *p != '\0') {
        const char *nl = strchr(p, '\n');
        char line[2048], file[1024], t[64];
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);

        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        if (json_field(line, "time", t, sizeof t)) {
            double v = strtod(t, NULL);

            if (v < last)
                *in_order = 0;
            last = v;
        }
        if (json_field(line, "file", file, sizeof file)) {
            char long_file[1024];

            long_path_utf8(file, long_file, sizeof long_file);
            n += _stricmp(long_file, file_utf8) == 0;
        }
        p = nl != NULL ? nl + 1 : NULL;
    }
    return n;
}

static void check_exact(int kernel_before)
{
    struct child c;
    struct expect exp[2 * N_IO];
    wchar_t file[MAX_PATH], long_file[MAX_PATH];
    char file_utf8[3 * MAX_PATH];
    const WCHAR *session;
    ULONGLONG done_at, seen_at = 0;
    HANDLE f;
    long disk;
    int n, in_order = 1;

    swprintf(file, MAX_PATH, L"%ls\\io.bin", work_dir);
    /* Opened before diskmon starts: no FileCreate while it runs, so only
     * the start rundown can name it. */
    f = open_io_file(file);
    if (f == INVALID_HANDLE_VALUE) {
        result("FAIL", "exact", "cannot create %ls (error %lu)", file, GetLastError());
        return;
    }
    if (GetLongPathNameW(file, long_file, MAX_PATH) == 0)
        wcscpy(long_file, file);
    WideCharToMultiByte(CP_UTF8, 0, long_file, -1, file_utf8, (int)sizeof file_utf8, NULL, NULL);
    if (child_start(&c, L"exact", L"-f json", CREATE_NEW_PROCESS_GROUP) != 0) {
        result("FAIL", "exact", "cannot start %ls (error %lu)", diskmon_path, GetLastError());
        CloseHandle(f);
        DeleteFileW(file);
        return;
    }
    session = wait_session(&c, kernel_before);
    if (session == NULL) {
        child_finish(&c, 1000);
        result("FAIL", "exact", "diskmon started no session (exit %lu): %s", c.exit_code,
               c.err != NULL ? c.err : "");
        child_free(&c);
        CloseHandle(f);
        DeleteFileW(file);
        return;
    }
    n = do_io(f, exp);
    done_at = GetTickCount64();
    /* Poll diskmon's output until every line of the I/O is there. */
    while (n > 0 && GetTickCount64() - done_at < DRAIN_MS) {
        char *now = slurp(c.out_path);
        int have = now != NULL ? lines_for_file(now, file_utf8, &in_order) : 0;

        free(now);
        if (have >= n) {
            seen_at = GetTickCount64();
            break;
        }
        Sleep(POLL_MS);
    }
    Sleep(SETTLE_MS);
    CloseHandle(f);
    child_break(&c);
    if (child_finish(&c, EXIT_WAIT_MS) != 0)
        result("FAIL", "exact/ctrl-break", "diskmon did not exit within %u ms of CTRL_BREAK",
               EXIT_WAIT_MS);
    else if (c.exit_code != 0)
        result("FAIL", "exact/ctrl-break", "exit %lu: %s", c.exit_code, c.err ? c.err : "");
    else
        result("PASS", "exact/ctrl-break", "exit 0");
    if (n < 0) {
        result("FAIL", "exact", "the test's own I/O failed (error %lu)", GetLastError());
    } else {
        char empty[1] = "";

        disk = volume_disk(long_file);
        if (seen_at == 0)
            result("FAIL", "exact/latency", "the I/O's lines were not all out %u ms after it",
                   DRAIN_MS);
        else if (seen_at - done_at > LINE_BOUND_MS + POLL_SLACK_MS)
            result("FAIL", "exact/latency", "lines out %llu ms after the I/O (bound %u ms)",
                   (unsigned long long)(seen_at - done_at), LINE_BOUND_MS);
        else
            result("PASS", "exact/latency", "lines out %llu ms after the I/O (bound %u ms)",
                   (unsigned long long)(seen_at - done_at), LINE_BOUND_MS);
        if (c.out != NULL)
            lines_for_file(c.out, file_utf8, &in_order);
        result(in_order ? "PASS" : "FAIL", "exact/time-order",
               in_order ? "every line at or after the one before"
                        : "a line's time is before the line above it");
        check_lines("exact", c.out != NULL ? c.out : empty, exp, n, file_utf8, disk);
    }
    DeleteFileW(file);
    child_free(&c);
    check_no_leftover("exact/no-leftover", !kernel_before);
}

/*
 * closed-pipe: the end of a pipe is the end of output, as `| head -1` on
 * Linux. diskmon's stdout is an anonymous pipe whose read end this program
 * closed before diskmon started, so its first write (the header) fails
 * with ERROR_NO_DATA (232, "The pipe is being closed": what a pipe whose
 * reader exited answers, MicrosoftDocs/cpp-docs#3029); it must then stop
 * its session and exit 0 with nothing on stderr, not "Invalid argument"
 * (the CRT's EINVAL for 232). This replaces a check by hand in cmd, which
 * cannot be made there: after `diskmon | findstr x` and Ctrl+C,
 * %errorlevel% is findstr's exit code, not diskmon's. With an NT Kernel
 * Logger of another tool running, diskmon's note about its private session
 * is the one line stderr may hold.
 */
static void check_closed_pipe(int kernel_before)
{
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, FALSE};
    HANDLE rd, wr;
    struct child c;
    const char *err, *line;
    int quiet = 1;

    if (!CreatePipe(&rd, &wr, &sa, 0)) {
        result("FAIL", "closed-pipe", "CreatePipe failed (error %lu)", GetLastError());
        return;
    }
    CloseHandle(rd); /* the reader is gone before diskmon writes */
    if (child_start_to(&c, L"closed-pipe", L"", CREATE_NEW_PROCESS_GROUP, wr) != 0) {
        CloseHandle(wr);
        result("FAIL", "closed-pipe", "cannot start diskmon");
        return;
    }
    CloseHandle(wr);
    if (child_finish(&c, EXIT_WAIT_MS) != 0) {
        result("FAIL", "closed-pipe", "diskmon was still running %u s after its stdout's "
               "reader went away (killed)", EXIT_WAIT_MS / 1000u);
        child_free(&c);
        check_no_leftover("closed-pipe/no-leftover", !kernel_before);
        return;
    }
    err = c.err != NULL ? c.err : "";
    for (line = err; *line != '\0'; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "")
        if (!kernel_before || strncmp(line, "diskmon: note: ", 15) != 0)
            quiet = 0;
    if (c.exit_code == 0 && quiet)
        result("PASS", "closed-pipe", "exit 0, %s", err[0] ? "only a note on stderr"
                                                         : "nothing on stderr");
    else
        result("FAIL", "closed-pipe", "exit %lu (want 0), stderr: %.300s", c.exit_code, err);
    child_free(&c);
    check_no_leftover("closed-pipe/no-leftover", !kernel_before);
}

static void check_force(int kernel_before)
{
    struct child c;
    ULONG rc;

    if (kernel_before) {
        result("SKIP", "force", "an NT Kernel Logger of another tool is running; "
                                "this test stops only its own");
        return;
    }
    rc = start_own_session(KERNEL_LOGGER_NAMEW);
    if (rc != ERROR_SUCCESS) {
        result("FAIL", "force", "could not start a test NT Kernel Logger (error %lu)", rc);
        return;
    }
    if (child_start(&c, L"force", L"--force -f json", CREATE_NEW_PROCESS_GROUP) != 0) {
        stop_session(KERNEL_LOGGER_NAMEW);
        result("FAIL", "force", "cannot start diskmon");
        return;
    }
    Sleep(3 * SETTLE_MS);
    child_break(&c);
    child_finish(&c, EXIT_WAIT_MS);
    if (c.exit_code == 0 && c.err != NULL && strstr(c.err, "--force") != NULL)
        result("PASS", "force", "diskmon took over the running NT Kernel Logger");
    else
        result("FAIL", "force", "exit %lu: %s", c.exit_code, c.err ? c.err : "");
    child_free(&c);
    check_no_leftover("force/no-leftover", 1);
}

static void check_cleanup(void)
{
    struct child c;
    ULONG rc;

    if (!is_win8_or_later()) {
        result("SKIP", "cleanup", "Windows 7 has no private system loggers");
        return;
    }
    if (session_running(L"diskmon")) {
        result("SKIP", "cleanup", "a \"diskmon\" session is running already (another diskmon?)");
        return;
    }
    rc = start_own_session(L"diskmon");
    if (rc != ERROR_SUCCESS) {
        result("FAIL", "cleanup", "could not start a leftover \"diskmon\" session (error %lu)", rc);
        return;
    }
    child_start(&c, L"cleanup", L"--cleanup", 0);
    child_finish(&c, EXIT_WAIT_MS);
    if (c.exit_code == 0 && !session_running(L"diskmon"))
        result("PASS", "cleanup", "the leftover session was stopped");
    else
        result("FAIL", "cleanup", "exit %lu, session %s: %s", c.exit_code,
               session_running(L"diskmon") ? "still running" : "gone", c.err ? c.err : "");
    child_free(&c);
    if (session_running(L"diskmon"))
        stop_session(L"diskmon");
}

static void check_outside_stop(int kernel_before)
{
    struct child c;
    const WCHAR *session;
    int theirs_alive;

    if (kernel_before) {
        result("SKIP", "outside-stop", "an NT Kernel Logger of another tool is running");
        return;
    }
    if (child_start(&c, L"outside", L"-f json", CREATE_NEW_PROCESS_GROUP) != 0) {
        result("FAIL", "outside-stop", "cannot start diskmon");
        return;
    }
    session = wait_session(&c, kernel_before);
    if (session == NULL || wcscmp(session, KERNEL_LOGGER_NAMEW) != 0) {
        child_break(&c);
        child_finish(&c, EXIT_WAIT_MS);
        child_free(&c);
        result("FAIL", "outside-stop", "diskmon did not start the NT Kernel Logger");
        check_no_leftover("outside-stop/no-leftover", 1);
        return;
    }
    /* Another tool takes the logger over: stop, then start its own. */
    stop_session(KERNEL_LOGGER_NAMEW);
    for (int i = 0; i < 20 && start_own_session(KERNEL_LOGGER_NAMEW) == ERROR_ALREADY_EXISTS; i++)
        Sleep(100);
    if (child_finish(&c, EXIT_WAIT_MS) != 0)
        result("FAIL", "outside-stop", "diskmon kept running after its session was stopped");
    else if (c.exit_code != 1 || c.err == NULL || strstr(c.err, "stopped from outside") == NULL)
        result("FAIL", "outside-stop", "exit %lu, want 1 and \"stopped from outside\": %s",
               c.exit_code, c.err ? c.err : "");
    else
        result("PASS", "outside-stop", "exit 1, said so");
    theirs_alive = session_running(KERNEL_LOGGER_NAMEW);
    if (theirs_alive)
        result("PASS", "outside-stop/left-alone", "the new session was not stopped");
    else
        result("FAIL", "outside-stop/left-alone",
               "diskmon stopped the session another program started after it");
    child_free(&c);
    stop_session(KERNEL_LOGGER_NAMEW);
    check_no_leftover("outside-stop/no-leftover", 1);
}

/* Helper mode: attach to pid's console and close its window, as a user
 * clicking X would. Exit 0 posted, 2 no classic console window, 1 failed. */
static int close_console_of(DWORD pid)
{
    wchar_t cls[64] = L"";
    HWND w;

    FreeConsole();
    if (!AttachConsole(pid))
        return 1;
    w = GetConsoleWindow();
    FreeConsole();
    if (w == NULL || GetClassNameW(w, cls, 64) == 0 || wcscmp(cls, L"ConsoleWindowClass") != 0)
        return 2;
    return PostMessageW(w, WM_CLOSE, 0, 0) ? 0 : 1;
}

static void check_console_close(int kernel_before)
{
    struct child c;
    STARTUPINFOW si;
    PROCESS_INFORMATION pi;
    wchar_t cmd[2 * MAX_PATH];
    DWORD helper_rc = 1;
    const WCHAR *session;

    if (child_start(&c, L"close", L"-f json", CREATE_NEW_CONSOLE) != 0) {
        result("FAIL", "console-close", "cannot start diskmon");
        return;
    }
    session = wait_session(&c, kernel_before);
    if (session == NULL) {
        child_finish(&c, 1000);
        child_free(&c);
        result("FAIL", "console-close", "diskmon started no session");
        return;
    }
    swprintf(cmd, sizeof cmd / sizeof cmd[0], L"\"%ls\" --close-console-of %lu", self_path,
             (unsigned long)c.pi.dwProcessId);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    if (CreateProcessW(NULL, cmd, NULL, NULL, FALSE, DETACHED_PROCESS, NULL, NULL, &si, &pi)) {
        WaitForSingleObject(pi.hProcess, 10000);
        GetExitCodeProcess(pi.hProcess, &helper_rc);
        CloseHandle(pi.hProcess);
        CloseHandle(pi.hThread);
    }
    if (helper_rc == 2) {
        TerminateProcess(c.pi.hProcess, 99);
        child_finish(&c, 5000);
        child_free(&c);
        result("SKIP", "console-close", "diskmon's console is not a classic conhost window "
                                        "(e.g. Windows Terminal): close it by hand and run "
                                        "logman query -ets");
        check_no_leftover("console-close/no-leftover", !kernel_before);
        return;
    }
    /* Windows kills the process about 5 s after CTRL_CLOSE_EVENT. */
    if (helper_rc != 0)
        result("FAIL", "console-close", "could not close diskmon's console window");
    else if (child_finish(&c, 10000) != 0)
        result("FAIL", "console-close", "diskmon still ran 10 s after its console closed");
    else
        result("PASS", "console-close", "diskmon ended (exit %lu)", c.exit_code);
    if (helper_rc != 0) {
        TerminateProcess(c.pi.hProcess, 99);
        child_finish(&c, 5000);
    }
    child_free(&c);
    check_no_leftover("console-close/no-leftover", !kernel_before);
}

/* diskmon --self-test as a user runs it: exit 0, no FAIL line. */
static void check_self_test(int kernel_before)
{
    struct child c;
    const char *bad;

    if (child_start(&c, L"selftest", L"--self-test", 0) != 0) {
        result("FAIL", "self-test", "cannot start diskmon");
        return;
    }
    if (child_finish(&c, 60000) != 0)
        result("FAIL", "self-test", "no exit within 60 s");
    else if ((bad = c.out != NULL ? strstr(c.out, "FAIL ") : NULL) != NULL ||
             c.exit_code != 0)
        result("FAIL", "self-test", "exit %lu: %.300s", c.exit_code,
               bad != NULL ? bad : c.out != NULL ? c.out : "(no output)");
    else {
        /* The summary, the line that holds " --self-test: ". */
        const char *sum = strstr(c.out, " --self-test: ");

        while (sum != NULL && sum > c.out && sum[-1] != '\n')
            sum--;
        result("PASS", "self-test", "%.200s", sum != NULL ? sum : c.out);
    }
    child_free(&c);
    check_no_leftover("self-test/no-leftover", !kernel_before);
}

int main(void)
{
    wchar_t tmp[MAX_PATH];
    int kernel_before, argc = 0;
    /* The wide command line, so any path works (main's argv is ANSI). */
    wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);

    if (argv == NULL)
        return 2;
    if (argc == 3 && wcscmp(argv[1], L"--close-console-of") == 0)
        return close_console_of((DWORD)wcstoul(argv[2], NULL, 10));
    if (argc != 2) {
        fprintf(stderr, "usage: live_exact PATH\\TO\\diskmon.exe\n");
        return 2;
    }
    if (under_wine()) {
        printf("SKIP live_exact: this is Wine, whose ETW functions are stubs; "
               "the live check needs a real Windows (docs/windows-checklist.md)\n");
        return SKIP_EXIT;
    }
    if (!is_elevated()) {
        printf("SKIP live_exact: not elevated; run ctest from an elevated prompt "
               "(Run as administrator): kernel tracing needs it\n");
        return SKIP_EXIT;
    }
    if (GetFullPathNameW(argv[1], MAX_PATH, diskmon_path, NULL) == 0 ||
        GetFileAttributesW(diskmon_path) == INVALID_FILE_ATTRIBUTES) {
        fprintf(stderr, "live_exact: %ls not found\n", argv[1]);
        return 2;
    }
    GetModuleFileNameW(NULL, self_path, MAX_PATH);
    if (GetTempPathW(MAX_PATH, tmp) == 0)
        return 2;
    swprintf(work_dir, MAX_PATH, L"%lsdm_live_exact_%lu", tmp,
             (unsigned long)GetCurrentProcessId());
    if (!CreateDirectoryW(work_dir, NULL)) {
        fprintf(stderr, "live_exact: cannot create %ls\n", work_dir);
        return 2;
    }
    {
        /* TEMP may be an 8.3 path (hosted runners): work in the long form
         * diskmon will print. */
        wchar_t long_dir[MAX_PATH];

        if (GetLongPathNameW(work_dir, long_dir, MAX_PATH) != 0)
            wcscpy(work_dir, long_dir);
    }
    /* GenerateConsoleCtrlEvent needs a console shared with the child. */
    if (GetConsoleWindow() == NULL && !AttachConsole(ATTACH_PARENT_PROCESS))
        AllocConsole();
    SetConsoleCtrlHandler(NULL, TRUE); /* a stray break must not end us */

    kernel_before = session_running(KERNEL_LOGGER_NAMEW);
    if (kernel_before)
        printf("note: an NT Kernel Logger is running already (another tool); diskmon "
               "uses its private session, and the checks that need the NT Kernel "
               "Logger are skipped\n");
    check_self_test(kernel_before);
    check_exact(kernel_before);
    check_closed_pipe(kernel_before);
    check_force(kernel_before);
    check_cleanup();
    check_outside_stop(kernel_before);
    check_console_close(kernel_before);

    RemoveDirectoryW(work_dir);
    printf("live_exact: %d passed, %d failed\n", passes, failures);
    return failures > 0 ? 1 : 0;
}
