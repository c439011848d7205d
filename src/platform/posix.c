/*
 * posix.c - the platform layer on Linux and other POSIX systems: pthreads,
 * clock_gettime, sigaction. (Atomics are inline: atomics.h.)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fseeko/ftello */
#endif
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64 /* 64-bit off_t on 32-bit POSIX systems */
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "diskmon.h"
#include "platform/platform.h"

struct dm_thread {
    pthread_t id;
    void (*fn)(void *);
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int done;
    int detached;
};

static void *thread_main(void *p)
{
    struct dm_thread *t = p;

    t->fn(t->arg);
    pthread_mutex_lock(&t->lock);
    t->done = 1;
    pthread_cond_broadcast(&t->done_cond);
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static void stop_signal_set(sigset_t *set);

/* A new thread starts with the stop signals blocked (it inherits the mask
 * set around pthread_create), so a signal sent to the process is always
 * taken by the main thread, which waits on the interrupt pipe: a worker
 * would take it wherever it is, and under TSan only at its next
 * intercepted call. */
int dm_thread_start(dm_thread **out, void (*fn)(void *), void *arg)
{
    struct dm_thread *t = calloc(1, sizeof *t);
    sigset_t stop, old;
    int rc;

    if (t == NULL)
        return DM_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->done_cond, NULL);
    stop_signal_set(&stop);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    rc = pthread_create(&t->id, NULL, thread_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&t->done_cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return DM_EOS;
    }
    *out = t;
    return 0;
}

void dm_thread_join(dm_thread *t)
{
    pthread_join(t->id, NULL);
    pthread_cond_destroy(&t->done_cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

int dm_thread_join_timeout(dm_thread *t, unsigned ms)
{
    struct timespec deadline;
    int done;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->lock);
    while (!t->done) {
        if (pthread_cond_timedwait(&t->done_cond, &t->lock, &deadline) == ETIMEDOUT)
            break;
    }
    done = t->done;
    pthread_mutex_unlock(&t->lock);
    if (!done)
        return DM_ESTOPPED; /* still running: the caller exits without it */
    dm_thread_join(t);
    return 0;
}

void *dm_aligned_alloc(size_t align, size_t size)
{
    void *p;

    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

void dm_aligned_free(void *p)
{
    free(p);
}

uint64_t dm_monotonic_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t dm_wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void dm_sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void dm_yield(void)
{
    sched_yield();
}

int dm_is_terminal(FILE *f)
{
    return isatty(fileno(f));
}

int dm_write_all(FILE *f, const void *buf, size_t len)
{
    const char *p = buf;
    int fd;

    if (fflush(f) != 0)
        return -1;
    fd = fileno(f);
    if (fd < 0)
        return fwrite(buf, 1, len, f) == len ? 0 : -1;
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) { /* no progress and no error: would loop forever */
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int dm_terminal_size(FILE *f, int *rows, int *cols)
{
    struct winsize ws;

    if (ioctl(fileno(f), TIOCGWINSZ, &ws) != 0)
        return dm_err_from_errno(errno);
    if (ws.ws_row == 0 || ws.ws_col == 0)
        return DM_ENOTFOUND; /* a pty nobody sized (some CI runners) */
    *rows = ws.ws_row;
    *cols = ws.ws_col;
    return 0;
}

int dm_terminal_enable_vt(FILE *f)
{
    (void)f; /* POSIX terminals take VT100 sequences */
    return 1;
}

void dm_terminal_restore(FILE *f)
{
    (void)f; /* no mode was changed */
}

/* Set by the handler, read by any thread: an atomic, not a volatile
 * sig_atomic_t, which is only safe for a handler on the reading thread
 * (TSan reported the race when a worker took the signal). Lock-free
 * atomics may be used in a handler (C11 7.14.1.1). */
static volatile int interrupted;
/* The interrupt pipe: written by the signal handler, never drained while
 * interrupted, so every dm_waiter_wait made with on_interrupt returns. */
static int interrupt_fds[2] = {-1, -1};

static void interrupt_wake(void)
{
    int e = errno; /* a handler must leave errno as it found it */

    if (interrupt_fds[1] >= 0 && write(interrupt_fds[1], "!", 1) < 0) {
        /* Full: the pipe is readable already, which is all a wake is. */
    }
    errno = e;
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    /* A SIGPIPE the kernel raised for our own write to a closed pipe: the
     * write fails with EPIPE, which the printer takes as a quiet end. One
     * sent by another process (kill -PIPE) asks us to stop, like the rest. */
    if (sig == SIGPIPE && info != NULL && info->si_pid == getpid())
        return;
    dm_atomic_store_int(&interrupted, 1);
    interrupt_wake();
}

/* Signals whose default action ends the process and that a program may
 * catch, besides the faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
 * SIGTRAP, SIGSYS), after which nothing can be trusted to run in order.
 * From signal(7), "Standard signals". */
static const int stop_signals[] = {
    SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM,
    SIGPROF, SIGXCPU, SIGXFSZ, SIGPIPE,
#ifdef SIGPOLL
    SIGPOLL,
#endif
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
};

/* stop_signals and the real-time signals: what dm_interrupt_install
 * catches. */
static void stop_signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaddset(set, stop_signals[i]);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(set, sig);
}

static int set_nonblocking_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    }
    return 0;
}

