/* Protect mode: the only pointer to a freed object lies in another freed object that a root
 * still points to (a use after free that writes: the program stores the pointer through its
 * dangling pointer). The holder is never handed out again (the root keeps it), so the
 * program can read the pointer back through it: the object it names must not be handed out
 * either. "chain": two freed holders, the root pointing to the first, the first to the
 * second, the second to the object. "large": the holder is a large object (64 KiB).
 * "many": 70,000 more freed objects held by a live array (more than a mark notes one by one:
 * it then reads every held object again, scan/mark.c's held_read).
 * Once the pointer is cleared (through the dangling pointer again), the object is reused.
 * See protect_common.h. */
#include "protect_common.h"

#include <stdbool.h>

/* The root: the dangling pointer to the (first) holder, kept in plain sight. */
void *volatile *volatile dangling;

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    bool chain = false, large = false, many = false;
    for (int i = 1; i < argc; i++) {
        chain |= strcmp(argv[i], "chain") == 0;
        large |= strcmp(argv[i], "large") == 0;
        many |= strcmp(argv[i], "many") == 0;
    }
    enum { MANY = 70000 };
    void *volatile *pinned = calloc(MANY, sizeof(void *));
    for (int i = 0; many && i < MANY; i++) {
        pinned[i] = malloc(32);
        free((void *)pinned[i]);
    }
    size_t hsize = large ? 65536 : 128; /* (not OBJ_SIZE's class: the churn leaves it be) */
    void *volatile *first = malloc(hsize);
    memset((void *)first, 0x33, hsize);
    dangling = first;
    free((void *)first);
    first = NULL;
    void *volatile *last = dangling;
    if (chain) {
        void *volatile *second = malloc(hsize);
        memset((void *)second, 0x44, hsize);
        free((void *)second);
        dangling[7] = (void *)second; /* use after free: the first holds the second */
        last = second;
        second = NULL;
    }
    uintptr_t m = make_object();
    if (!control)
        last[3] = (void *)(m ^ MASK); /* use after free: the last holder holds the object */
    last = NULL;
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    void *volatile *h = dangling;
    if (chain)
        h = (void *volatile *)h[7];
    h[3] = NULL;
    h = NULL;
    clear_stack();
    int released = released_after(m, churn(m, ROUNDS));
    dangling = NULL;
    free((void *)pinned);
    report(held, released);
    return 0;
}
