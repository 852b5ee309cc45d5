/* The three stacks of a use after free in code built without frame pointers: the test
 * compiles this file itself with -O2 -fomit-frame-pointer -g (tests/CMakeLists.txt's -O0
 * build of it is not used). Each step is its own non-inlined function, two deep under main,
 * so a stack that stops early misses main. Empty asm statements keep the calls from being
 * tail calls. */
#include "common.h"

struct record {
    long id;
    char name[40];
};

__attribute__((noinline)) struct record *make_record(long id) {
    struct record *r = malloc(sizeof *r); /* LINE_MALLOC */
    r->id = id;
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) struct record *make_outer(long id) {
    struct record *r = make_record(id * 3); /* LINE_MAKE_OUTER */
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) void drop_record(struct record *r) {
    free(r); /* LINE_FREE */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void drop_outer(struct record *r) {
    drop_record(r); /* LINE_DROP_OUTER */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) long read_record(struct record *volatile r) {
    return r->id; /* LINE_READ */
}

__attribute__((noinline)) long read_outer(struct record *r) {
    long v = read_record(r); /* LINE_READ_OUTER */
    __asm__ volatile("" ::: "memory");
    return v + 1;
}

int main(void) {
    test_init();
    struct record *r = make_outer(7); /* LINE_MAIN_MAKE */
    print_ptr("ptr", r);
    drop_outer(r); /* LINE_MAIN_DROP */
    print_ptr("access", r);
    long v = read_outer(r); /* LINE_MAIN_READ */
    printf("NOT REACHED %ld\n", v);
    return 0;
}
