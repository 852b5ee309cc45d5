/* 400,000 live small objects, each allocated right after a temporary that is then freed (the
 * pattern of a program building a big structure: parse buffer, node, free the buffer...), so
 * freed slots are reused everywhere and free slots are scattered over every page. Then the
 * last object kept is freed and read: it must still fault at once (strict protection, not the
 * degraded mode near vm.max_map_count). */
#include "common.h"

#define COUNT 400000

static unsigned char *keep[COUNT];

int main(void) {
    test_init();
    for (int i = 0; i < COUNT; i++) {
        unsigned char *tmp = malloc(24);
        keep[i] = malloc(24);
        if (!tmp || !keep[i]) {
            printf("malloc failed at object %d\n", i);
            return 1;
        }
        fill_pattern(keep[i], 24, (uint64_t)i);
        free(tmp);
    }
    unsigned long bad = 0;
    for (int i = 0; i < COUNT; i++)
        if (!check_pattern(keep[i], 24, (uint64_t)i))
            bad++;
    check(bad == 0, "every kept object intact");
    printf("%d objects kept and verified\n", COUNT);
    unsigned char *last = keep[COUNT - 1];
    print_ptr("ptr", last);
    free(last);
    print_ptr("access", last + 8);
    unsigned char v = *(volatile unsigned char *)(last + 8);
    printf("NOT REACHED %u\n", v);
    return test_finish();
}
