/*
 * atomics.h - the atomics the ring, the sink and the printer use on every
 * event, inline so that they cost an instruction, not a call: the live
 * callback path has a budget of 50 ns per record, and an out-of-line call
 * per atomic (two or three per event) took a visible share of it.
 *
 * GCC and Clang (Linux, MinGW) use the __atomic builtins. MSVC has none:
 * on x64 every aligned 64-bit load and store is atomic and the hardware
 * keeps loads ordered with loads and stores with stores (TSO), so acquire
 * and release need only a compiler barrier (_ReadWriteBarrier) that stops
 * the compiler from moving accesses across them; elsewhere (32-bit x86,
 * where a plain 64-bit access is two 32-bit ones, and ARM64, where the
 * hardware reorders) every access goes through an Interlocked call, a full
 * barrier: stronger than asked, always correct. The casts drop const only to
 * satisfy the Interlocked prototypes; a compare-exchange of 0 with 0 never
 * changes the value.
 *
 * Two fences for the ring's wake-up (ring.h): dm_atomic_fence, a full
 * (sequentially consistent) barrier, the only one that orders a store with
 * a later load to another location (x86 lets that load go first: Intel SDM
 * Vol. 3A 8.2.3.4); and dm_compiler_fence, which only stops the compiler
 * from moving accesses across it and costs nothing at run time: the light
 * side of an asymmetric pair whose heavy side is dm_fence_all_threads
 * (platform.h).
 */
#ifndef DM_ATOMICS_H
#define DM_ATOMICS_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)

static inline uint64_t dm_atomic_load_acquire(const volatile uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint64_t dm_atomic_load_relaxed(const volatile uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void dm_atomic_store_release(volatile uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline int dm_atomic_load_int(const volatile int *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void dm_atomic_store_int(volatile int *p, int v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Store v, return the old value; a full (acquire and release) barrier. */
static inline int dm_atomic_exchange_int(volatile int *p, int v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_ACQ_REL);
}

/* ThreadSanitizer does not model fences (GCC refuses one under
 * -fsanitize=thread: -Wtsan), so there the fence is a sequentially
 * consistent read-modify-write of a location of its own, which is a full
 * barrier on x86 (a locked instruction) and which TSan understands. */
#if defined(__SANITIZE_THREAD__)
#define DM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DM_TSAN 1
#endif
#endif

static inline void dm_atomic_fence(void)
{
#ifdef DM_TSAN
    static volatile int fence_word;

    (void)__atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void dm_compiler_fence(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

#elif defined(_MSC_VER)

#include <intrin.h>
#include <windows.h>

static __inline uint64_t dm_atomic_load_acquire(const volatile uint64_t *p)
{
#if defined(_M_X64)
    uint64_t v = *p;
    _ReadWriteBarrier();
    return v;
#else
    return (uint64_t)InterlockedCompareExchange64((volatile LONG64 *)p, 0, 0);
#endif
}

static __inline uint64_t dm_atomic_load_relaxed(const volatile uint64_t *p)
{
#if defined(_M_X64)
    return *p;
#else
    return (uint64_t)InterlockedCompareExchange64((volatile LONG64 *)p, 0, 0);
#endif
}

static __inline void dm_atomic_store_release(volatile uint64_t *p, uint64_t v)
{
#if defined(_M_X64)
    _ReadWriteBarrier();
    *p = v;
#else
    InterlockedExchange64((volatile LONG64 *)p, (LONG64)v);
#endif
}

static __inline int dm_atomic_load_int(const volatile int *p)
{
#if defined(_M_X64)
    int v = *p;
    _ReadWriteBarrier();
    return v;
#else
    return (int)InterlockedCompareExchange((volatile LONG *)p, 0, 0);
#endif
}

static __inline void dm_atomic_store_int(volatile int *p, int v)
{
    InterlockedExchange((volatile LONG *)p, (LONG)v);
}

static __inline int dm_atomic_exchange_int(volatile int *p, int v)
{
    return (int)InterlockedExchange((volatile LONG *)p, (LONG)v);
}

/* MemoryBarrier (winnt.h): a locked operation on x86 and x64, DMB ISH on
 * ARM64, and a compiler barrier too. */
static __inline void dm_atomic_fence(void)
{
    MemoryBarrier();
}

static __inline void dm_compiler_fence(void)
{
    _ReadWriteBarrier();
}

#else
#error "atomics.h: no atomics for this compiler"
#endif

#endif /* DM_ATOMICS_H */
