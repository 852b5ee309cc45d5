/* A pointer only the kernel holds: a freed object is still the value of a POSIX timer's
 * sigevent (a program that frees a request but forgets timer_delete). The program's own copy
 * is masked (protect_common.h). Prints how often a new allocation of the object's class was
 * the freed object (held_reused), then whether the timer's signal still carries the freed
 * address ("signal_returns_freed 1"). Protect mode reads the timers' values as roots
 * (scan/kroots.h, /proc/self/timers): held_reused is 0. With "raw" the timer is made by the
 * system call itself, not libc's function (found by the first mark). With "delete"
 * (control) the timer is deleted before the churn: nothing holds the object, held_reused > 0. */
#include "protect_common.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int raw;

/* The timer's id: libc's timer_t, or the kernel's (raw). */
__attribute__((noinline)) static long make_timer(uintptr_t masked) {
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
    ev.sigev_value.sival_ptr = (void *)(masked ^ MASK);
    timer_t t;
    int kernel_id, err = raw ? (int)syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &kernel_id)
                             : timer_create(CLOCK_MONOTONIC, &ev, &t);
    if (err != 0) {
        perror("timer_create");
        exit(2);
    }
    return raw ? kernel_id : (long)(intptr_t)t;
}

static void arm(long id, const struct itimerspec *when) {
    if (raw)
        syscall(SYS_timer_settime, (int)id, 0, when, NULL);
    else
        timer_settime((timer_t)(intptr_t)id, 0, when, NULL);
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int delete = argc > 1 && strcmp(argv[argc - 1], "delete") == 0;
    raw = argc > 1 && strcmp(argv[argc - 1], "raw") == 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    uintptr_t m = make_object();
    long t = make_timer(m);
    if (delete)
        timer_delete((timer_t)(intptr_t)t);
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    if (delete)
        return 0;
    struct itimerspec soon = {.it_value = {0, 1000000}};
    arm(t, &soon);
    siginfo_t si;
    struct timespec wait = {2, 0};
    int got = sigtimedwait(&set, &si, &wait);
    printf("signal_returns_freed %d\n",
           got == SIGRTMIN && ((uintptr_t)si.si_value.sival_ptr ^ MASK) == m);
    return 0;
}
