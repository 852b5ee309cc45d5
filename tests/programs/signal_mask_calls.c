/* Every libc call that sets a signal mask or waits with one still works as under glibc with
 * Oscar's wrappers (which keep the park signal unblockable): sigprocmask, pthread_sigmask,
 * sigwait, sigwaitinfo, sigtimedwait, sigsuspend, ppoll, pselect, epoll_pwait, sighold,
 * sigrelse, sigset(SIG_HOLD), sigblock/sigsetmask, sigignore, sysv_signal; and a fork while
 * a thread waits in sigwait with every signal blocked. Prints only allocator-independent
 * results. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "fork_common.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static volatile sig_atomic_t got_usr2;
static void on_usr2(int sig) { got_usr2 = sig; }

static void *waiter(void *arg) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    int sig = 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    int r = sigwait(&set, &sig);
    *(int *)arg = r == 0 ? sig : -1;
    return NULL;
}

int main(void) {
    test_init();
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    check(sigprocmask(SIG_BLOCK, &set, &old) == 0, "sigprocmask");
    check(pthread_sigmask(SIG_BLOCK, NULL, &old) == 0 && sigismember(&old, SIGUSR1) == 1,
          "SIGUSR1 blocked");
    check(sigprocmask(99, &set, NULL) == -1 && errno == EINVAL, "sigprocmask EINVAL");

    raise(SIGUSR1);
    siginfo_t si;
    check(sigwaitinfo(&set, &si) == SIGUSR1, "sigwaitinfo");
    struct timespec ts = {0, 1000000};
    check(sigtimedwait(&set, &si, &ts) == -1 && errno == EAGAIN, "sigtimedwait times out");
    raise(SIGUSR1);
    check(sigtimedwait(&set, &si, &ts) == SIGUSR1, "sigtimedwait");

    /* sigwait in a thread with every signal blocked, while we fork. */
    int waited = 0;
    pthread_t t;
    pthread_create(&t, NULL, waiter, &waited);
    usleep(20000);
    for (int f = 0; f < 5; f++)
        check(fork_empty_child() == 0, "child");
    pthread_kill(t, SIGUSR1);
    pthread_join(t, NULL);
    check(waited == SIGUSR1, "sigwait in a thread");

    /* sigsuspend, ppoll, pselect, epoll_pwait with a mask that lets SIGUSR2 in. */
    signal(SIGUSR2, on_usr2);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigset_t wait_mask;
    sigemptyset(&wait_mask);
    raise(SIGUSR2);
    check(sigsuspend(&wait_mask) == -1 && errno == EINTR && got_usr2 == SIGUSR2, "sigsuspend");
    got_usr2 = 0;
    raise(SIGUSR2);
    struct timespec long_ts = {5, 0};
    check(ppoll(NULL, 0, &long_ts, &wait_mask) == -1 && errno == EINTR && got_usr2, "ppoll");
    got_usr2 = 0;
    raise(SIGUSR2);
    check(pselect(0, NULL, NULL, NULL, &long_ts, &wait_mask) == -1 && errno == EINTR && got_usr2,
          "pselect");
    got_usr2 = 0;
    raise(SIGUSR2);
    int ep = epoll_create1(0);
    struct epoll_event ev;
    check(epoll_pwait(ep, &ev, 1, 5000, &wait_mask) == -1 && errno == EINTR && got_usr2,
          "epoll_pwait");
    close(ep);

    /* The old interfaces. */
    sigemptyset(&set);
    sigprocmask(SIG_SETMASK, &set, NULL);
    check(sighold(SIGUSR1) == 0, "sighold");
    sigprocmask(SIG_BLOCK, NULL, &old);
    check(sigismember(&old, SIGUSR1) == 1, "sighold blocks");
    check(sigrelse(SIGUSR1) == 0, "sigrelse");
    check(sigset(SIGUSR1, SIG_HOLD) == SIG_DFL, "sigset SIG_HOLD returns the disposition");
    check(sigset(SIGUSR1, SIG_DFL) == SIG_HOLD, "sigset returns SIG_HOLD when it was held");
    int bits = sigblock(1 << (SIGUSR2 - 1));
    check(bits == 0, "sigblock returns the old mask");
    check(sigsetmask(0) == 1 << (SIGUSR2 - 1), "sigsetmask returns the old mask");
    check(sigignore(SIGUSR2) == 0 && signal(SIGUSR2, SIG_DFL) == SIG_IGN, "sigignore");
    check(sysv_signal(SIGUSR2, on_usr2) == SIG_DFL, "sysv_signal");
    got_usr2 = 0;
    raise(SIGUSR2);
    struct sigaction now;
    sigaction(SIGUSR2, NULL, &now);
    check(got_usr2 && now.sa_handler == SIG_DFL, "sysv_signal's handler is reset on delivery");
    check(signal(0, SIG_DFL) == SIG_ERR && errno == EINVAL, "signal(0) is EINVAL");
    printf("signal mask calls done\n");
    return test_finish();
}
