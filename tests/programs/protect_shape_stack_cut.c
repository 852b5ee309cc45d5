/* Protect mode: a parked thread's stack is read from its stack pointer up (below it lies dead
 * stack), but the memory below was live in two shapes, and an object only it held was
 * handed out again in every run:
 *   guarded  a thread's stack (pthread_attr_setstack) in the upper part of one mapping of the
 *            program's whose first page is PROT_NONE (like a stack glibc made, a guard below
 *            it) and whose lower part is a buffer of the program's holding the pointer
 *   inmain   a thread's stack that is an array in a frame of main's, on [stack]; main's
 *            deeper frame holds the pointer while main waits in a handler on its alternate
 *            stack, and the other thread's stack pointer cut [stack] above main's frames
 * Now a mapping that holds a stack the program gave a thread is not cut, and [stack] is cut
 * by the main thread only. (See protect_common.h.)
 * usage: protect_shape_stack_cut guarded|inmain [control] */
#define _GNU_SOURCE
#include "protect_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#define THREAD_STACK (1 << 20)

static int go[2], ready[2];
static uintptr_t object;
static int held;
static atomic_int waiting, made;

static void *blocked(void *arg) {
    (void)arg;
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
        exit(2);
    return NULL;
}

static void guarded(void) {
    size_t total = 2 << 20;
    char *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(map, 4096, PROT_NONE);
    char *buf = map + 4096, *stack = map + 65536;
    memset(buf, 0, 65536 - 4096);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstack(&at, stack, total - 65536);
    pthread_t t;
    if (pipe(go) || pipe(ready) || pthread_create(&t, &at, blocked, NULL)) {
        printf("cannot start the thread\n");
        exit(2);
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        exit(2);
    check_held_in((void *volatile *)(buf + 1024));
    if (write(go[1], &c, 1) != 1)
        exit(2);
    pthread_join(t, NULL);
}

static void on_usr1(int sig) {
    (void)sig;
    char c;
    atomic_store(&waiting, 1);
    if (read(go[0], &c, 1) != 1)
        _exit(2);
}

static void *churner(void *arg) {
    (void)arg;
    object = make_object();
    atomic_store(&made, 1);
    while (!atomic_load(&waiting))
        ;
    free_object(object);
    clear_stack();
    held = churn(object, ROUNDS);
    char c = 0;
    if (write(go[1], &c, 1) != 1)
        exit(2);
    clear_stack();
    return NULL;
}

/* The only pointer, masked in memory but for the xor in place, in this frame below the
 * thread's stack; then a signal whose handler waits on the alternate stack. */
__attribute__((noinline)) static void hold(void) {
    volatile uintptr_t local = control ? 0 : object;
    if (!control)
        __asm__ volatile("xorq %1, (%0)" : : "r"(&local), "r"(MASK) : "memory");
    raise(SIGUSR1);
    local = 0;
}

__attribute__((noinline)) static void in_main(void) {
    static char *volatile keep;
    char stack[THREAD_STACK] __attribute__((aligned(4096)));
    keep = stack;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstack(&at, stack, THREAD_STACK);
    pthread_t t;
    if (pthread_create(&t, &at, churner, NULL)) {
        printf("cannot start the thread\n");
        exit(2);
    }
    while (!atomic_load(&made))
        ;
    hold();
    pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "inmain")) {
        if (pipe(go))
            return 2;
        stack_t ss = {.ss_sp = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                      .ss_size = 65536};
        sigaltstack(&ss, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGUSR1, &sa, NULL);
        in_main();
        clear_stack();
        report(held, released_after(object, churn(object, ROUNDS)));
        return 0;
    }
    guarded();
    return 0;
}
