/* words: the aligned words of a range whose value points into [base, base + span).
 *
 * The mark reads every live byte of the heap and every root, and most words are not heap
 * pointers: this is its inner loop. With AVX2 (checked once at init), eight words are tested
 * by four vector instructions and one branch; without it, a word at a time. Each word is read
 * once and its value kept: while the world runs (a concurrent mark) a word may change between
 * two reads (a free zeroing it). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* At most this many words per call, so a hit list fits the caller's stack. */
#define WORDS_CHUNK 256

/* Choose the kernel for this CPU (the mark's init: no allocation, no lock). */
void words_init(void);

/* Of the words [p, p + n), n <= WORDS_CHUNK, those with w - base < span: where each lies and
 * its value, in address order. Returns how many. For each one found, the entry of `table`
 * for it (16 bytes per KiB of [base, base + span): the mark's filter) is prefetched at once:
 * spread over the reading, the misses overlap it, as the plain loop did before this module
 * (a burst of them after the reading may find the CPU's few outstanding misses taken). */
unsigned words_find(const uintptr_t *p, size_t n, uintptr_t base, uintptr_t span,
                    const uintptr_t **at, uintptr_t *val, const void *table);
