/* Protect mode: the only pointer to a freed object lies in shared memory, and another process
 * (a child, which has no use for the address itself) keeps moving it between two pages of
 * that memory while the program's marks read them: from the one read second to the one read
 * first, and back. The child holds it in a register between the two writes: a register of
 * another process, which no mark of this one reads. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    char *shared = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    void *volatile *a = (void *volatile *)shared;
    void *volatile *b = (void *volatile *)(shared + 4096);
    atomic_int *stop = (atomic_int *)(shared + 8192);
    uintptr_t m = make_object();
    if (!control)
        *a = (void *)(m ^ MASK);
    pid_t child = fork();
    if (child == 0) {
        while (!atomic_load_explicit(stop, memory_order_relaxed)) {
            void *x = *a; /* a -> b -> a, in a register in between */
            *b = x;
            *a = NULL;
            x = *b;
            *a = x;
            *b = NULL;
        }
        _exit(0);
    }
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS * 4);
    atomic_store(stop, 1);
    waitpid(child, NULL, 0);
    *a = *b = NULL;
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS * 8)));
    return 0;
}
