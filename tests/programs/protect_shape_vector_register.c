/* Protect mode: the only pointer to a freed object is in a vector register (xmm15) of a thread
 * spinning in a loop: the saved registers of a parked thread include its vector state. See
 * protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>

static atomic_int stop, ready;

static void *spinner(void *arg) {
    uintptr_t raw = control ? 0 : ((uintptr_t)arg ^ MASK);
    __asm__ volatile("movq %0, %%xmm15" : : "r"(raw) : "xmm15");
    raw = 0;
    atomic_store(&ready, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        __asm__ volatile("" ::: "memory");
    __asm__ volatile("pxor %%xmm15, %%xmm15" : : : "xmm15");
    clear_stack();
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    uintptr_t m = make_object();
    pthread_t t;
    pthread_create(&t, NULL, spinner, (void *)m);
    while (!atomic_load(&ready))
        ;
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
    return 0;
}
