/*
 * etw_fake.c - a FAKE ETW API (see etw_fake.h): a model of the few ETW
 * behaviours diskmon relies on, for tests. It is not Windows and checks
 * only our logic against documented ETW answers (etw-facts.md s.1).
 *
 * The replay turns each record of a sample .etl (read with the project's
 * .etl reader) into the EVENT_RECORD a real-time consumer would get: the
 * MOF class GUID for the record's HookId group, opcode and version in the
 * event descriptor, the 32/64-bit header flag, the raw timestamp rebased so
 * the trace starts when OpenTrace was called, and UserData pointing at the
 * payload bytes.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "diskmon.h"
#include "etl/etl.h"
#include "etw_fake.h"
#include "platform/platform.h"

#define FAKE_MAX_CALLS 256
#define FAKE_HANDLE_BASE 0x1000u
#define FAKE_CONSUMER 0x5000u
#define FAKE_WAIT_CAP_MS 30000u /* a blocked ProcessTrace gives up after this */

/* Win32 codes the model returns (winerror.h). */
#define W_INVALID_HANDLE 6u
#define W_BAD_LENGTH 24u
#define W_INVALID_PARAMETER 87u
#define W_CANCELLED 1223u
#define W_TIMEOUT 1460u
#define W_NOT_FOUND 4201u
#define W_CLOSE_PENDING 7007u

