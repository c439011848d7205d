/*
 * platform.h - the little the core needs from the operating system:
 * threads, clocks, sleeping, terminals and Ctrl+C, the one output writer.
 * One implementation per OS (posix.c and posix_fence.c; win32.c and
 * win32_console.c); CMake picks the files, so the core has no OS #if.
 * The atomics are inline, one implementation per compiler (atomics.h).
 */
#ifndef DM_PLATFORM_H
#define DM_PLATFORM_H

#include <stdint.h>
#include <stdio.h>

struct dm_options;

/* Atomics on 64-bit counters and indices, and on flags: inline, one
 * implementation per compiler. */
#include "platform/atomics.h"

typedef struct dm_thread dm_thread;
/* Start fn(arg) on a new thread. Returns 0 or DM_EOS. */
int dm_thread_start(dm_thread **t, void (*fn)(void *), void *arg);
void dm_thread_join(dm_thread *t);
/* Join with a time limit: 0 joined, DM_ESTOPPED timed out (thread left). */
int dm_thread_join_timeout(dm_thread *t, unsigned ms);

/*
 * A wake-up one thread sleeps on and others give: how the printer waits for
 * events and the main thread for the end of the run without waking on a
 * timer. dm_waiter_wake may be called from any thread (POSIX: also from a
 * signal handler); wakes do not queue, so several before a wait make it
 * return once. A waiter made with on_interrupt also returns from every
 * wait once Ctrl+C or a terminating signal came (dm_interrupt_install),
 * until dm_interrupt_clear. POSIX: a non-blocking pipe, waited on with
 * poll(2); Windows: an auto-reset event.
 */
typedef struct dm_waiter dm_waiter;
#define DM_WAIT_FOREVER 0xFFFFFFFFu
#define DM_WAIT_OUTPUT_GONE 2
/* NULL when out of memory or descriptors. */
dm_waiter *dm_waiter_create(int on_interrupt);
void dm_waiter_destroy(dm_waiter *w);
void dm_waiter_wake(dm_waiter *w);
/* Sleep until woken, interrupted (on_interrupt), ms milliseconds passed
 * (DM_WAIT_FOREVER: no limit), or, with watch not NULL, the reader of that
 * output went away (POSIX: POLLERR or POLLHUP on a pipe, socket or terminal
 * whose other end closed; files never report it; Windows: not watched, a
 * closed pipe shows up at the next write). Returns 1 woken, 0 timed out,
 * or DM_WAIT_OUTPUT_GONE. */
int dm_waiter_wait(dm_waiter *w, unsigned ms, FILE *watch);

/*
 * The heavy side of an asymmetric fence: on return, every other thread of
 * the process has passed a full memory barrier, as if each had run
 * dm_atomic_fence at some point of its own program between this call's
 * start and end (a thread not running is at such a point already). A thread
 * that pairs it with dm_compiler_fence, which costs nothing, gets the order
 * of a full fence on both sides (the pattern of membarrier(2)'s example,
 * and folly's asymmetric_thread_fence_heavy/_light). Linux: membarrier
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux 4.14; the first call registers);
 * Windows: FlushProcessWriteBuffers. Returns 0, or -1 when the system has
 * none (other POSIX systems, an older kernel, a seccomp filter): then the
 * light side must use dm_atomic_fence instead. Costs a system call and an
 * interrupt on each processor running a thread of the process: for rare
 * events (the ring's consumer going to sleep, ring.h), not per event.
 */
int dm_fence_all_threads(void);

/* size bytes aligned to align (a power of two and a multiple of
 * sizeof(void *)), for structures that ask for more than malloc promises
 * (the ring's cache-line-aligned indices: malloc gives 16 on glibc, 8 on
 * 32-bit Windows). NULL when out of memory. Free with dm_aligned_free.
 * POSIX: posix_memalign; Windows: _aligned_malloc. */
void *dm_aligned_alloc(size_t align, size_t size);
void dm_aligned_free(void *p);

uint64_t dm_monotonic_ns(void); /* steady clock */
uint64_t dm_wall_ns(void);      /* ns since 1970-01-01 UTC */
void dm_sleep_ms(unsigned ms);
void dm_yield(void);

int dm_is_terminal(FILE *f);

/* The window f shows (TIOCGWINSZ; GetConsoleScreenBufferInfo's visible
 * window): 0 with *rows and *cols set, or a negative dm_err when f is not a
 * terminal or the size is unknown. */
int dm_terminal_size(FILE *f, int *rows, int *cols);

/* 1 when f, a terminal, takes VT100 sequences (cursor home, clear line,
 * hide cursor): always on POSIX; on Windows once ENABLE_VIRTUAL_TERMINAL_
 * PROCESSING could be set (Windows 10 1511 and later). 0: draw plain. */
