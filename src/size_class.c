/* size_class: see size_class.h. */
#include "size_class.h"

const uint16_t class_size[NUM_CLASSES] = {16,  32,  48,  64,  80,   96,   112,  128,
                                          160, 192, 224, 256, 320,  384,  448,  512,
                                          640, 768, 896, 1024, 1280, 1536, 1792, 2048};

/* class_of_16[i]: the first class of at least 16*i bytes (generated from class_size). */
const uint8_t class_of_16[OSCAR_SMALL_MAX / 16 + 1] = {
    0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 9, 10, 10, 11,
    11, 12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15,
    15, 16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 17, 17,
    17, 18, 18, 18, 18, 18, 18, 18, 18, 19, 19, 19, 19, 19, 19, 19,
    19, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
    20, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21,
    21, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22,
    22, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23, 23,
    23,
};

int size_class_aligned(size_t size, size_t align) {
    for (unsigned c = size_class_of(size); c < NUM_CLASSES; c++)
        if (class_size[c] % align == 0)
            return (int)c;
    return -1;
}
