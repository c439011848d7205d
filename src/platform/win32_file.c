/*
 * win32_file.c - the file calls of the platform layer on Windows
 * (platform.h "Files"): file identity, kinds, sizes, reads at an offset,
 * and the one safe way to replace an output file. Split from win32.c, which
 * keeps threads, clocks, the console and the error translator.
 */
#include <windows.h>
#include <ntsecapi.h> /* RtlGenRandom (SystemFunction036, advapi32) */
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "diskmon.h"
#include "platform/platform.h"

/* ---- file identity and reads at an offset --------------------------------- */

/* The volume serial number and the 64-bit file index together name one file
 * on one volume (GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION). */
static int id_from_handle(HANDLE h, struct dm_file_id *id)
{
    BY_HANDLE_FILE_INFORMATION info;

    if (h == INVALID_HANDLE_VALUE || GetFileType(h) != FILE_TYPE_DISK ||
        !GetFileInformationByHandle(h, &info))
        return 0;
    id->volume = info.dwVolumeSerialNumber;
    id->index = ((uint64_t)info.nFileIndexHigh << 32) | info.nFileIndexLow;
    return 1;
}

int dm_file_id_of_path(const char *path, struct dm_file_id *id)
{
    HANDLE h;
    int ok;

    if (path == NULL)
        return 0;
    /* No access right is needed to read the file's information; share
     * everything so a file another program holds open can still be asked.
     * BACKUP_SEMANTICS lets a directory open too. The A call takes the same
     * spelling of the path as fopen() does. */
    h = CreateFileA(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                    NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return 0;
    ok = id_from_handle(h, id);
    CloseHandle(h);
    return ok;
}

int dm_file_id_of_stream(FILE *f, struct dm_file_id *id)
{
    return id_from_handle((HANDLE)_get_osfhandle(_fileno(f)), id);
}

/* path in the ANSI code page, as the A calls and fopen() read it, as UTF-16
 * for the W call; NULL when it does not convert or memory runs out. */
static wchar_t *wide_path(const char *path)
{
    int n = MultiByteToWideChar(CP_ACP, 0, path, -1, NULL, 0);
    wchar_t *w;

    if (n <= 0 || (w = malloc((size_t)n * sizeof *w)) == NULL)
        return NULL;
    if (MultiByteToWideChar(CP_ACP, 0, path, -1, w, n) != n) {
        free(w);
        return NULL;
    }
    return w;
}

/* ---- replacing an output file (platform.h) --------------------------------- */

/* The reserved device names, which name a device in every folder and with
 * any extension ("NUL.txt" is NUL): Microsoft Learn, "Naming Files, Paths,
 * and Namespaces". COM and LPT take a digit (0 to 9). */
static int is_device_name(const char *path)
{
    static const char *const plain[] = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"};
    const char *base = path, *end;
    size_t n;

    /* \\.\ is the Win32 device namespace (\\.\PhysicalDrive0, \\.\pipe\x). */
    if ((path[0] == '\\' || path[0] == '/') && (path[1] == '\\' || path[1] == '/') &&
        path[2] == '.' && (path[3] == '\\' || path[3] == '/'))
        return 1;
    for (const char *p = path; *p != '\0'; p++)
        if (*p == '\\' || *p == '/' || *p == ':')
            base = p + 1;
    for (end = base; *end != '\0' && *end != '.' && *end != ':'; end++)
        ;
    while (end > base && end[-1] == ' ') /* "NUL .txt" is NUL too */
        end--;
    n = (size_t)(end - base);
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (strlen(plain[i]) == n && _strnicmp(base, plain[i], n) == 0)
            return 1;
    return n == 4 && (_strnicmp(base, "COM", 3) == 0 || _strnicmp(base, "LPT", 3) == 0) &&
           base[3] >= '0' && base[3] <= '9';
}

const char *dm_file_not_replaceable(const char *path)
{
    size_t n = strlen(path);
    const char *what = NULL;
    wchar_t *w;
    DWORD attrs;
    HANDLE h;

    if (is_device_name(path))
        return "a device name (NUL, CON, COM1, \\\\.\\...)";
    if (n > 0 && (path[n - 1] == '\\' || path[n - 1] == '/'))
        return "a directory name (it ends in a separator)";
    w = wide_path(path);
    if (w == NULL)
        return NULL; /* the write says why */
    attrs = GetFileAttributesW(w);
    if (attrs == INVALID_FILE_ATTRIBUTES)
        what = NULL; /* missing: created by the write */
    else if (attrs & FILE_ATTRIBUTE_REPARSE_POINT)
        what = "a reparse point (a symbolic link, junction or mount point)";
    else if (attrs & FILE_ATTRIBUTE_DIRECTORY)
        what = "a directory";
    else if (attrs & FILE_ATTRIBUTE_DEVICE)
        what = "a device";
    if (attrs != INVALID_FILE_ATTRIBUTES && what == NULL) {
        /* The name itself (OPEN_REPARSE_POINT), no access asked: a pipe or a
         * device answers GetFileType with something else than a disk file. */
        h = CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                        OPEN_EXISTING,
                        FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
        if (h != INVALID_HANDLE_VALUE) {
            if (GetFileType(h) != FILE_TYPE_DISK)
                what = "a device or pipe";
            CloseHandle(h);
        }
    }
    free(w);
    return what;
}

static int id_of_wide(const wchar_t *w, struct dm_file_id *id)
{
    HANDLE h = CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
    int ok;

    if (h == INVALID_HANDLE_VALUE)
        return 0;
    ok = id_from_handle(h, id);
    CloseHandle(h);
    return ok;
}

/* A name not created yet: its folder's identity and its last name, from
 * the full path (GetFullPathNameW drops "." and "..", and the trailing dots
 * and spaces Windows ignores). Returns the full path, or NULL. */
#define FULL_PATH_MAX 32768 /* the longest path a W call takes */

static wchar_t *new_name_id(const char *path, struct dm_file_id *dir, wchar_t **base)
{
    wchar_t *w = wide_path(path), *full = malloc(FULL_PATH_MAX * sizeof *full), *slash;
    DWORD n = 0;
    int ok = 0;

    if (w != NULL && full != NULL)
        n = GetFullPathNameW(w, FULL_PATH_MAX, full, NULL);
    if (n > 0 && n < FULL_PATH_MAX && (slash = wcsrchr(full, L'\\')) != NULL) {
        wchar_t keep = slash[1];

        *base = slash + 1;
        slash[1] = L'\0'; /* "C:\" stays a root */
        ok = id_of_wide(full, dir);
        slash[1] = keep;
    }
    free(w);
    if (!ok) {
        free(full);
        return NULL;
    }
    return full;
}

int dm_file_same(const char *a, const char *b)
{
    struct dm_file_id ia, ib;
    wchar_t *fa, *fb, *base_a = NULL, *base_b = NULL;
    int has_a = dm_file_id_of_path(a, &ia), has_b = dm_file_id_of_path(b, &ib), same;

    if (has_a || has_b)
        return has_a && has_b && ia.volume == ib.volume && ia.index == ib.index;
    fa = new_name_id(a, &ia, &base_a);
    fb = new_name_id(b, &ib, &base_b);
    /* NTFS compares names without case (its upcase table): so does
     * CompareStringOrdinal with bIgnoreCase. */
    same = fa != NULL && fb != NULL && ia.volume == ib.volume && ia.index == ib.index &&
           CompareStringOrdinal(base_a, -1, base_b, -1, TRUE) == CSTR_EQUAL;
    free(fa);
    free(fb);
    return same;
}

/* The temporary file's name: PATH + "." + TMP_RANDOM characters + ".tmp";
 * TMP_TRIES names before giving up (each is one of 62^12). */
#define TMP_RANDOM 12
#define TMP_TRIES 8

static void random_name(char *out)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static volatile LONG counter;
    unsigned char r[TMP_RANDOM];

    if (!RtlGenRandom(r, sizeof r)) {
        /* A guessable name is still safe: CREATE_NEW never opens one that
         * exists. */
        LARGE_INTEGER t;
        uint64_t x;

        QueryPerformanceCounter(&t);
        x = (uint64_t)t.QuadPart ^ ((uint64_t)GetCurrentProcessId() << 32) ^
            (uint64_t)InterlockedIncrement(&counter);
        for (size_t i = 0; i < sizeof r; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u; /* Knuth's MMIX LCG */
            r[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < sizeof r; i++)
        out[i] = chars[r[i] % (sizeof chars - 1)];
    out[TMP_RANDOM] = '\0';
}

/* A reader that opened path without FILE_SHARE_DELETE (windows_exporter
 * reading it, an editor) makes the replace fail until it closes the file:
 * try a few times before giving up until the next interval. */
#define REPLACE_TRIES 5
#define REPLACE_WAIT_MS 20

static int replace_failed(DWORD e, const char *step, char *why, size_t why_len)
{
    char msg[200];

    dm_win32_strerror(e, msg, sizeof msg);
    snprintf(why, why_len, "%s failed: %s", step, msg);
    return dm_err_from_win32(e);
}

static int refused(const char *what, char *why, size_t why_len)
{
    snprintf(why, why_len, "it is %s: not replacing it", what);
    return DM_EUSAGE;
}

/* A new temporary file beside path (CREATE_NEW: never one that exists, a
 * link included); *wtmp gets its name. */
static HANDLE create_temp(const char *path, wchar_t **wtmp, DWORD *e)
{
    size_t cap = strlen(path) + 1 + TMP_RANDOM + sizeof ".tmp";
    char *tmp = malloc(cap), name[TMP_RANDOM + 1];
    HANDLE h = INVALID_HANDLE_VALUE;

    *wtmp = NULL;
    *e = ERROR_NOT_ENOUGH_MEMORY;
    for (int i = 0; tmp != NULL && i < TMP_TRIES; i++) {
        random_name(name);
        snprintf(tmp, cap, "%s.%s.tmp", path, name);
        free(*wtmp);
        *wtmp = wide_path(tmp);
        if (*wtmp == NULL)
            break;
        h = CreateFileW(*wtmp, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
        if (h != INVALID_HANDLE_VALUE) {
            *e = 0;
            break;
        }
        *e = GetLastError();
        if (*e != ERROR_FILE_EXISTS && *e != ERROR_ALREADY_EXISTS)
            break;
    }
    free(tmp);
    return h;
}

struct dm_replace {
    const char *path;
    wchar_t *wpath, *wtmp;       /* the target's and the temporary file's names */
    HANDLE h;
    DWORD e;                     /* the first failure (0: none) */
    const char *step;            /* and the step it failed in */
};

int dm_replace_open(struct dm_replace **out, const char *path, char *why, size_t why_len)
{
    const char *what = dm_file_not_replaceable(path);
    struct dm_replace *r;
    DWORD e = 0;
    int rc;

    *out = NULL;
    if (what != NULL)
        return refused(what, why, why_len);
    r = calloc(1, sizeof *r);
    if (r == NULL || (r->wpath = wide_path(path)) == NULL) {
        free(r);
        return replace_failed(ERROR_NOT_ENOUGH_MEMORY, "converting its name", why, why_len);
    }
    r->path = path;
    r->h = create_temp(path, &r->wtmp, &e);
    if (r->h == INVALID_HANDLE_VALUE) {
        rc = replace_failed(e, "creating a temporary file in its folder", why, why_len);
        free(r->wtmp);
        free(r->wpath);
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void dm_replace_write(struct dm_replace *r, const void *data, size_t len)
{
    const char *p = data;

    while (r->e == 0 && len > 0) {
        /* WriteFile takes a DWORD: a GiB at a time. */
        DWORD chunk = len > 0x40000000u ? 0x40000000u : (DWORD)len, done = 0;

        if (!WriteFile(r->h, p, chunk, &done, NULL) || done == 0) {
            r->e = GetLastError();
            if (r->e == 0)
                r->e = ERROR_WRITE_FAULT;
            r->step = "writing the temporary file";
            break;
        }
        p += done;
        len -= done;
    }
}

void dm_replace_abort(struct dm_replace *r)
{
    if (r == NULL)
        return;
    if (r->h != INVALID_HANDLE_VALUE)
        CloseHandle(r->h);
    DeleteFileW(r->wtmp);
    free(r->wtmp);
    free(r->wpath);
    free(r);
}

int dm_replace_commit(struct dm_replace *r, char *why, size_t why_len)
{
    const char *what;
    int rc;

    /* On disk before the rename, as fsync on POSIX. */
    if (r->e == 0 && !FlushFileBuffers(r->h)) {
        r->e = GetLastError();
        r->step = "flushing the temporary file";
    }
    if (!CloseHandle(r->h) && r->e == 0) {
        r->e = GetLastError();
        r->step = "closing the temporary file";
    }
    r->h = INVALID_HANDLE_VALUE;
    /* Looked at again: it may have become a link or a device since. */
    what = r->e == 0 ? dm_file_not_replaceable(r->path) : NULL;
    for (int i = 0; r->e == 0 && what == NULL; i++) {
        if (MoveFileExW(r->wtmp, r->wpath, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
            free(r->wtmp);
            free(r->wpath);
            free(r);
            return 0;
        }
        r->e = GetLastError();
        r->step = "renaming it over the file";
        if (i + 1 < REPLACE_TRIES &&
            (r->e == ERROR_ACCESS_DENIED || r->e == ERROR_SHARING_VIOLATION)) {
            Sleep(REPLACE_WAIT_MS);
            r->e = 0;
        }
    }
    rc = what != NULL ? refused(what, why, why_len) : replace_failed(r->e, r->step, why, why_len);
    dm_replace_abort(r);
    return rc;
}

enum dm_file_kind dm_file_kind(const char *path, uint64_t *size)
{
    WIN32_FILE_ATTRIBUTE_DATA data;

    if (!GetFileAttributesExA(path, GetFileExInfoStandard, &data))
        return DM_FILE_MISSING;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
        return DM_FILE_DIRECTORY;
    if (data.dwFileAttributes & FILE_ATTRIBUTE_DEVICE)
        return DM_FILE_OTHER;
    *size = ((uint64_t)data.nFileSizeHigh << 32) | data.nFileSizeLow;
    return DM_FILE_REGULAR;
}

int dm_file_size(FILE *f, uint64_t *size)
{
    __int64 end;

    if (_fseeki64(f, 0, SEEK_END) != 0 || (end = _ftelli64(f)) < 0)
        return -1;
    *size = (uint64_t)end;
    return 0;
}

int dm_file_read_at(FILE *f, uint64_t off, void *dst, size_t len)
{
    HANDLE h = (HANDLE)_get_osfhandle(_fileno(f));
    unsigned char *p = dst;

    if (h == INVALID_HANDLE_VALUE)
        return -1;
    while (len > 0) {
        /* ReadFile takes a DWORD count; 1 GB at a time stays well inside. */
        DWORD want = len > (1u << 30) ? (DWORD)(1u << 30) : (DWORD)len, got = 0;
        OVERLAPPED at;

        memset(&at, 0, sizeof at);
        at.Offset = (DWORD)(off & 0xFFFFFFFFu);
        at.OffsetHigh = (DWORD)(off >> 32);
        if (!ReadFile(h, p, want, &got, &at) || got == 0)
            return -1; /* an error, or the end of the file */
        p += got;
        off += got;
        len -= got;
    }
    return 0;
}
