/* Protect mode: the only pointer to a freed object lies in many words of a live heap object,
 * and another thread keeps writing those words, the pointer, then zero, then the pointer
 * again, while marks read them (the thread itself holds the pointer in a register all along).
 * A concurrent mark may read any word in either state, and twice in two states: a word
 * written during the mark is read again at its last stop, so the object must never be handed
 * out; once the thread stops and the words are cleared, it is. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>

#define WORDS 1024

static void *volatile *words;
static atomic_int stop;

static void *flicker(void *arg) {
    (void)arg;
    uintptr_t x = (uintptr_t)words[0]; /* (the pointer: in a register only, from here) */
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < WORDS; i++)
            words[i] = (void *)x;
        for (int i = 0; i < WORDS; i++)
            words[i] = NULL;
    }
    x = 0;
    clear_stack(); /* (the stack of an exited thread stays mapped: no stale copies there) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    words = calloc(WORDS, sizeof(void *));
    uintptr_t masked = make_object();
    for (int i = 0; i < WORDS && !control; i++) /* (held before the thread starts) */
        words[i] = (void *)(masked ^ MASK);
    free_object(masked);
    clear_stack();
    pthread_t t;
    pthread_create(&t, NULL, flicker, NULL);
    int held = churn(masked, ROUNDS * 4);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    for (int i = 0; i < WORDS; i++)
        words[i] = NULL;
    clear_stack();
    report(held, released_after(masked, churn(masked, ROUNDS * 8)));
    return 0;
}
