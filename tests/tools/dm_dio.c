/*
 * dm_dio.c - issue known block I/O for the Linux integration tests.
 *
 *     dm_dio DEVICE OP...
 *
 * Opens DEVICE with O_DIRECT (so each read and write reaches the block layer
 * as one request of exactly that size, not via the page cache) and runs the
 * operations in order:
 *
 *     r:OFFSET:LEN   read LEN bytes at byte OFFSET
 *     w:OFFSET:LEN   write LEN bytes (a fixed pattern) at byte OFFSET
 *     f              fsync: on a block device, one empty preflush (a flush)
 *     d:OFFSET:LEN   discard the range (BLKDISCARD)
 *
 * OFFSET and LEN must be multiples of the device's logical block size.
 * Prints "pid N" first, so the test can match the lines diskmon shows, and
 * exits 1 on any failure with a message on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_DIRECT */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ALIGN 4096 /* satisfies O_DIRECT on every logical block size <= 4 KiB */

static int parse_range(const char *s, uint64_t *off, uint64_t *len)
{
    char *end;

    if (s[0] == '\0' || s[1] != ':')
        return 0;
    *off = strtoull(s + 2, &end, 0);
    if (*end != ':')
        return 0;
    *len = strtoull(end + 1, &end, 0);
    return *end == '\0' && *len > 0;
}

static int run_op(int fd, const char *op)
{
    uint64_t off = 0, len = 0;
    void *buf = NULL;
    ssize_t n;

    if (strcmp(op, "f") == 0) {
        if (fsync(fd) != 0) {
            fprintf(stderr, "dm_dio: fsync: %s\n", strerror(errno));
            return 0;
        }
        return 1;
    }
    if (!parse_range(op, &off, &len) || len > (64u << 20)) {
        fprintf(stderr, "dm_dio: bad operation \"%s\" (want r:OFF:LEN, w:OFF:LEN, "
                "d:OFF:LEN or f)\n", op);
        return 0;
    }
    if (op[0] == 'd') {
        uint64_t range[2] = {off, len};

        if (ioctl(fd, BLKDISCARD, range) != 0) {
            fprintf(stderr, "dm_dio: discard %s: %s\n", op, strerror(errno));
            return 0;
        }
        return 1;
    }
    if (op[0] != 'r' && op[0] != 'w') {
        fprintf(stderr, "dm_dio: bad operation \"%s\"\n", op);
        return 0;
    }
    if (posix_memalign(&buf, ALIGN, (size_t)len) != 0) {
        fprintf(stderr, "dm_dio: out of memory\n");
        return 0;
    }
    memset(buf, 0xA5, (size_t)len);
    if (op[0] == 'r')
        n = pread(fd, buf, (size_t)len, (off_t)off);
    else
        n = pwrite(fd, buf, (size_t)len, (off_t)off);
    free(buf);
    if (n < 0 || (uint64_t)n != len) {
        fprintf(stderr, "dm_dio: %s: %s\n", op,
                n < 0 ? strerror(errno) : "short transfer");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int fd;

    if (argc < 3) {
        fprintf(stderr, "usage: dm_dio DEVICE OP...   (OP: r:OFF:LEN w:OFF:LEN "
                "d:OFF:LEN f)\n");
        return 2;
    }
    fd = open(argv[1], O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "dm_dio: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    for (int i = 2; i < argc; i++) {
        if (!run_op(fd, argv[i])) {
            close(fd);
            return 1;
        }
    }
    if (close(fd) != 0) {
        fprintf(stderr, "dm_dio: close: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
