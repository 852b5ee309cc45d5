/* words: the aligned words of a range that may mark a candidate of the mark.
 *
 * The mark reads every live byte of the heap and every root, and most words mark nothing:
 * this is its inner loop. A word may mark when it points into [base, base + span) (the heap)
 * and the filter's bit for it is set. The filter holds, for each 64 granules of 16 bytes of
 * the heap (a KiB), two words; this module reads the first, whose bit g % 64 is set when
 * granule g belongs to a candidate or begins right after the end of one (the mark tells the
 * two apart: scan/mark.c).
 *
 * The bits are tested in the vector registers, a gather of the filter words of 4 or 8 heap
 * pointers at a time (AVX2, AVX-512F; chosen once at init): in a heap of objects that point
 * to each other (CPython's), a fifth to a half of the words point into the heap, and taking
 * each of those out of the vector to test its bit cost 2-4 times the reading (docs/
 * benchmarks.md, "The mark's word filter in the vector registers"). Each word is read once
 * and what is returned is the value tested: while the world runs (a concurrent mark) a word
 * may change between two reads (a free zeroing it). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* At most this many words per call, so a hit list fits the caller's stack. */
#define WORDS_CHUNK 256

/* Choose the kernel for this CPU (the mark's init: no allocation, no lock). */
void words_init(void);

/* Of the words [p, p + n), n <= WORDS_CHUNK, those that may mark: where each lies and its
 * value, in address order. Returns how many. The filter does not change during the call
 * (the mark sets it before it reads, and clears it after). */
unsigned words_find(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                    const _Atomic uint64_t *filter, const uintptr_t **at, uintptr_t *val);
