/* Use after free through the old pointer of a realloc that moved the object (16 B -> 200 KB).
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <old> (READ)", region of the
 * old 16-byte object. */
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    char *old = malloc(16);
    if (!old)
        return 2;
    strcpy(old, "fifteen chars..");
    char *neu = realloc(old, 200000);
    if (!neu)
        return 2;
    print_ptr("ptr", old);
    print_ptr("new", neu);
    printf("size 16\noffset 4\n");
    if (neu == old) {
        printf("realloc did not move the object\n");
        return 3;
    }
    if (strcmp(neu, "fifteen chars..") != 0) {
        printf("realloc lost the contents\n");
        return 4;
    }
    volatile char *q = old + 4;
    print_ptr("access", (const void *)q);
    char v = *q;
    printf("NOT REACHED %d\n", v);
    return 0;
}
