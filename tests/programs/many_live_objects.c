/* 300,000 small objects of mixed sizes live at once (one shadow page each under oscar: far
 * more than the default vm.max_map_count of 65530 if every shadow were its own mapping), each
 * filled with its own pattern, all verified, then freed in allocation order. */
#include "common.h"

#define COUNT 300000

int main(void) {
    test_init();
    unsigned char **objs = malloc(COUNT * sizeof *objs);
    unsigned short *sizes = malloc(COUNT * sizeof *sizes);
    if (!objs || !sizes)
        return 2;
    uint64_t rng = 12345;
    for (int i = 0; i < COUNT; i++) {
        sizes[i] = (unsigned short)(8 + rng_next(&rng) % 249); /* 8..256 bytes */
        objs[i] = malloc(sizes[i]);
        if (!objs[i]) {
            printf("malloc failed at object %d\n", i);
            return 1;
        }
        fill_pattern(objs[i], sizes[i], (uint64_t)i);
    }
    printf("allocated %d\n", COUNT);
    unsigned long bad = 0, sum = 0;
    for (int i = 0; i < COUNT; i++) {
        if (!check_pattern(objs[i], sizes[i], (uint64_t)i))
            bad++;
        sum += objs[i][sizes[i] / 2];
    }
    check(bad == 0, "every object keeps its pattern");
    printf("verified %d, checksum %lu\n", COUNT, sum);
    for (int i = 0; i < COUNT; i++)
        free(objs[i]);
    free(objs);
    free(sizes);
    printf("freed %d\n", COUNT);
    return test_finish();
}