static void catch_signal(int sig, const struct sigaction *sa)
{
    struct sigaction old;

    /* SIGINT and SIGQUIT are always ours: a shell without job control
     * starts background commands with them ignored, and Ctrl+C or `kill
     * -INT` must still stop diskmon in order. Any other signal the caller
     * ignored (nohup and SIGHUP, a SIGPIPE ignored on purpose) stays
     * ignored. */
    if (sig != SIGINT && sig != SIGQUIT && sigaction(sig, NULL, &old) == 0 &&
        old.sa_handler == SIG_IGN)
        return;
    sigaction(sig, sa, NULL);
}

void dm_interrupt_install(void)
{
    struct sigaction sa;

    if (interrupt_fds[0] < 0 && set_nonblocking_pipe(interrupt_fds) != 0)
        interrupt_fds[0] = interrupt_fds[1] = -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask); /* one handler at a time */
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        catch_signal(stop_signals[i], &sa);
    /* Real-time signals also end a process by default (signal(7)). */
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        catch_signal(sig, &sa);
}

int dm_interrupted(void)
{
    return dm_atomic_load_int(&interrupted) != 0;
}

void dm_interrupt_done(void)
{
    /* Nothing waits for this on POSIX: signals do not kill us mid-cleanup. */
}

void dm_interrupt_raise(void)
{
    dm_atomic_store_int(&interrupted, 1);
    interrupt_wake();
}

void dm_stdio_init(void)
{
    /* Text and binary are the same on POSIX. */
}

void dm_interrupt_clear(void)
{
    char buf[64];

    dm_atomic_store_int(&interrupted, 0);
    if (interrupt_fds[0] >= 0)
        while (read(interrupt_fds[0], buf, sizeof buf) > 0)
            ;
}

/* ---- waiting (platform.h "dm_waiter") ------------------------------------ */

struct dm_waiter {
    int fds[2];        /* [0] polled, [1] written by dm_waiter_wake */
    int on_interrupt;
};

dm_waiter *dm_waiter_create(int on_interrupt)
{
    dm_waiter *w = calloc(1, sizeof *w);

    if (w == NULL)
        return NULL;
    if (set_nonblocking_pipe(w->fds) != 0) {
        free(w);
        return NULL;
    }
    w->on_interrupt = on_interrupt;
    return w;
}

void dm_waiter_destroy(dm_waiter *w)
{
    if (w == NULL)
        return;
    close(w->fds[0]);
    close(w->fds[1]);
    free(w);
}

