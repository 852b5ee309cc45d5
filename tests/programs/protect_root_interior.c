/* Protect mode: a freed object is not handed out again while the only pointer is an interior
 * one (argument "interior": 24 bytes in) or one past its end (argument "end": object + 48,
 * which is also the start of the next slot of its 48-byte class; "wordend": the same, for an
 * object that ends on a 1 KiB boundary, where the mark's filter begins a new word: the
 * granule before lies in the previous word); once cleared, it is. See protect_common.h. */
#include "protect_common.h"

static volatile uintptr_t hold;

/* A fresh object that ends on a 1 KiB boundary (the ones passed over stay live), masked. */
__attribute__((noinline)) static uintptr_t make_object_ending_word(void) {
    for (int n = 0;; n++) {
        uintptr_t m = make_object();
        if (((m ^ MASK) + OBJ_SIZE) % 1024 == 0 || n > 100000)
            return m;
    }
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int wordend = argc > 1 && strcmp(argv[1], "wordend") == 0;
    int end = wordend || (argc > 1 && strcmp(argv[1], "end") == 0);
    uintptr_t m = wordend ? make_object_ending_word() : make_object();
    if (!control)
        hold = (m ^ MASK) + (end ? OBJ_SIZE : 24);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    hold = 0;
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
    return 0;
}
