/* 300,000 live small objects freed in an order that fragments every page and run: every
 * other object first (re-verifying the survivors), then 100,000 new objects are allocated and
 * filled while the survivors are live, everything is verified, and the rest is freed
 * backwards. */
#include "common.h"

#define COUNT 300000
#define SECOND 100000

static unsigned char *objs[COUNT], *news[SECOND];
static unsigned short sizes[COUNT], new_sizes[SECOND];

int main(void) {
    test_init();
    uint64_t rng = 777;
    for (int i = 0; i < COUNT; i++) {
        sizes[i] = (unsigned short)(16 + rng_next(&rng) % 113); /* 16..128 bytes */
        objs[i] = malloc(sizes[i]);
        if (!objs[i]) {
            printf("malloc failed at object %d\n", i);
            return 1;
        }
        fill_pattern(objs[i], sizes[i], (uint64_t)i);
    }
    for (int i = 0; i < COUNT; i += 2)
        free(objs[i]);
    unsigned long bad = 0;
    for (int i = 1; i < COUNT; i += 2)
        if (!check_pattern(objs[i], sizes[i], (uint64_t)i))
            bad++;
    check(bad == 0, "survivors intact after freeing every other object");
    printf("freed every other object, %d survivors verified\n", COUNT / 2);

    for (int i = 0; i < SECOND; i++) {
        new_sizes[i] = (unsigned short)(16 + rng_next(&rng) % 113);
        news[i] = malloc(new_sizes[i]);
        if (!news[i]) {
            printf("malloc failed in the second generation at %d\n", i);
            return 1;
        }
        fill_pattern(news[i], new_sizes[i], (uint64_t)i + COUNT);
    }
    bad = 0;
    for (int i = 1; i < COUNT; i += 2)
        if (!check_pattern(objs[i], sizes[i], (uint64_t)i))
            bad++;
    for (int i = 0; i < SECOND; i++)
        if (!check_pattern(news[i], new_sizes[i], (uint64_t)i + COUNT))
            bad++;
    check(bad == 0, "survivors and the second generation intact");
    printf("second generation of %d verified\n", SECOND);

    for (int i = COUNT - 1; i >= 1; i -= 2)
        free(objs[i]);
    for (int i = 0; i < SECOND; i++)
        free(news[i]);
    printf("all freed\n");
    return test_finish();
}