void dm_waiter_wake(dm_waiter *w)
{
    int e = errno;

    if (write(w->fds[1], "!", 1) < 0) {
        /* Full: the pipe is readable already, which is all a wake is. */
    }
    errno = e;
}

int dm_waiter_wait(dm_waiter *w, unsigned ms, FILE *watch)
{
    struct pollfd p[3];
    nfds_t n = 0, watch_at = 0;
    char buf[64];
    int rc;

    p[n].fd = w->fds[0];
    p[n++].events = POLLIN;
    if (w->on_interrupt && interrupt_fds[0] >= 0) {
        p[n].fd = interrupt_fds[0];
        p[n++].events = POLLIN;
    }
    if (watch != NULL && fileno(watch) >= 0) {
        /* No events asked: poll(2) reports POLLERR and POLLHUP anyway, and a
         * pipe's writing end gets POLLERR once no reader is left (the
         * kernel's pipe_poll), which is what is watched. */
        watch_at = n;
        p[n].fd = fileno(watch);
        p[n++].events = 0;
    }
    rc = poll(p, n, ms == DM_WAIT_FOREVER ? -1 : ms > INT32_MAX ? INT32_MAX : (int)ms);
    if (rc <= 0)
        return 0; /* timed out, or a signal: the caller looks again */
    if (p[0].revents & POLLIN)
        while (read(w->fds[0], buf, sizeof buf) > 0)
            ;
    if (watch_at != 0 && (p[watch_at].revents & (POLLERR | POLLHUP)))
        return DM_WAIT_OUTPUT_GONE;
    return 1;
}

int dm_err_from_errno(int e)
{
    switch (e) {
    case 0:
        return 0;
    case EACCES:
    case EPERM:
    case EROFS:
        return DM_EACCESS;
    case ENOENT:
    case ENODEV:
    case ENXIO:
        return DM_ENOTFOUND;
    case ENOMEM:
        return DM_ENOMEM;
    case EEXIST:
        return DM_EEXISTS;
    case EIO:
        return DM_EIO;
    case ENOSYS:
    case EOPNOTSUPP:
        return DM_EUNSUPPORTED;
    default:
        return DM_EOS;
    }
}

/* ---- files (platform.h "Files") ------------------------------------------ */

static void id_from_stat(const struct stat *st, struct dm_file_id *id)
{
    id->volume = (uint64_t)st->st_dev;
    id->index = (uint64_t)st->st_ino;
}

int dm_file_id_of_path(const char *path, struct dm_file_id *id)
{
    struct stat st;

    /* stat follows symlinks: a link to the trace is the trace. */
    if (path == NULL || stat(path, &st) != 0)
        return 0;
    id_from_stat(&st, id);
    return 1;
}

int dm_file_id_of_stream(FILE *f, struct dm_file_id *id)
{
    struct stat st;

    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    id_from_stat(&st, id);
    return 1;
}

enum dm_file_kind dm_file_kind(const char *path, uint64_t *size)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return DM_FILE_MISSING;
    if (S_ISDIR(st.st_mode))
        return DM_FILE_DIRECTORY;
    if (!S_ISREG(st.st_mode))
        return DM_FILE_OTHER;
    *size = (uint64_t)st.st_size;
    return DM_FILE_REGULAR;
}

/* ---- replacing an output file (platform.h) --------------------------------- */

