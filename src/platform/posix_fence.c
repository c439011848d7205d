/*
 * posix_fence.c - dm_fence_all_threads (platform.h) on POSIX systems: the
 * heavy side of the ring's asymmetric fence. Linux has membarrier(2);
 * other systems have nothing alike, and the ring then fences every push.
 * A file of its own because syscall() needs _GNU_SOURCE, which posix.c,
 * kept to POSIX, does not ask for.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall() */
#endif

#include <unistd.h>

#include "platform/platform.h"

#ifdef __linux__
#include <sys/syscall.h>
/* The membarrier(2) commands, from include/uapi/linux/membarrier.h (Linux
 * 4.14), spelled out so that older headers build too. */
#define DM_MEMBARRIER_PRIVATE_EXPEDITED (1 << 3)
#define DM_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#endif

int dm_fence_all_threads(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
    /* 0: not tried yet; 1: registered; -1: the kernel has none (ENOSYS,
     * EINVAL before 4.14, EPERM from a seccomp filter). Registering twice,
     * by two threads at once, is allowed. */
    static volatile int state;
    int s = dm_atomic_load_int(&state);

    if (s == 0) {
        s = syscall(SYS_membarrier, DM_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0
                ? 1
                : -1;
        dm_atomic_store_int(&state, s);
    }
    if (s < 0)
        return -1;
    return syscall(SYS_membarrier, DM_MEMBARRIER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -1;
#else
    return -1;
#endif
}
