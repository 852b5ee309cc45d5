/* words: see words.h. */
#include "scan/words.h"
#include "base/core.h"
#include "base/lock.h"

#include <stdbool.h>

/* Does w, inside [base, base + span), hit the filter? */
static inline bool hits(uintptr_t w, uintptr_t base, const _Atomic uint64_t *filter) {
    uintptr_t g = (w - base) >> 4;
    return (atomic_load_explicit(&filter[g / 64 * 2], memory_order_relaxed) >> (g % 64)) & 1;
}

static unsigned find_scalar(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                            const _Atomic uint64_t *filter, const uintptr_t **at,
                            uintptr_t *val) {
    unsigned k = 0;
    for (size_t j = 0; j < n; j++) {
        uintptr_t w = p[j];
        if (unlikely(w - base < span) && unlikely(hits(w, base, filter))) {
            at[k] = p + j;
            val[k++] = w;
        }
    }
    return k;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The lanes of vec set in mask m (bit i: lane i), in order: at and val. (Hits are rare: a
 * store of the vector and reads of it back, past the store forwarding, cost little here.) */
#define TAKE_LANES(vec, store, lanes, m, p, j, at, val, k)                                   \
    do {                                                                                   \
        uintptr_t lane_[lanes];                                                            \
        store((void *)lane_, vec);                                                         \
        for (unsigned mm_ = (m); mm_; mm_ &= mm_ - 1) {                                    \
            unsigned t_ = (unsigned)__builtin_ctz(mm_);                                    \
            at[k] = p + j + t_;                                                            \
            val[k++] = lane_[t_];                                                          \
        }                                                                                  \
    } while (0)

static inline void store256(void *to, __m256i v) __attribute__((target("avx2")));
static inline void store256(void *to, __m256i v) { _mm256_storeu_si256((__m256i *)to, v); }

/* Four words x: the mask of those that hit the filter. Unsigned a < s is signed
 * (a ^ sign) < (s ^ sign): AVX2 compares 64-bit lanes signed only. A granule's filter
 * word is at byte (x - base) >> 10 << 4 of the filter: gathered for the lanes in the heap
 * only (the others are not read). */
__attribute__((target("avx2"))) static inline unsigned hits4(__m256i x, __m256i b, __m256i sign,
                                                             __m256i lim,
                                                             const _Atomic uint64_t *filter) {
    const __m256i z = _mm256_setzero_si256();
    __m256i d = _mm256_sub_epi64(x, b);
    __m256i in = _mm256_cmpgt_epi64(lim, _mm256_xor_si256(d, sign));
    __m256i off = _mm256_and_si256(_mm256_srli_epi64(d, 6), _mm256_set1_epi64x(~15LL));
    __m256i f = _mm256_mask_i64gather_epi64(z, (const long long *)(const void *)filter, off,
                                            in, 1);
    __m256i bit = _mm256_sllv_epi64(_mm256_set1_epi64x(1),
                                    _mm256_and_si256(_mm256_srli_epi64(d, 4),
                                                     _mm256_set1_epi64x(63)));
    __m256i h = _mm256_cmpeq_epi64(_mm256_and_si256(f, bit), z);
    return (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(h)) ^ 15;
}

/* Eight words a step; a step none of whose words is in the heap gathers nothing. */
__attribute__((target("avx2"))) static unsigned find_avx2(const uintptr_t *p, size_t n,
                                                          uintptr_t base, uintptr_t span,
                                                          const _Atomic uint64_t *filter,
                                                          const uintptr_t **at, uintptr_t *val) {
    const __m256i b = _mm256_set1_epi64x((long long)base);
    const __m256i sign = _mm256_set1_epi64x((long long)(1ULL << 63));
    const __m256i lim = _mm256_set1_epi64x((long long)(span ^ (1ULL << 63)));
    unsigned k = 0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + j));
        __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(p + j + 4));
        __m256i ix = _mm256_cmpgt_epi64(lim, _mm256_xor_si256(_mm256_sub_epi64(x, b), sign));
        __m256i iy = _mm256_cmpgt_epi64(lim, _mm256_xor_si256(_mm256_sub_epi64(y, b), sign));
        if (_mm256_testz_si256(_mm256_or_si256(ix, iy), _mm256_or_si256(ix, iy)))
            continue;
        unsigned mx = hits4(x, b, sign, lim, filter), my = hits4(y, b, sign, lim, filter);
        if (unlikely(mx))
            TAKE_LANES(x, store256, 4, mx, p, j, at, val, k);
        if (unlikely(my))
            TAKE_LANES(y, store256, 4, my, p, j + 4, at, val, k);
    }
    if (j + 4 <= n) { /* (a live run is often a few small objects) */
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + j));
        unsigned mx = hits4(x, b, sign, lim, filter);
        if (unlikely(mx))
            TAKE_LANES(x, store256, 4, mx, p, j, at, val, k);
        j += 4;
    }
    return k + find_scalar(p + j, n - j, base, span, filter, at + k, val + k);
}

static inline void store512(void *to, __m512i v) __attribute__((target("avx512f")));
static inline void store512(void *to, __m512i v) { _mm512_storeu_si512(to, v); }

