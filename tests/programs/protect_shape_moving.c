/* Protect mode: while marks run, another thread keeps moving the only pointer to a freed
 * object between a global, its own stack and registers, and freshly allocated heap objects
 * (each freed once the pointer has moved on). At every instant some root holds it, so it must
 * never be handed out again; once the thread stops and drops it, it is. See
 * protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>

static void *volatile global;
static atomic_int stop;

static void *mover(void *arg) {
    (void)arg;
    unsigned long n = 0;
    while (!atomic_load(&stop)) {
        void *volatile local = global; /* global -> stack */
        global = NULL;
        void **box = malloc(256 + (n++ % 7) * 16); /* stack -> a fresh object (a class
                                                    * apart from the freed one's) */
        box[1] = local;
        local = NULL;
        void **box2 = malloc(512);                 /* object -> object */
        box2[5] = box[1];
        box[1] = NULL;
        free(box);
        global = box2[5];                          /* object -> global */
        box2[5] = NULL;
        free(box2);
    }
    clear_stack(); /* (the stack of an exited thread stays mapped: no stale copies there) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    uintptr_t m = make_object();
    if (!control)
        global = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    pthread_t t;
    pthread_create(&t, NULL, mover, NULL);
    int held = churn(m, ROUNDS * 4);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    global = NULL;
    clear_stack();
    report(held, churn(m, ROUNDS * 8)); /* (not waited for: the test does not ask) */ /* (its page may have left this thread's cache) */
    return 0;
}
