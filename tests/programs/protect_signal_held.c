/* A pointer only the kernel holds: a freed object is the value of a real-time signal the
 * program queued to itself and has not taken yet (blocked: sigqueue, or pthread_sigqueue to
 * this thread with "thread"). The program's own copy is masked (protect_common.h). Prints how
 * often a new allocation of the object's class was the freed object (held_reused), then
 * whether the signal, once taken, carries the freed address ("signal_returns_freed 1"), then,
 * the signal taken (nothing holds the object any more), how often it was handed out again
 * (released_reused). Protect mode reads the values of the signals queued and still pending
 * as roots (scan/kroots.h). With "control" the value is 0: held_reused > 0. */
#define _GNU_SOURCE
#include "protect_common.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int thread = argc > 1 && strcmp(argv[1], "thread") == 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN + 1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    uintptr_t m = make_object();
    union sigval v = {.sival_ptr = control ? NULL : (void *)(m ^ MASK)};
    int err = thread ? pthread_sigqueue(pthread_self(), SIGRTMIN + 1, v)
                     : sigqueue(getpid(), SIGRTMIN + 1, v);
    v.sival_ptr = NULL;
    if (err != 0) {
        perror("sigqueue");
        return 2;
    }
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    siginfo_t si;
    struct timespec wait = {2, 0};
    int got = sigtimedwait(&set, &si, &wait);
    printf("signal_returns_freed %d\n",
           got == SIGRTMIN + 1 && ((uintptr_t)si.si_value.sival_ptr ^ MASK) == m);
    memset(&si, 0, sizeof si);
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
