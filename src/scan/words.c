/* words: see words.h. */
#include "scan/words.h"
#include "base/core.h"
#include "base/lock.h"

#include <stdbool.h>

/* The table entry a found word will be looked up in (see words_find). */
static inline void prefetch_entry(const void *table, uintptr_t off) {
    __builtin_prefetch((const char *)table + (off >> 10) * 16);
}

static unsigned find_scalar(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                            const uintptr_t **at, uintptr_t *val, const void *table) {
    unsigned k = 0;
    for (size_t j = 0; j < n; j++) {
        uintptr_t w = p[j];
        if (unlikely(w - base < span)) {
            prefetch_entry(table, w - base);
            at[k] = p + j;
            val[k++] = w;
        }
    }
    return k;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* Unsigned a < s is signed (a ^ sign) < (s ^ sign): AVX2 compares 64-bit lanes signed only. */
__attribute__((target("avx2"))) static unsigned find_avx2(const uintptr_t *p, size_t n,
                                                          uintptr_t base, uintptr_t span,
                                                          const uintptr_t **at, uintptr_t *val,
                                                          const void *table) {
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
        unsigned m = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(ix)) |
                     (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(iy)) << 4;
        /* The hits' words are read again, one by one (cached), and tested again: a
         * concurrent mark's word may have changed meanwhile, and what is kept is what was
         * tested. (Taking them from the vector means storing it and reading it back a word
         * at a time, which may stall the store forwarding.) */
        for (; m; m &= m - 1) {
            unsigned t = (unsigned)__builtin_ctz(m);
            uintptr_t w = p[j + t];
            if (likely(w - base < span)) {
                prefetch_entry(table, w - base);
                at[k] = p + j + t;
                val[k++] = w;
            }
        }
    }
    return k + find_scalar(p + j, n - j, base, span, at + k, val + k, table);
}
#endif

static struct {
    bool use_avx2; /* written once by words_init (mark_init, before any mark), then read */
} words_state;

void words_init(void) {
#if defined(__x86_64__)
    /* (May run before libgcc's constructor: initialise its CPU model first. It also checks
     * that the kernel saves the vector registers.) */
    __builtin_cpu_init();
    words_state.use_avx2 = __builtin_cpu_supports("avx2");
#endif
}

unsigned words_find(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                    const uintptr_t **at, uintptr_t *val, const void *table) {
#if defined(__x86_64__)
    if (words_state.use_avx2) {
#ifndef OSCAR_DEBUG
        return find_avx2(p, n, base, span, at, val, table);
#else
        /* The two kernels agree on the same words. The words themselves may change while
         * they are read (a concurrent mark reads words the program writes: one may go from a
         * pointer to zero and back between two readings), so they are compared on a copy
         * only this thread sees; what is returned is the vector kernel's on the words. */
        uintptr_t copy[WORDS_CHUNK];
        const uintptr_t *at1[WORDS_CHUNK], *at2[WORDS_CHUNK];
        uintptr_t val1[WORDS_CHUNK], val2[WORDS_CHUNK];
        oscar_assert(n <= WORDS_CHUNK);
        __builtin_memcpy(copy, p, n * sizeof *p);
        unsigned k1 = find_scalar(copy, n, base, span, at1, val1, table);
        unsigned k2 = find_avx2(copy, n, base, span, at2, val2, table);
        oscar_assert(k1 == k2);
        for (unsigned i = 0; i < k1; i++)
            oscar_assert(at1[i] == at2[i] && val1[i] == val2[i]);
        unsigned k = find_avx2(p, n, base, span, at, val, table);
        for (unsigned i = 0; i < k; i++)
            oscar_assert(at[i] >= p && at[i] < p + n && (i == 0 || at[i] > at[i - 1]) &&
                         val[i] - base < span);
        return k;
#endif
    }
#endif
    return find_scalar(p, n, base, span, at, val, table);
}
