/* Use after free on a page that a growing realloc gave as room: 3000 B -> 5000 B moves the
 * object to pages with room to grow; 5000 -> 7900 B then grows in place, into the room. After
 * free, the room page must fault like the rest. Expected under oscar: "in place 1", then
 * SIGSEGV, "heap-use-after-free on address <ptr+6000> (READ)" in the 7900-byte region. */
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    char *p = malloc(3000);
    if (!p)
        return 2;
    memset(p, 'a', 3000);
    char *q = realloc(p, 5000);
    if (!q)
        return 2;
    memset(q + 3000, 'b', 2000);
    char *r = realloc(q, 7900);
    if (!r)
        return 2;
    memset(r + 5000, 'c', 2900);
    if (r[0] != 'a' || r[2999] != 'a' || r[3000] != 'b' || r[4999] != 'b' || r[7899] != 'c') {
        printf("realloc lost the contents\n");
        return 4;
    }
    printf("in place %d\n", r == q);
    print_ptr("ptr", r);
    printf("size 7900\noffset 6000\n");
    free(r);
    volatile char *a = r + 6000;
    print_ptr("access", (const void *)a);
    char v = *a;
    printf("NOT REACHED %d\n", v);
    return 0;
}
