/* A use after free read through twelve nested inlined functions (always_inline, so the -O0
 * build inlines them too), as C++ library code nests them (a std::vector<std::string>'s
 * destructor is eleven deep): the report shows each as a frame of its own, innermost first,
 * every frame's line inside its own function, down to main. Each function sits on a line of its
 * own (inline12 calls inline11, ... inline1 reads): the test checks name against line. */
#include "common.h"

#define INL static inline __attribute__((always_inline)) long
INL inline1(const long *p) { return p[2]; }
INL inline2(const long *p) { return inline1(p) + 1; }
INL inline3(const long *p) { return inline2(p) + 1; }
INL inline4(const long *p) { return inline3(p) + 1; }
INL inline5(const long *p) { return inline4(p) + 1; }
INL inline6(const long *p) { return inline5(p) + 1; }
INL inline7(const long *p) { return inline6(p) + 1; }
INL inline8(const long *p) { return inline7(p) + 1; }
INL inline9(const long *p) { return inline8(p) + 1; }
INL inline10(const long *p) { return inline9(p) + 1; }
INL inline11(const long *p) { return inline10(p) + 1; }
INL inline12(const long *p) { return inline11(p) + 1; }

int main(void) {
    test_init();
    long *p = malloc(8 * sizeof *p);
    print_ptr("ptr", p);
    free(p);
    print_ptr("access", p + 2);
    long v = inline12(p); /* LINE_MAIN */
    printf("NOT REACHED %ld\n", v);
    return 0;
}
