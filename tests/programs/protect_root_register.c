/* Protect mode: a freed object is not handed out again while the only pointer to it is in a
 * register (r12) of a thread spinning in a loop; once the thread has cleared it and exited,
 * it is. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>

static atomic_int started, stop;

static void *spinner(void *arg) {
    uintptr_t m = (uintptr_t)arg;
    uintptr_t mask = control ? m : MASK; /* control: r12 = 0, no pointer */
    atomic_store(&started, 1);
    /* r12 = m ^ mask while spinning, computed and cleared inside the asm: no copy of the raw
     * address ever reaches memory. */
    __asm__ volatile("mov %[m], %%r12\n\t"
                     "xor %[mask], %%r12\n\t"
                     "1:\n\t"
                     "pause\n\t"
                     "cmpl $0, %[stop]\n\t"
                     "je 1b\n\t"
                     "xor %%r12, %%r12\n\t"
                     :
                     : [m] "r"(m), [mask] "r"(mask), [stop] "m"(stop)
                     : "r12", "memory", "cc");
    clear_stack(); /* (the park signal's frames below this one saved r12) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    uintptr_t m = make_object();
    pthread_t t;
    pthread_create(&t, NULL, spinner, (void *)m);
    while (!atomic_load(&started))
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
