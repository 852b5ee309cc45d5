/* A growing realloc of an object carved last from its thread's chunk (large.c) extends it
 * over the chunk's free rest, in place: 5000 -> 9000 -> 20000 -> 40000 B. Then a neighbour
 * is carved after it, the object is freed, and its last page (added by the growth) is read.
 * Expected under oscar: "in place 1" (with guard markers), "neighbour intact", then SIGSEGV,
 * "heap-use-after-free on address <ptr+36000> (READ)" in the 40000-byte region. */
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    static const size_t sizes[] = {5000, 9000, 20000, 40000};
    char *p = malloc(sizes[0]);
    if (!p)
        return 2;
    memset(p, 'a', sizes[0]);
    int in_place = 1;
    for (int i = 1; i < 4; i++) {
        char *q = realloc(p, sizes[i]);
        if (!q)
            return 2;
        in_place &= q == p;
        memset(q + sizes[i - 1], 'a' + i, sizes[i] - sizes[i - 1]);
        p = q;
    }
    for (int i = 0; i < 4; i++)
        if (p[sizes[i] - 1] != 'a' + i || p[0] != 'a') {
            printf("realloc lost the contents\n");
            return 4;
        }
    printf("in place %d\n", in_place);
    char *n = malloc(5000);
    if (!n)
        return 2;
    memset(n, 'n', 5000);
    print_ptr("ptr", p);
    printf("size 40000\noffset 36000\n");
    free(p);
    printf("neighbour %s\n", n[0] == 'n' && n[4999] == 'n' ? "intact" : "CORRUPTED");
    volatile char *a = p + 36000;
    print_ptr("access", (const void *)a);
    char v = *a;
    printf("NOT REACHED %d\n", v);
    return 0;
}