int dm_terminal_enable_vt(FILE *f);
/* Give the console back the mode dm_terminal_enable_vt found (Windows);
 * nothing elsewhere. */
void dm_terminal_restore(FILE *f);

/* Ctrl+C (SIGINT), SIGTERM, Ctrl+Break and console close, and on POSIX
 * every other signal whose default action ends the process and that can be
 * caught (SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
 * SIGXCPU, SIGXFSZ, SIGPOLL, SIGSTKFLT, SIGPWR, real-time signals): the
 * first one sets the flag that dm_interrupted() reports and wakes the
 * waiters made with on_interrupt, so diskmon stops in order and removes
 * what it set up in the kernel. A signal the caller ignored (SIG_IGN
 * inherited, as nohup does for SIGHUP) stays ignored. On Windows console
 * close the handler then waits up to a few seconds for dm_interrupt_done(),
 * so the session can be stopped before the process is killed. SIGPIPE is
 * ignored so a closed pipe shows up as a write error (or as a closed output
 * to dm_waiter_wait). */
void dm_interrupt_install(void);
int dm_interrupted(void);
void dm_interrupt_done(void);
/* For tests and for -t: behave as if Ctrl+C was pressed; clear resets the
 * flag between runs in one process (tests only). */
void dm_interrupt_raise(void);
void dm_interrupt_clear(void);

/*
 * Write all len bytes of buf to f's file in as few system calls as the OS
 * takes (POSIX: one write(), repeated only for a partial write or EINTR),
 * bypassing f's stdio buffer, which is flushed first so that the order of
 * f's bytes holds. This is the printer's large write: its lines are already
 * in one big buffer, and copying them through stdio would only add a copy
 * and many small writes. A stream without a file (a memory stream) gets a
 * plain fwrite. Returns 0, or -1 with errno set (EPIPE: the reader went
 * away). Windows: WriteFile on the OS handle, whose ERROR_NO_DATA and
 * ERROR_BROKEN_PIPE are EPIPE too; a console gets the text as UTF-16
 * through WriteConsoleW, cut between characters, so no code page matters.
 */
int dm_write_all(FILE *f, const void *buf, size_t len);

/* Prepare stdout/stderr: binary mode on Windows so lines end in "\n" as on
 * every other OS (byte-identical output). The console code page is not
 * changed (dm_write_all writes UTF-16 to a console). */
void dm_stdio_init(void);

/* The one error translator per OS. POSIX (posix.c): an errno value as a
 * dm_err code (0 stays 0). Windows (win32.c): a Win32 error code (GetLastError,
 * or what an ETW call returns) as a dm_err code (0 stays 0), and
 * FormatMessage's text for it, UTF-8, without the final period and line
 * break ("unknown error" when the system has none). */
int dm_err_from_errno(int e);
int dm_err_from_win32(unsigned long code);
void dm_win32_strerror(unsigned long code, char *buf, size_t len);

/*
 * Files. diskmon must never overwrite a file it reads (`-r t.etl -o t.etl`),
 * whatever the spelling (./t.etl, a hard link, a symlink): it compares file
 * identities, which are the device and inode on POSIX and the volume serial
 * number and file index on Windows (GetFileInformationByHandle).
 */
struct dm_file_id {
    uint64_t volume;
    uint64_t index;
};

/* 1 with *id filled when path names an existing file, 0 when it does not (or
 * its identity cannot be had: then it cannot be the same file either). */
int dm_file_id_of_path(const char *path, struct dm_file_id *id);
/* The same for an open stream (stdout redirected to a file); 0 for a
 * terminal, a pipe or anything else that is not a file. */
int dm_file_id_of_stream(FILE *f, struct dm_file_id *id);

enum dm_file_kind {
    DM_FILE_MISSING = 0,  /* or unreadable metadata: let open() say why */
    DM_FILE_REGULAR,
    DM_FILE_DIRECTORY,
    DM_FILE_OTHER         /* a pipe, a device, a socket */
};
/* What path is; *size is set for a regular file. */
enum dm_file_kind dm_file_kind(const char *path, uint64_t *size);

/* 64-bit positions in a file, whatever the size of long or off_t (MSVCRT's
 * fseek takes a 32-bit long even on 64-bit Windows; 32-bit POSIX builds
 * need a 64-bit off_t). The size of the file (the stream is left at its
 * end); 0 or -1. */
int dm_file_size(FILE *f, uint64_t *size);
/* Read len bytes at offset off of f's file straight into dst, past the
 * stream's buffer and position (pread; ReadFile at an OVERLAPPED offset):
 * one system call per read, with no copy through stdio, for the .etl
 * reader's 64 KB buffers. Do not mix with stdio reads of f. Returns 0, or
 * -1 when the file has fewer bytes there or the read fails. */
