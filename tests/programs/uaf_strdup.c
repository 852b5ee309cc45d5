/* Use after free of a string that libc allocated (strdup calls malloc inside libc). */
#define _GNU_SOURCE
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    char *s = strdup("a string duplicated inside libc");
    if (!s)
        return 2;
    print_ptr("ptr", s);
    printf("size %zu\noffset 5\n", strlen(s) + 1);
    free(s);
    volatile char *q = s + 5;
    print_ptr("access", (const void *)q);
    char c = *q;
    printf("NOT REACHED %d\n", c);
    return 0;
}
