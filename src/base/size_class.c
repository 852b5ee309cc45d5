/* size_class: see size_class.h. */
#include "base/size_class.h"

const uint16_t class_size[NUM_CLASSES] = {16,  32,  48,  64,  80,   96,   112,  128,
                                          160, 192, 224, 256, 320,  384,  448,  512,
                                          640, 768, 896, 1024, 1280, 1536, 1792, 2048};

/* Slots per page, and ceil(2^24 / size): (off * class_recip) >> 24 is off / size exactly for
 * every off < 4096 (the error term stays below 1/size), without a division. */
const uint16_t class_slots_of[NUM_CLASSES] = {256, 128, 85, 64, 51, 42, 36, 32, 25, 21, 18, 16, 12, 10, 9, 8, 6, 5, 4, 4, 3, 2, 2, 2};
const uint32_t class_recip[NUM_CLASSES] = {1048576, 524288, 349526, 262144, 209716, 174763, 149797, 131072, 104858, 87382, 74899, 65536, 52429, 43691, 37450, 32768, 26215, 21846, 18725, 16384, 13108, 10923, 9363, 8192};

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