int dm_file_read_at(FILE *f, uint64_t off, void *dst, size_t len);

/*
 * Output files that diskmon replaces rather than writes into (--metrics).
 * diskmon runs as root or an administrator, so what it replaces is a
 * security boundary: only a regular file is ever replaced, never what a
 * symbolic link points to, a device, a pipe or a directory, and the
 * temporary file is always a new one.
 *
 * dm_file_not_replaceable: NULL when path may be replaced (nothing is there
 * yet, or a regular file that is not a symbolic link), else what is there,
 * for a message: "a symbolic link", "a directory", "a character device", "a
 * block device", "a FIFO (named pipe)", "a socket"; on Windows also "a
 * reparse point (a symbolic link, junction or mount point)", "a device name"
 * (NUL, CON, COM1, \\.\...) and "a device or pipe". The final name is not
 * followed (lstat; FILE_FLAG_OPEN_REPARSE_POINT); the folders on the way
 * are, as every program's paths are.
 */
const char *dm_file_not_replaceable(const char *path);

/*
 * 1 when paths a and b name the same file: the same identity when both
 * exist (any spelling, hard links, symbolic links), or, when neither exists
 * yet, the same name in the same folder (POSIX: after following a
 * symbolic link that points at a name not created yet; Windows: names
 * compared without case, as NTFS does). 0 otherwise, and when one exists
 * and the other does not.
 */
int dm_file_same(const char *a, const char *b);

/*
 * Replace the file at path so that a reader sees either the old file or
 * the new one, never part of one, in steps, so that a file of megabytes
 * is written as it is made and never held whole: dm_replace_open makes
 * the temporary file, dm_replace_write adds bytes, dm_replace_commit puts
 * it in place, dm_replace_abort (after a failure of the caller's) removes it.
 *
 * Refused (DM_EUSAGE) when dm_file_not_replaceable(path) says why, looked
 * at in dm_replace_open and again just before the rename. The bytes go to
 * a temporary file made new in the same folder (so on the same file
 * system): PATH.<12 random letters and digits>.tmp, never *.prom, so a
 * textfile collector ignores it. POSIX: open(2) with O_CREAT | O_EXCL |
 * O_NOFOLLOW | O_CLOEXEC (a name that exists, a symbolic link included, is
 * never opened: another random name is tried), fchmod 0644 whatever the
 * umask (the collector runs as another user), write, fsync, rename(2).
 * Windows: CreateFileW with CREATE_NEW, write, FlushFileBuffers,
 * MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH).
 *
 * The temporary file is removed on every failure. Signals do not end the
 * process while this runs: diskmon's handlers only set a flag
 * (dm_interrupt_install, with SA_RESTART), and the run ends only after the
 * printer's write returned (it holds the results lock, printer.h); only
 * SIGKILL or a crash can leave one behind.
 *
 * dm_replace_open and dm_replace_commit return 0, or a negative dm_err
 * with why (at most why_len bytes) saying what failed: "it is a symbolic
 * link: not replacing it", or the step and the OS's message ("creating a
 * temporary file in its folder failed: No such file or directory"). A
 * failed write is kept and said by dm_replace_commit, which then removes
 * the temporary file. path must stay valid until the commit or abort.
 */
struct dm_replace;
int dm_replace_open(struct dm_replace **r, const char *path, char *why, size_t why_len);
void dm_replace_write(struct dm_replace *r, const void *data, size_t len);
int dm_replace_commit(struct dm_replace *r, char *why, size_t why_len);
void dm_replace_abort(struct dm_replace *r);

/*
 * An input read in pieces as it arrives, for the line formats (-r FILE,
 * -r - for standard input): no stdio, so a row that came through a pipe is
 * handed on at once, never held in a buffer until more comes. POSIX:
 * open(2) or fd 0, poll(2) and read(2); Windows: CreateFileW or the
 * standard input handle, ReadFile (a pipe is first asked with
 * PeekNamedPipe, so a wait can end).
 */
typedef struct dm_infile dm_infile;

/* Open path ("-": standard input, never closed). 0, or a negative dm_err
 * with why (at most cap bytes) saying what failed. */
int dm_infile_open(dm_infile **f, const char *path, char *why, size_t cap);
/* Read at most cap bytes, waiting at most wait_ms for some to come: 0 with
 * *got bytes read (0: none came in time, or a signal came), 1 at the end
 * of the input, or a negative dm_err. */
int dm_infile_read(dm_infile *f, void *buf, size_t cap, unsigned wait_ms, size_t *got);
/* The size of a regular file, 0 for a pipe, a terminal or a device. */
uint64_t dm_infile_size(const dm_infile *f);
void dm_infile_close(dm_infile *f);

#endif /* DM_PLATFORM_H */
