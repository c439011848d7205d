/*
 * atomics.h - the atomics the ring, the sink and the printer use on every
 * event, inline so that they cost an instruction, not a call: the live
 * callback path has a budget of 50 ns per record, and an out-of-line call
 * per atomic (two or three per event) took a visible share of it.
 *
 * A shared 64-bit value is a dm_atomic_u64, never a plain uint64_t: the
 * type carries _Alignas(8), so the value is naturally aligned wherever it
 * is placed (a struct member, a global, an array element), and the
 * functions below are the only way to read or write it. Natural alignment
 * is what makes one 64-bit access atomic on a 32-bit target: the i386 and
 * Windows x86 ABIs align a plain uint64_t struct member to 4 only, and an
 * access that then crosses a cache line is split in two by the processor
 * (Intel SDM Vol. 3A 8.1.1: "guaranteed atomic" covers an aligned quadword
 * and an unaligned one that fits a cache line, nothing more; a locked
 * instruction across a line is a bus lock, which Linux's split-lock
 * detection reports and slows). The static assertions at the end check the
 * size, the alignment and, for GCC and Clang, that the compiler does a
 * 64-bit atomic in place (x87 FILD/FISTP or SSE MOVQ on i386, an ordinary
 * load or store on x86-64, LDAR/STLR on ARM64), not through libatomic's
 * locks.
 *
 * GCC and Clang (Linux, MinGW) use the __atomic builtins. MSVC has none:
 * on x64 every aligned 64-bit load and store is atomic and the hardware
 * keeps loads ordered with loads and stores with stores (TSO), so acquire
 * and release need only a compiler barrier (_ReadWriteBarrier) that stops
 * the compiler from moving accesses across them; elsewhere (32-bit x86,
 * where a plain 64-bit access is two 32-bit ones, and ARM64, where the
 * hardware reorders) every access goes through an Interlocked call
 * (LOCK CMPXCHG8B on x86, a load-exclusive/store-exclusive loop with
 * barriers on ARM64), a full barrier: stronger than asked, always correct,
 * and atomic only because the value is 8-aligned. The casts drop const
 * only to satisfy the Interlocked prototypes; a compare-exchange of 0 with
 * 0 never changes the value.
 *
 * int flags (volatile int) are naturally aligned by every ABI we build for
 * (asserted below) and go through the _int functions.
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

/* A 64-bit value shared between threads. Zero it with memset or {0}; read
 * and write it only through dm_atomic_load_* and dm_atomic_store_*. */
typedef struct dm_atomic_u64 {
    _Alignas(8) volatile uint64_t v;
} dm_atomic_u64;

_Static_assert(sizeof(dm_atomic_u64) == 8 && _Alignof(dm_atomic_u64) == 8,
               "dm_atomic_u64: eight bytes, naturally aligned on every target");
_Static_assert(_Alignof(int) == sizeof(int),
               "int flags: naturally aligned on every target");

#if defined(__GNUC__) || defined(__clang__)

/* Lock-free in place: GCC and Clang would otherwise call libatomic, whose
 * fallback takes a lock (i386 built for a CPU without CMPXCHG8B). */
_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0) &&
                   __atomic_always_lock_free(sizeof(int), 0),
               "64-bit and int atomics must be single instructions here");

static inline uint64_t dm_atomic_load_acquire(const dm_atomic_u64 *p)
{
    return __atomic_load_n(&p->v, __ATOMIC_ACQUIRE);
}

static inline uint64_t dm_atomic_load_relaxed(const dm_atomic_u64 *p)
{
    return __atomic_load_n(&p->v, __ATOMIC_RELAXED);
}

static inline void dm_atomic_store_release(dm_atomic_u64 *p, uint64_t v)
{
    __atomic_store_n(&p->v, v, __ATOMIC_RELEASE);
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

static __inline uint64_t dm_atomic_load_acquire(const dm_atomic_u64 *p)
{
#if defined(_M_X64)
    uint64_t v = p->v;
    _ReadWriteBarrier();
    return v;
#else
    return (uint64_t)InterlockedCompareExchange64((volatile LONG64 *)&p->v, 0, 0);
#endif
}

static __inline uint64_t dm_atomic_load_relaxed(const dm_atomic_u64 *p)
{
#if defined(_M_X64)
    return p->v;
#else
    return (uint64_t)InterlockedCompareExchange64((volatile LONG64 *)&p->v, 0, 0);
#endif
}

static __inline void dm_atomic_store_release(dm_atomic_u64 *p, uint64_t v)
{
#if defined(_M_X64)
    _ReadWriteBarrier();
    p->v = v;
#else
    InterlockedExchange64((volatile LONG64 *)&p->v, (LONG64)v);
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
