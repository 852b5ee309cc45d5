/* Protect mode with sampling (the test sets OSCAR_SAMPLE_RATE=2: about every other
 * allocation sampled): the only pointer to a freed object lies in a live object that was
 * sampled, on a page of its own outside the heap (heap/sample.h: the object ends where its
 * page ends). The freed object itself is one that was not sampled (a sampled one is never
 * handed out again). See protect_common.h. */
#include "protect_common.h"

#include <stdbool.h>

#define HOLDER_SIZE 64

static bool sampled(const void *p, size_t size) {
    return ((uintptr_t)p & 4095) == 4096 - size;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile *holder = NULL;
    for (int i = 0; i < 1000 && !holder; i++) {
        void *p = malloc(HOLDER_SIZE);
        if (sampled(p, HOLDER_SIZE))
            holder = p;
        else
            free(p);
    }
    uintptr_t m = 0;
    for (int i = 0; i < 1000 && !m; i++) {
        uintptr_t c = make_object();
        if (sampled((void *)(c ^ MASK), OBJ_SIZE))
            free_object(c);
        else
            m = c;
    }
    if (!holder || !m) {
        printf("unsupported: no sampled holder (is OSCAR_SAMPLE_RATE=2 set?)\n");
        return 0;
    }
    if (!control)
        holder[0] = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    holder[0] = NULL;
    clear_stack();
    int released = released_after(m, churn(m, ROUNDS));
    free((void *)holder);
    report(held, released);
    return 0;
}