/* MOF class GUIDs by HookId group (etw-facts.md s.2 and s.4). */
static const GUID diskio_guid = {
    0x3d6fa8d4, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID process_guid = {
    0x3d6fa8d0, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID thread_guid = {
    0x3d6fa8d1, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const GUID fileio_guid = {
    0x90cbdc39, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};
static const GUID eventtrace_guid = {
    0x68fdd900, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};
static const GUID rt_lost_guid = {
    0x6a399ae0, 0x4bc6, 0x4de9, {0x87, 0x0b, 0x36, 0x57, 0xf8, 0x94, 0x7e, 0x7e}};
/* Groups the decoder does not know get a made-up GUID with the group in
 * its last byte, so they reach the callback as "other" classes. */
static const GUID other_guid_base = {
    0xfa4e0000, 0x0000, 0x0000, {0, 0, 0, 0, 0, 0, 0, 0}};
static const GUID system_trace_guid = {
    0x9e814aad, 0x3204, 0x11d2, {0x9a, 0x82, 0x00, 0x60, 0x08, 0xa8, 0x69, 0x39}};

struct fake_record {
    EVENT_RECORD er;
    uint64_t trace_ts;  /* timestamp in the trace */
};

static struct {
    CRITICAL_SECTION lock;
    int lock_ready;
    struct dm_fake_config cfg;
    struct dm_fake_call calls[FAKE_MAX_CALLS];
    size_t n_calls;
    int kernel_running, private_running;
    unsigned next_handle;
    /* the consumer */
    PEVENT_TRACE_LOGFILEW logfile;
    int consumer_open;
    int consumer_is_private;
    volatile LONG in_process;
    HANDLE wake;            /* manual reset: session stopped or consumer closed */
    HANDLE replayed;        /* manual reset: every record delivered */
    volatile uint64_t delivered;
    uint64_t replay_ns;
    /* the sample */
    struct fake_record *recs;
    size_t n_recs;
    uint8_t *arena;
    uint64_t header_ts, trace_freq;
} fk;

static void lock(void)
{
    EnterCriticalSection(&fk.lock);
}

static void unlock(void)
{
    LeaveCriticalSection(&fk.lock);
}

static void narrow(const WCHAR *w, char *out, size_t len)
{
    size_t i = 0;

    for (; w != NULL && w[i] != 0 && i + 1 < len; i++)
        out[i] = w[i] < 0x80 ? (char)w[i] : '?';
    out[i] = '\0';
}

static struct dm_fake_call *log_call(enum dm_fake_call_kind kind, const WCHAR *name)
{
    struct dm_fake_call *c;

    if (fk.n_calls >= FAKE_MAX_CALLS)
        return &fk.calls[FAKE_MAX_CALLS - 1]; /* overwrite the last: keeps going */
    c = &fk.calls[fk.n_calls++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    narrow(name, c->name, sizeof c->name);
    c->when_ns = dm_monotonic_ns();
    return c;
}

static int is_kernel(const char *name)
{
    return strcmp(name, "NT Kernel Logger") == 0;
}

static int *running_flag(const char *name)
{
    if (is_kernel(name))
        return &fk.kernel_running;
    if (strcmp(name, "diskmon") == 0)
        return &fk.private_running;
    return NULL;
}

static ULONG WINAPI fake_start(PTRACEHANDLE h, LPCWSTR name, PEVENT_TRACE_PROPERTIES p)
{
    struct dm_fake_call *c;
    int *running;
    ULONG rc = 0;

    lock();
    c = log_call(DM_FAKE_START, name);
    c->log_file_mode = p->LogFileMode;
    c->enable_flags = p->EnableFlags;
    c->client_context = p->Wnode.ClientContext;
    c->guid = p->Wnode.Guid;
    running = running_flag(c->name);
    if (fk.cfg.start_error != 0)
        rc = fk.cfg.start_error;
    else if (p->Wnode.BufferSize < sizeof *p + (wcslen(name) + 1) * sizeof(WCHAR) ||
             p->LoggerNameOffset < sizeof *p)
        rc = W_BAD_LENGTH; /* [MS-start]: name room required */
    else if (is_kernel(c->name) &&
             memcmp(&p->Wnode.Guid, &system_trace_guid, sizeof(GUID)) != 0)
        rc = W_INVALID_PARAMETER;
    else if (!is_kernel(c->name) &&
             (memcmp(&p->Wnode.Guid, &system_trace_guid, sizeof(GUID)) == 0 ||
              !(p->LogFileMode & EVENT_TRACE_SYSTEM_LOGGER_MODE)))
        rc = W_INVALID_PARAMETER; /* kernel events need a system logger */
    else if (running != NULL && *running)
        rc = ERROR_ALREADY_EXISTS;
    else {
        if (running != NULL)
            *running = 1;
        *h = FAKE_HANDLE_BASE + fk.next_handle++;
    }
    if (rc != 0)
        *h = 0;
    c->rc = rc;
    unlock();
    return rc;
}

static ULONG WINAPI fake_control(TRACEHANDLE h, LPCWSTR name,
                                 PEVENT_TRACE_PROPERTIES p, ULONG code)
{
    struct dm_fake_call *c;
    int *running;
    ULONG rc;

    (void)h;
    lock();
    c = log_call(DM_FAKE_CONTROL, name);
    c->code = code;
    c->guid = p->Wnode.Guid;
    running = running_flag(c->name);
    if (code == EVENT_TRACE_CONTROL_STOP && fk.cfg.stop_error != 0) {
        rc = fk.cfg.stop_error;
    } else if (running == NULL || !*running) {
        rc = W_NOT_FOUND;
    } else {
        p->EventsLost = fk.cfg.events_lost;
        p->RealTimeBuffersLost = fk.cfg.rt_buffers_lost;
        rc = 0;
        if (code == EVENT_TRACE_CONTROL_STOP) {
            *running = 0;
            if (fk.consumer_open &&
                fk.consumer_is_private == (running == &fk.private_running))
                SetEvent(fk.wake);
        }
    }
    c->rc = rc;
    unlock();
    return rc;
}

/* Trace ticks -> ticks of this machine's QPC, counted from base. */
static void rebase_records(uint64_t base)
{
    LARGE_INTEGER qpf;

    QueryPerformanceFrequency(&qpf);
    for (size_t i = 0; i < fk.n_recs; i++) {
        uint64_t d = fk.recs[i].trace_ts >= fk.header_ts
                         ? fk.recs[i].trace_ts - fk.header_ts
                         : 0;

        if (fk.trace_freq != 0 && (uint64_t)qpf.QuadPart != fk.trace_freq)
            d = d / fk.trace_freq * (uint64_t)qpf.QuadPart +
                d % fk.trace_freq * (uint64_t)qpf.QuadPart / fk.trace_freq;
        fk.recs[i].er.EventHeader.TimeStamp.QuadPart = (LONGLONG)(base + d);
    }
}

static TRACEHANDLE WINAPI fake_open(PEVENT_TRACE_LOGFILEW lf)
{
    struct dm_fake_call *c;
    LARGE_INTEGER now, qpf;

    lock();
    c = log_call(DM_FAKE_OPEN, lf->LoggerName);
    c->log_file_mode = lf->ProcessTraceMode;
    if (fk.cfg.open_error != 0) {
        c->rc = fk.cfg.open_error;
        unlock();
        SetLastError(fk.cfg.open_error);
        return (TRACEHANDLE)INVALID_PROCESSTRACE_HANDLE;
    }
    fk.logfile = lf;
    fk.consumer_open = 1;
    fk.consumer_is_private = !is_kernel(c->name);
    ResetEvent(fk.wake);
    QueryPerformanceFrequency(&qpf);
    QueryPerformanceCounter(&now);
    lf->LogfileHeader.PointerSize = 8;
    lf->LogfileHeader.PerfFreq = qpf;
    rebase_records((uint64_t)now.QuadPart);
    for (size_t i = 0; i < fk.n_recs; i++)
        fk.recs[i].er.UserContext = lf->Context;
    unlock();
    return FAKE_CONSUMER;
}

static int consumer_alive(void)
{
    return WaitForSingleObject(fk.wake, 0) != WAIT_OBJECT_0;
}

static ULONG WINAPI fake_process(PTRACEHANDLE handles, ULONG count,
                                 LPFILETIME start, LPFILETIME end)
{
    struct dm_fake_call *c;
    PEVENT_TRACE_LOGFILEW lf;
    size_t per_buffer = fk.cfg.buffer_records != 0 ? fk.cfg.buffer_records : 64;
    uint64_t t0;
    ULONG rc = 0;
    int *running;

    (void)start;
    (void)end;
    lock();
    c = log_call(DM_FAKE_PROCESS, fk.logfile != NULL ? fk.logfile->LoggerName : NULL);
    lf = fk.logfile;
    running = running_flag(c->name);
    if (count != 1 || handles == NULL || handles[0] != FAKE_CONSUMER ||
        !fk.consumer_open || lf == NULL)
        rc = W_INVALID_HANDLE;
    else if (fk.cfg.process_error != 0)
        rc = fk.cfg.process_error;
    else if (running == NULL || !*running)
        rc = W_NOT_FOUND;
    c->rc = rc;
    if (rc != 0) {
        unlock();
        return rc;
    }
    InterlockedExchange(&fk.in_process, 1);
    unlock();

    /* Deliver outside the lock, as ETW does: the callback may call
     * ControlTrace or CloseTrace from another thread meanwhile. */
    t0 = dm_monotonic_ns();
    for (size_t i = 0; i < fk.n_recs; i++) {
        if ((i % per_buffer) == 0 && i > 0) {
            if (lf->BufferCallback != NULL && !lf->BufferCallback(lf)) {
                rc = W_CANCELLED;
                break;
            }
            if (!consumer_alive())
                break;
        }
        lf->EventRecordCallback(&fk.recs[i].er);
        dm_atomic_store_release(&fk.delivered, i + 1);
    }
    fk.replay_ns = dm_monotonic_ns() - t0;
    SetEvent(fk.replayed);
    if (rc == 0 && lf->BufferCallback != NULL && !lf->BufferCallback(lf))
        rc = W_CANCELLED;
    if (rc == 0) {
        if (fk.cfg.end_after_replay) {
            lock();
            if (running != NULL)
                *running = 0; /* stopped by "another tool" */
            unlock();
        } else if (WaitForSingleObject(fk.wake, FAKE_WAIT_CAP_MS) != WAIT_OBJECT_0) {
            rc = W_TIMEOUT; /* nobody stopped the session: a bug to report */
        }
    }
    InterlockedExchange(&fk.in_process, 0);
    return rc;
}

static ULONG WINAPI fake_close(TRACEHANDLE h)
{
    struct dm_fake_call *c;
    ULONG rc;

    lock();
    c = log_call(DM_FAKE_CLOSE, fk.logfile != NULL ? fk.logfile->LoggerName : NULL);
    if (h != FAKE_CONSUMER || !fk.consumer_open) {
        rc = W_INVALID_HANDLE;
    } else {
        fk.consumer_open = 0;
        SetEvent(fk.wake);
        rc = InterlockedCompareExchange(&fk.in_process, 0, 0) ? W_CLOSE_PENDING : 0;
    }
    c->rc = rc;
    unlock();
    return rc;
}

static const struct dm_etw_api fake_api = {
    fake_start, fake_control, fake_open, fake_process, fake_close,
};

static const GUID *group_guid(unsigned group, GUID *other)
{
    switch (group) {
    case 0:
        return &eventtrace_guid;
    case 1:
        return &diskio_guid;
    case 3:
        return &process_guid;
    case 4:
        return &fileio_guid;
    case 5:
        return &thread_guid;
    default:
        *other = other_guid_base;
        other->Data4[7] = (unsigned char)group;
        return other;
    }
}

/* Append one record; payload bytes go to the arena as an offset for now. */
static int add_record(size_t *cap, size_t *arena_len, size_t *arena_cap,
                      const GUID *guid, unsigned opcode, unsigned version,
                      unsigned pointer_size, uint32_t tid, uint32_t pid,
                      uint64_t ts, const uint8_t *payload, size_t len)
{
    struct fake_record *r;

    if (fk.n_recs == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4096;
        struct fake_record *n = realloc(fk.recs, ncap * sizeof *n);

        if (n == NULL)
            return DM_ENOMEM;
        fk.recs = n;
        *cap = ncap;
    }
    if (*arena_len + len > *arena_cap) {
        size_t ncap = *arena_cap ? *arena_cap * 2 : 1u << 20;
        uint8_t *n;

        while (ncap < *arena_len + len)
            ncap *= 2;
        n = realloc(fk.arena, ncap);
        if (n == NULL)
            return DM_ENOMEM;
        fk.arena = n;
        *arena_cap = ncap;
    }
    if (len > 0)
        memcpy(fk.arena + *arena_len, payload, len);
    r = &fk.recs[fk.n_recs++];
    memset(r, 0, sizeof *r);
    r->er.EventHeader.Size = (USHORT)sizeof(EVENT_HEADER);
    r->er.EventHeader.ProviderId = *guid;
    r->er.EventHeader.EventDescriptor.Opcode = (UCHAR)opcode;
    r->er.EventHeader.EventDescriptor.Version = (UCHAR)version;
    r->er.EventHeader.Flags = (USHORT)(EVENT_HEADER_FLAG_CLASSIC_HEADER |
                                       (pointer_size == 4 ? EVENT_HEADER_FLAG_32_BIT_HEADER
                                                          : EVENT_HEADER_FLAG_64_BIT_HEADER));
    r->er.EventHeader.ThreadId = tid;
    r->er.EventHeader.ProcessId = pid;
    r->er.UserDataLength = (USHORT)len;
    r->er.UserData = (PVOID)(uintptr_t)*arena_len; /* fixed up after loading */
    r->trace_ts = ts;
    *arena_len += len;
    return 0;
}

static int load_sample(const char *path, char *err, size_t errlen)
{
    struct dm_etl *etl;
    struct dm_etl_record rec;
    size_t cap = 0, arena_len = 0, arena_cap = 0;
    int rc;

    for (int op = 0; op < 3; op++)
        for (unsigned i = 0; i < fk.cfg.rt_lost[op]; i++) {
            rc = add_record(&cap, &arena_len, &arena_cap, &rt_lost_guid,
                            32u + (unsigned)op, 2, 8, UINT32_MAX, UINT32_MAX, 0,
                            NULL, 0);
            if (rc < 0)
                return rc;
        }
    if (path != NULL) {
        rc = dm_etl_open(&etl, path, err, errlen);
        if (rc < 0)
            return rc;
        fk.header_ts = dm_etl_info(etl)->header_timestamp;
        fk.trace_freq = dm_etl_info(etl)->perf_freq;
        while ((rc = dm_etl_next(etl, &rec, err, errlen)) == 1) {
            GUID g, other;

            /* The trace header record exists in files only, never in a
             * real-time session (etw-facts.md s.2). */
            if (!rec.has_guid && rec.group == 0 && rec.opcode == 0)
                continue;
            if (rec.payload_len > USHRT_MAX)
                continue;
            if (rec.has_guid)
                memcpy(&g, rec.guid, sizeof g);
            else
                g = *group_guid(rec.group, &other);
            rc = add_record(&cap, &arena_len, &arena_cap, &g, rec.opcode,
                            rec.version, rec.pointer_size, rec.tid, rec.pid,
                            rec.timestamp, rec.payload, rec.payload_len);
            if (rc < 0)
                break;
        }
        dm_etl_close(etl);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < fk.n_recs; i++)
            if (fk.recs[i].trace_ts == 0)
                fk.recs[i].trace_ts = fk.header_ts; /* injected: at the start */
    }
    for (size_t i = 0; i < fk.n_recs; i++) {
        struct fake_record *r = &fk.recs[i];

        r->er.UserData = r->er.UserDataLength > 0
                             ? fk.arena + (uintptr_t)r->er.UserData
                             : NULL;
    }
    return 0;
}

int dm_fake_install(const struct dm_fake_config *cfg, char *err, size_t errlen)
{
    int rc;

    dm_fake_uninstall();
    if (!fk.lock_ready) {
        InitializeCriticalSection(&fk.lock);
        fk.lock_ready = 1;
    }
    fk.cfg = *cfg;
    fk.kernel_running = cfg->kernel_running;
    fk.private_running = cfg->private_running;
    fk.wake = CreateEventW(NULL, TRUE, FALSE, NULL);
    fk.replayed = CreateEventW(NULL, TRUE, FALSE, NULL);
    if (fk.wake == NULL || fk.replayed == NULL)
        return DM_EOS;
    rc = load_sample(cfg->etl_path, err, errlen);
    if (rc < 0) {
        dm_fake_uninstall();
        return rc;
    }
    dm_etw = &fake_api;
    return 0;
}

void dm_fake_uninstall(void)
{
    dm_etw = &dm_etw_real;
    if (fk.wake != NULL)
        CloseHandle(fk.wake);
    if (fk.replayed != NULL)
        CloseHandle(fk.replayed);
    free(fk.recs);
    free(fk.arena);
    fk.wake = fk.replayed = NULL;
    fk.recs = NULL;
    fk.arena = NULL;
    fk.n_recs = 0;
    fk.n_calls = 0;
    fk.next_handle = 0;
    fk.logfile = NULL;
    fk.consumer_open = 0;
    fk.delivered = 0;
    fk.replay_ns = 0;
    fk.header_ts = fk.trace_freq = 0;
    memset(&fk.cfg, 0, sizeof fk.cfg);
}

size_t dm_fake_calls(struct dm_fake_call *out, size_t max)
{
    size_t n;

    lock();
    n = fk.n_calls;
    if (out != NULL)
        memcpy(out, fk.calls, (n < max ? n : max) * sizeof *out);
    unlock();
    return n;
}

static int matches(const struct dm_fake_call *c, enum dm_fake_call_kind kind,
                   const char *name, ULONG code)
{
    return c->kind == kind && (name == NULL || strcmp(c->name, name) == 0) &&
           (kind != DM_FAKE_CONTROL || code == ULONG_MAX || c->code == code);
}

int dm_fake_count(enum dm_fake_call_kind kind, const char *name, ULONG code)
{
    int n = 0;

    lock();
    for (size_t i = 0; i < fk.n_calls; i++)
        n += matches(&fk.calls[i], kind, name, code);
    unlock();
    return n;
}

uint64_t dm_fake_first_ns(enum dm_fake_call_kind kind, const char *name, ULONG code)
{
    uint64_t t = 0;

    lock();
    for (size_t i = 0; i < fk.n_calls && t == 0; i++)
        if (matches(&fk.calls[i], kind, name, code))
            t = fk.calls[i].when_ns;
    unlock();
    return t;
}

int dm_fake_wait_replayed(unsigned ms)
{
    return fk.replayed != NULL && WaitForSingleObject(fk.replayed, ms) == WAIT_OBJECT_0
               ? 0
               : -1;
}

uint64_t dm_fake_delivered(void)
{
    return dm_atomic_load_acquire(&fk.delivered);
}

uint64_t dm_fake_replay_ns(void)
{
    return fk.replay_ns;
}

size_t dm_fake_records(void)
{
    return fk.n_recs;
}

int dm_fake_kernel_running(void)
{
    int r;

    lock();
    r = fk.kernel_running;
    unlock();
    return r;
}

int dm_fake_private_running(void)
{
    int r;

    lock();
    r = fk.private_running;
    unlock();
    return r;
}

int dm_fake_in_process(void)
{
    return InterlockedCompareExchange(&fk.in_process, 0, 0) != 0;
}
