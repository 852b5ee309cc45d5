/* Protect mode: a freed object is not handed out again while the only pointer to it is in a
 * register (r12) of a thread spinning in a loop; once the thread has cleared it and exited,
 * it is. With "gsbase" the register is the thread's GS base (arch_prctl(ARCH_SET_GS), as
 * Wine and some runtimes set it), which a signal frame does not save; with "gsbase self" the
 * main thread's own, the thread that frees and churns (and runs the stopped marks). With
 * "pidns" the whole test runs in a pid namespace of its own whose /proc is still its
 * parent's (unshare -p without a /proc of its own, as some sandboxes do): /proc lists the
 * threads by the parent namespace's numbers, and stops sent their requests to those, which
 * name no thread here; the spinning thread was never stopped and the object it held was
 * handed out again. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <asm/prctl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static atomic_int started, stop;

/* GS base = m ^ mask, set by the system call from inside the asm (the raw address is in rsi
 * only between the xor and the clear). */
__attribute__((noinline)) static void set_gs(uintptr_t m, uintptr_t mask) {
    long r;
    __asm__ volatile("mov %[m], %%rsi\n\t"
                     "xor %[mask], %%rsi\n\t"
                     "syscall\n\t"
                     "xor %%esi, %%esi\n\t"
                     : "=a"(r)
                     : "0"((long)SYS_arch_prctl), "D"((long)ARCH_SET_GS), [m] "r"(m),
                       [mask] "r"(mask)
                     : "rsi", "rcx", "r11", "memory", "cc");
    if (r != 0) {
        printf("unsupported arch_prctl(ARCH_SET_GS) failed\n");
        exit(0);
    }
}

/* The GS base holds the pointer while the thread spins, then 0. */
static void *gs_spinner(void *arg) {
    uintptr_t m = (uintptr_t)arg;
    set_gs(m, control ? m : MASK);
    atomic_store(&started, 1);
    while (!atomic_load(&stop))
        __asm__ volatile("pause");
    syscall(SYS_arch_prctl, ARCH_SET_GS, 0L);
    clear_stack(); /* (the park signal's frames below this one hold the GS base) */
    return NULL;
}

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

/* The rest of the test in a child, the first process of a new pid namespace; /proc stays. */
static void enter_pid_namespace(void) {
    if (unshare(CLONE_NEWPID) != 0) {
        printf("unsupported unshare(CLONE_NEWPID): %s\n", strerror(errno));
        exit(0);
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid > 0) { /* (_exit: the child's statistics are the test's, not this process's) */
        int st;
        if (waitpid(pid, &st, 0) != pid)
            _exit(2);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    if (argc > 1 && strcmp(argv[1], "pidns") == 0)
        enter_pid_namespace();
    uintptr_t m = make_object();
    if (argc > 2 && strcmp(argv[2], "self") == 0) { /* the freeing (and marking) thread's own */
        set_gs(m, control ? m : MASK);
        free_object(m);
        clear_stack();
        int held = churn(m, ROUNDS);
        syscall(SYS_arch_prctl, ARCH_SET_GS, 0L);
        clear_stack();
        report(held, released_after(m, churn(m, ROUNDS)));
        return 0;
    }
    pthread_t t;
    int gs = argc > 1 && strcmp(argv[1], "gsbase") == 0;
    pthread_create(&t, NULL, gs ? gs_spinner : spinner, (void *)m);
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