/* The same with AVX-512F: eight words a vector, unsigned compares and mask registers. */
__attribute__((target("avx512f"))) static unsigned find_avx512(const uintptr_t *p, size_t n,
                                                               uintptr_t base, uintptr_t span,
                                                               const _Atomic uint64_t *filter,
                                                               const uintptr_t **at,
                                                               uintptr_t *val) {
    const __m512i b = _mm512_set1_epi64((long long)base);
    const __m512i s = _mm512_set1_epi64((long long)span);
    const __m512i z = _mm512_setzero_si512();
    const void *fp = (const void *)filter;
    unsigned k = 0;
    size_t j = 0;
    /* (The last step's words past n are neither read nor tested: a masked load does not
     * fault on them. A live run is often a few small objects: no scalar tail.) */
    for (; j < n; j += 8) {
        __mmask8 rest = n - j >= 8 ? 0xff : (__mmask8)((1u << (n - j)) - 1);
        __m512i x = _mm512_maskz_loadu_epi64(rest, (const void *)(p + j));
        __m512i d = _mm512_sub_epi64(x, b);
        __mmask8 in = _mm512_mask_cmplt_epu64_mask(rest, d, s);
        if (!in)
            continue;
        __m512i off = _mm512_and_si512(_mm512_srli_epi64(d, 6), _mm512_set1_epi64(~15LL));
        __m512i f = _mm512_mask_i64gather_epi64(z, in, off, fp, 1);
        __m512i bit = _mm512_sllv_epi64(_mm512_set1_epi64(1),
                                        _mm512_and_si512(_mm512_srli_epi64(d, 4),
                                                         _mm512_set1_epi64(63)));
        unsigned m = _mm512_test_epi64_mask(f, bit);
        if (unlikely(m))
            TAKE_LANES(x, store512, 8, m, p, j, at, val, k);
    }
    return k;
}
#endif

enum { KERNEL_SCALAR, KERNEL_AVX2, KERNEL_AVX512 };
static struct {
    /* written once by words_init (mark_init, before any mark), then read: */
    int kernel;        /* the one words_find uses */
    bool avx2, avx512; /* what the CPU has (the debug build checks each against scalar) */
} words_state;

/* What the CPU has and the kernel saves. glibc's loader asked the CPU once at start, and
 * keeps the answers (glibc 2.33+): libgcc's __builtin_cpu_supports asks it again, a dozen
 * CPUID instructions that each leave a virtual machine for its hypervisor (0.17 ms of every
 * process's start here, 8% of a short program's run under Oscar). */
#if defined(__x86_64__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define HAS_AVX2() CPU_FEATURE_ACTIVE(AVX2)
#define HAS_AVX512() (CPU_FEATURE_ACTIVE(AVX512F) && CPU_FEATURE_ACTIVE(AVX512_VBMI2))
#elif defined(__x86_64__)
#define HAS_AVX2() (__builtin_cpu_init(), __builtin_cpu_supports("avx2"))
#define HAS_AVX512() (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vbmi2"))
#endif

void words_init(void) {
#if defined(__x86_64__)
    words_state.avx2 = HAS_AVX2();
    /* AVX-512 only from the CPUs that also have VBMI2 (Intel's Ice Lake on, AMD's Zen 4):
     * before them (Skylake-SP, Cascade Lake) a core that runs 512-bit instructions slows its
     * clock for a while after, and a program that marks every millisecond or two (churn)
     * would run its own code slower. Here AVX-512 reads 5-20% faster than AVX2
     * (docs/benchmarks.md). */
    words_state.avx512 = HAS_AVX512();
    words_state.kernel = words_state.avx512 ? KERNEL_AVX512
                         : words_state.avx2 ? KERNEL_AVX2
                                            : KERNEL_SCALAR;
#endif
}

static unsigned find_vector(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                            const _Atomic uint64_t *filter, const uintptr_t **at,
                            uintptr_t *val) {
#if defined(__x86_64__)
    if (words_state.kernel == KERNEL_AVX512)
        return find_avx512(p, n, base, span, filter, at, val);
    if (words_state.kernel == KERNEL_AVX2)
        return find_avx2(p, n, base, span, filter, at, val);
#endif
    return find_scalar(p, n, base, span, filter, at, val);
}

unsigned words_find(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                    const _Atomic uint64_t *filter, const uintptr_t **at, uintptr_t *val) {
#ifndef OSCAR_DEBUG
    return find_vector(p, n, base, span, filter, at, val);
#else
    /* Every kernel this CPU has agrees with the scalar one on the same words. The words
     * themselves may change while they are read (a concurrent mark reads words the program
     * writes), so they are compared on a copy only this thread sees; what is returned is the
     * chosen kernel's on the words. */
    uintptr_t copy[WORDS_CHUNK];
    const uintptr_t *at1[WORDS_CHUNK], *at2[WORDS_CHUNK];
    uintptr_t val1[WORDS_CHUNK], val2[WORDS_CHUNK];
    oscar_assert(n <= WORDS_CHUNK);
    __builtin_memcpy(copy, p, n * sizeof *p);
    unsigned k1 = find_scalar(copy, n, base, span, filter, at1, val1);
    for (int kernel = KERNEL_AVX2; kernel <= KERNEL_AVX512; kernel++) {
        if (!(kernel == KERNEL_AVX2 ? words_state.avx2 : words_state.avx512))
            continue;
        unsigned k2 = 0;
#if defined(__x86_64__)
        k2 = kernel == KERNEL_AVX2 ? find_avx2(copy, n, base, span, filter, at2, val2)
                                   : find_avx512(copy, n, base, span, filter, at2, val2);
#endif
        oscar_assert(k1 == k2);
        for (unsigned i = 0; i < k1; i++)
            oscar_assert(at1[i] == at2[i] && val1[i] == val2[i]);
    }
    unsigned k = find_vector(p, n, base, span, filter, at, val);
    for (unsigned i = 0; i < k; i++)
        oscar_assert(at[i] >= p && at[i] < p + n && (i == 0 || at[i] > at[i - 1]) &&
                     val[i] - base < span && hits(val[i], base, filter));
    return k;
#endif
}