static const char *kind_name(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

const char *dm_file_not_replaceable(const char *path)
{
    struct stat st;
    size_t n = strlen(path);

    if (n > 0 && path[n - 1] == '/')
        return "a directory name (it ends in /)";
    /* lstat: the name itself, not what a symbolic link there points to.
     * Missing (or unreadable): the write says why if it cannot be made. */
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL;
    return kind_name(st.st_mode);
}

#ifndef PATH_MAX
#define PATH_MAX 4096 /* Linux's; only a bound for the names compared here */
#endif

/* Follow a symbolic link at path that points at a name not created yet
 * (what open(O_CREAT) would create), as far as MAXSYMLINKS (40, Linux's
 * fs/namei.c) links; out gets the name that would be created. */
#define SYMLINK_HOPS 40

static int created_name(const char *path, char *out, size_t cap)
{
    char link[PATH_MAX];
    struct stat st;

    if (strlen(path) >= cap)
        return -1;
    strcpy(out, path);
    for (int hop = 0; hop < SYMLINK_HOPS; hop++) {
        ssize_t n;
        const char *slash;
        size_t dir_len;

        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        n = readlink(out, link, sizeof link - 1);
        if (n < 0)
            return -1;
        link[n] = '\0';
        slash = strrchr(out, '/');
        dir_len = link[0] == '/' || slash == NULL ? 0 : (size_t)(slash - out) + 1;
        if (dir_len + (size_t)n >= cap)
            return -1;
        memmove(out + dir_len, link, (size_t)n + 1); /* relative: from the link's folder */
    }
    return -1;
}

/* The folder's identity and the last name of a path not created yet. */
static int new_name_id(const char *path, struct dm_file_id *dir, const char **base)
{
    const char *slash = strrchr(path, '/');
    char folder[PATH_MAX];

    if (slash == NULL) {
        *base = path;
        return dm_file_id_of_path(".", dir);
    }
    if ((size_t)(slash - path) + 2 > sizeof folder)
        return 0;
    memcpy(folder, path, (size_t)(slash - path) + 1); /* "/x": the folder "/" */
    folder[slash - path + 1] = '\0';
    *base = slash + 1;
    return dm_file_id_of_path(folder, dir);
}

int dm_file_same(const char *a, const char *b)
{
    struct dm_file_id ia, ib;
    char na[PATH_MAX], nb[PATH_MAX];
    const char *base_a, *base_b;
    int has_a = dm_file_id_of_path(a, &ia), has_b = dm_file_id_of_path(b, &ib);

    if (has_a || has_b)
        return has_a && has_b && ia.volume == ib.volume && ia.index == ib.index;
    return created_name(a, na, sizeof na) == 0 && created_name(b, nb, sizeof nb) == 0 &&
           new_name_id(na, &ia, &base_a) && new_name_id(nb, &ib, &base_b) &&
           ia.volume == ib.volume && ia.index == ib.index && strcmp(base_a, base_b) == 0;
}

/* The temporary file's name: PATH + "." + TMP_RANDOM characters + ".tmp". */
#define TMP_RANDOM 12
#define TMP_EXTRA (1 + TMP_RANDOM + sizeof ".tmp")
/* Names tried before giving up: each is one of 62^12, so a second try
 * means someone made that name, and a few more are plenty. */
#define TMP_TRIES 8

static void random_name(char *out, int attempt)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[TMP_RANDOM];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, r, sizeof r) : -1;

    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof r) {
        /* No /dev/urandom (a bare chroot): a guessable name is still safe,
         * O_EXCL | O_NOFOLLOW never open one that exists. */
        uint64_t x = dm_monotonic_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)attempt;

        for (size_t i = 0; i < sizeof r; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u; /* Knuth's MMIX LCG */
            r[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < sizeof r; i++)
        out[i] = chars[r[i] % (sizeof chars - 1)];
    out[TMP_RANDOM] = '\0';
}

