/* size_class: the small size classes. Every class size is a multiple of 16, so every slot
 * (slot * size inside its canonical page) is 16-byte aligned. */
#ifndef OSCAR_SIZE_CLASS_H
#define OSCAR_SIZE_CLASS_H
#include "base/core.h"

#define NUM_CLASSES 24
extern const uint16_t class_size[NUM_CLASSES];
extern const uint8_t class_of_16[OSCAR_SMALL_MAX / 16 + 1]; /* index: (size + 15) / 16 */

static inline unsigned size_class_of(size_t size) { return class_of_16[(size + 15) >> 4]; }
extern const uint16_t class_slots_of[NUM_CLASSES];
extern const uint32_t class_recip[NUM_CLASSES];
static inline unsigned class_slots(unsigned cls) { return class_slots_of[cls]; }
/* off / class_size[cls] for an offset inside a page, by multiplication. */
static inline unsigned class_slot_at(uintptr_t off, unsigned cls) {
    return (unsigned)((off * class_recip[cls]) >> 24);
}
/* Smallest class >= size whose size is a multiple of align, or -1. */
int size_class_aligned(size_t size, size_t align);
#endif
