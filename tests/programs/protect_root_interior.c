/* Protect mode: a freed object is not handed out again while the only pointer is an interior
 * one (argument "interior": 24 bytes in) or one past its end (argument "end": object + 48,
 * which is also the start of the next slot of its 48-byte class; "wordend": the same, for an
 * object that ends on a 1 KiB boundary, where the mark's filter begins a new word: the
 * granule before lies in the previous word; "pageend": a 16 KiB object that ends on a heap
 * page's 64 KiB boundary, whose end bit lies in the next page's filter words, which the
 * candidates of that page fill, maybe on another thread); once cleared, it is. See
 * protect_common.h. */
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

#define PAGE_END_SIZE 16384

/* A fresh object of a class four of whose slots fill a 64 KiB heap page, the one that ends
 * on the page's boundary, masked (the ones passed over, at most three, stay live). */
__attribute__((noinline)) static uintptr_t make_object_ending_page(void) {
    for (int n = 0;; n++) {
        unsigned char *p = malloc(PAGE_END_SIZE);
        memset(p, 0x11, PAGE_END_SIZE);
        if (((uintptr_t)p + PAGE_END_SIZE) % 65536 == 0 || n > 100)
            return (uintptr_t)p ^ MASK;
    }
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *shape = argc > 1 ? argv[1] : "";
    int wordend = strcmp(shape, "wordend") == 0, pageend = strcmp(shape, "pageend") == 0;
    int end = wordend || pageend || strcmp(shape, "end") == 0;
    size_t size = pageend ? PAGE_END_SIZE : OBJ_SIZE;
    int rounds = pageend ? ROUNDS / 10 : ROUNDS; /* (each free of 16 KiB may start a mark) */
    uintptr_t m = pageend ? make_object_ending_page()
                  : wordend ? make_object_ending_word()
                            : make_object();
    if (!control)
        hold = (m ^ MASK) + (end ? size : 24);
    free_object(m);
    clear_stack();
    int held = churn_of(m, rounds, size, BATCH);
    hold = 0;
    clear_stack();
    report(held, released_within_of(m, churn_of(m, rounds, size, BATCH), release_wait_secs(),
                                    size));
    return 0;
}