static int create_temp(const char *path, char *tmp, size_t cap)
{
    char name[TMP_RANDOM + 1];
    int fd = -1;

    for (int i = 0; i < TMP_TRIES; i++) {
        random_name(name, i);
        snprintf(tmp, cap, "%s.%s.tmp", path, name);
        /* 0600 until the fchmod: nobody else reads a half-written file. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    return fd;
}

static int replace_failed(int e, const char *step, char *why, size_t why_len)
{
    snprintf(why, why_len, "%s failed: %s", step, strerror(e));
    return dm_err_from_errno(e);
}

static int refused(const char *what, char *why, size_t why_len)
{
    snprintf(why, why_len, "it is %s: not replacing it", what);
    return DM_EUSAGE;
}

struct dm_replace {
    const char *path;
    char *tmp;                   /* the temporary file's name */
    int fd;
    int e;                       /* the first failure's errno (0: none) */
    const char *step;            /* and the step it failed in */
};

int dm_replace_open(struct dm_replace **out, const char *path, char *why, size_t why_len)
{
    const char *what = dm_file_not_replaceable(path);
    size_t cap = strlen(path) + TMP_EXTRA;
    struct dm_replace *r;
    int rc;

    *out = NULL;
    if (what != NULL)
        return refused(what, why, why_len);
    r = calloc(1, sizeof *r);
    if (r == NULL || (r->tmp = malloc(cap)) == NULL) {
        free(r);
        return replace_failed(ENOMEM, "making the temporary file's name", why, why_len);
    }
    r->path = path;
    r->fd = create_temp(path, r->tmp, cap);
    if (r->fd < 0) {
        rc = replace_failed(errno, "creating a temporary file in its folder", why, why_len);
        free(r->tmp);
        free(r);
        return rc;
    }
    /* 0644: the textfile collector runs as another user and must read it,
     * whatever umask diskmon was started with. */
    if (fchmod(r->fd, 0644) != 0) {
        r->e = errno;
        r->step = "setting the temporary file's mode";
    }
    *out = r;
    return 0;
}

void dm_replace_write(struct dm_replace *r, const void *data, size_t len)
{
    const char *p = data;

    while (r->e == 0 && len > 0) {
        ssize_t done = write(r->fd, p, len);

        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            r->e = done < 0 ? errno : EIO;
            r->step = "writing the temporary file";
            break;
        }
        p += done;
        len -= (size_t)done;
    }
}

void dm_replace_abort(struct dm_replace *r)
{
    if (r == NULL)
        return;
    if (r->fd >= 0)
        close(r->fd);
    unlink(r->tmp);
    free(r->tmp);
    free(r);
}

int dm_replace_commit(struct dm_replace *r, char *why, size_t why_len)
{
    const char *what;
    int rc;

    /* On disk before the rename: after a crash the name holds the old
     * file or the new one, not an empty one. */
    if (r->e == 0 && fsync(r->fd) != 0) {
        r->e = errno;
        r->step = "fsync of the temporary file";
    }
    if (close(r->fd) != 0 && r->e == 0) {
        r->e = errno;
        r->step = "closing the temporary file";
    }
    r->fd = -1;
    /* Looked at again: it may have become a symbolic link or a device since.
     * rename(2) would replace the link itself, not follow it, but what was
     * put there is not diskmon's to replace. */
    what = r->e == 0 ? dm_file_not_replaceable(r->path) : NULL;
    if (r->e == 0 && what == NULL) {
        if (rename(r->tmp, r->path) == 0) {
            free(r->tmp);
            free(r);
            return 0;
        }
        r->e = errno;
        r->step = "renaming it over the file";
    }
    rc = what != NULL ? refused(what, why, why_len) : replace_failed(r->e, r->step, why, why_len);
    dm_replace_abort(r);
    return rc;
}

int dm_file_size(FILE *f, uint64_t *size)
{
    off_t end;

    if (fseeko(f, 0, SEEK_END) != 0 || (end = ftello(f)) < 0)
        return -1;
    *size = (uint64_t)end;
    return 0;
}

int dm_file_read_at(FILE *f, uint64_t off, void *dst, size_t len)
{
    uint8_t *p = dst;
    int fd = fileno(f);

    while (len > 0) {
        ssize_t got;

        if (off > (uint64_t)INT64_MAX - len)
            return -1;
        got = pread(fd, p, len, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1; /* an error, or the end of the file */
        p += got;
        off += (uint64_t)got;
        len -= (size_t)got;
    }
    return 0;
}
