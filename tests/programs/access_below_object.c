/* Issue 20, item 5: a read just below an object whose previous page holds nothing (the first
 * medium or large object of a fresh region). Was reported as a use after free, then as a wild
 * access; it is a heap-buffer-overflow to the left of the object, with the distance.
 * argv[1]: the object's size; argv[2]: how many bytes below its start (negative: above it:
 * -size reads the first byte after its end). */
#include "common.h"

int main(int argc, char **argv) {
    test_init();
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 100;
    long below = argc > 2 ? atol(argv[2]) : 1;
    char *p = malloc(n);
    print_ptr("ptr", p);
    printf("size %zu\n", n);
    volatile char c = p[-below];
    printf("read %d\n", c);
    printf("NOT REACHED\n");
    return 0;
}
