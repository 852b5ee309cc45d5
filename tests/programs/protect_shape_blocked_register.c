/* Protect mode: the only pointer to a freed object is in a callee-saved register (r12) of a
 * thread blocked in a read() system call: the kernel keeps the thread's registers while it
 * sleeps, and a parked thread's saved registers are roots. The system call is made by hand
 * (no libc wrapper that could spill r12 on the stack). "sigblock": the thread has first
 * blocked every signal with the raw system call (Oscar's wrappers keep the park signal
 * unblocked; this does not go through them): it cannot be parked, so no mark may hand the
 * object out (they give up instead, and wait before they try again: no free may wait for the
 * 50 ms a failed stop takes each time), and once it is gone, marks go on. "attrmask": the
 * thread is made with every signal blocked by pthread_attr_setsigmask_np (glibc sets that mask
 * itself, not through Oscar's wrappers, but keeps its own signals open): Oscar's second park
 * signal parks it (before, no mark could stop the world, and none ran again). See
 * protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static int pipe_go[2], pipe_ready[2];
static int block_all, attr_mask;

static void *thread_main(void *arg) {
    uintptr_t masked = (uintptr_t)arg;
    if (block_all) {
        uint64_t all = ~0ULL;
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, 8);
    }
    char c = 1;
    /* r12 = masked ^ MASK (or 0); then, by hand, write(pipe_ready[1], &c, 1) (the pointer is
     * held before main frees the object) and read(pipe_go[0], &c, 1); then r12 = 0. */
    __asm__ volatile("movq %[m], %%r12\n\t"
                     "xorq %[k], %%r12\n\t"
                     "movl %[nw], %%eax\n\t"
                     "movl %[ready], %%edi\n\t"
                     "movq %[buf], %%rsi\n\t"
                     "movl $1, %%edx\n\t"
                     "syscall\n\t"
                     "movl %[nr], %%eax\n\t"
                     "movl %[go], %%edi\n\t"
                     "movq %[buf], %%rsi\n\t"
                     "movl $1, %%edx\n\t"
                     "syscall\n\t"
                     "xorl %%r12d, %%r12d"
                     :
                     : [m] "r"(control ? MASK : masked), [k] "r"(MASK), [buf] "r"(&c),
                       [ready] "r"(pipe_ready[1]), [go] "r"(pipe_go[0]),
                       [nw] "i"(SYS_write), [nr] "i"(SYS_read)
                     : "rax", "rdi", "rsi", "rdx", "rcx", "r11", "r12", "memory");
    if (block_all) {
        uint64_t none = ~0ULL;
        syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &none, NULL, 8);
    }
    clear_stack();
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    for (int i = 1; i < argc; i++)
        block_all |= strcmp(argv[i], "sigblock") == 0;
    for (int i = 1; i < argc; i++)
        attr_mask |= strcmp(argv[i], "attrmask") == 0;
    pipe(pipe_go);
    pipe(pipe_ready);
    uintptr_t m = make_object();
    pthread_t t;
    char c = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (attr_mask) {
        sigset_t all;
        sigfillset(&all);
        pthread_attr_setsigmask_np(&attr, &all);
    }
    pthread_create(&t, &attr, thread_main, (void *)m);
    read(pipe_ready[0], &c, 1);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    write(pipe_go[1], &c, 1);
    pthread_join(t, NULL);
    if (block_all)
        usleep(1100 * 1000); /* (marks that could not stop the world wait up to 1 s to retry) */
    clear_stack();
    /* (With sigblock a stale copy of the pointer on this stack may keep the object: the test
     * asks for no release then, and none is waited for.) */
    int released = churn(m, ROUNDS);
    report(held, block_all ? released : released_after(m, released));
    return 0;
}
