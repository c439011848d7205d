/*
 * posix_infile.c - dm_infile (platform.h) on POSIX: open(2) or standard
 * input, poll(2) so that a wait on a pipe can end, and read(2) straight
 * into the caller's buffer.
 */
#ifndef _FILE_OFFSET_BITS
#define _FILE_OFFSET_BITS 64 /* 64-bit off_t on 32-bit POSIX systems */
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskmon.h"
#include "platform/platform.h"

struct dm_infile {
    int fd;
    int own;        /* 0 for standard input, which is not closed */
    int regular;    /* a regular file: read(2) never waits, no poll */
    uint64_t size;
};

int dm_infile_open(dm_infile **out, const char *path, char *why, size_t cap)
{
    struct dm_infile *f = calloc(1, sizeof *f);
    struct stat st;

    *out = NULL;
    if (f == NULL) {
        snprintf(why, cap, "out of memory");
        return DM_ENOMEM;
    }
    if (strcmp(path, "-") == 0) {
        f->fd = STDIN_FILENO;
    } else {
        f->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (f->fd < 0) {
            int e = errno;

            snprintf(why, cap, "%s", strerror(e));
            free(f);
            return dm_err_from_errno(e);
        }
        f->own = 1;
    }
    if (fstat(f->fd, &st) == 0 && S_ISREG(st.st_mode)) {
        f->regular = 1;
        f->size = (uint64_t)st.st_size;
    } else if (f->own && fstat(f->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "it is a directory");
        close(f->fd);
        free(f);
        return DM_EOPEN;
    }
    *out = f;
    return 0;
}

int dm_infile_read(dm_infile *f, void *buf, size_t cap, unsigned wait_ms, size_t *got)
{
    ssize_t n;

    *got = 0;
    if (!f->regular) {
        struct pollfd p = {f->fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)wait_ms);

        if (rc == 0 || (rc < 0 && errno == EINTR))
            return 0;
        if (rc < 0)
            return dm_err_from_errno(errno);
    }
    n = read(f->fd, buf, cap);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : dm_err_from_errno(errno);
    if (n == 0)
        return 1;
    *got = (size_t)n;
    return 0;
}

uint64_t dm_infile_size(const dm_infile *f)
{
    return f->size;
}

void dm_infile_close(dm_infile *f)
{
    if (f == NULL)
        return;
    if (f->own)
        close(f->fd);
    free(f);
}
