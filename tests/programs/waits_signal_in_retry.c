/* A thread waits without end (poll, ppoll, select, pselect, epoll_wait, epoll_pwait with no
 * timeout, pause, sigsuspend; nanosleep, clock_nanosleep and sleep for 1000 s) until the program's own SIGUSR1 interrupts it, while the main thread
 * allocates and frees (protect mode's marks stop the world again and again, cutting the wait
 * short: Oscar's wrapper calls it again), or with "fork" forks (every mode stops the world
 * for that). Under glibc each wait ends with EINTR at the first
 * SIGUSR1. The signal may come just as a wrapper is about to call again, after it looked for
 * a handler of the program's: a wait made again then would go on although the program's
 * signal came (OSCAR_TEST_RETRY_SPIN_US widens that moment). Prints, per call, how many
 * SIGUSR1 beyond the first it took to end ("missed_<call>", 0 as under glibc: the main thread,
 * which frees nothing after the signal, so that no mark comes to cut the wait short again,
 * sends another every 300 ms until the wait ends, so the program never hangs) and whether it
 * ended with EINTR ("eintr_<call> 1"). */
#define _GNU_SOURCE
#include "common.h"
#include "stops_common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { POLL, PPOLL, SELECT, PSELECT, EPOLL, EPOLL_P, PAUSE, SIGSUSPEND, NANOSLEEP, CLOCK_REL,
       SLEEP, CALLS };
static const char *const names[CALLS] = {"poll", "ppoll", "select", "pselect", "epoll_wait",
                                         "epoll_pwait", "pause", "sigsuspend", "nanosleep",
                                         "clock_nanosleep", "sleep"};
static atomic_int waiting = -1, ended = -1;
static pthread_t waiter_thread;
static int epfd;

static void on_usr1(int sig) { (void)sig; }

static int wait_forever(int call) {
    struct epoll_event ev;
    switch (call) {
    case POLL: return poll(NULL, 0, -1);
    case PPOLL: return ppoll(NULL, 0, NULL, NULL);
    case SELECT: return select(0, NULL, NULL, NULL, NULL);
    case PSELECT: return pselect(0, NULL, NULL, NULL, NULL, NULL);
    case EPOLL: return epoll_wait(epfd, &ev, 1, -1);
    case EPOLL_P: return epoll_pwait(epfd, &ev, 1, -1, NULL);
    case PAUSE: return pause();
    case NANOSLEEP: {
        struct timespec ts = {1000, 0}, rem;
        int r = nanosleep(&ts, &rem);
        if (r < 0 && (rem.tv_sec < 900 || rem.tv_sec > 1000))
            printf("nanosleep's rem %ld\n", (long)rem.tv_sec);
        return r;
    }
    case CLOCK_REL: {
        struct timespec ts = {1000, 0};
        int err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        return err ? (errno = err, -1) : 0;
    }
    case SLEEP: return sleep(1000) ? (errno = EINTR, -1) : 0;
    default: {
        sigset_t none;
        sigemptyset(&none);
        return sigsuspend(&none);
    }
    }
}

static int eintr[CALLS];

static void *waiter(void *arg) {
    (void)arg;
    for (int call = 0; call < CALLS; call++) {
        atomic_store(&waiting, call);
        int r = wait_forever(call);
        eintr[call] = r < 0 && errno == EINTR;
        atomic_store(&ended, call);
    }
    return NULL;
}

static void busy_for(double secs) {
    double until = now() + secs;
    while (now() < until)
        busy();
}

int main(int argc, char **argv) {
    forking = argc > 1 && strcmp(argv[1], "fork") == 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    epfd = epoll_create1(0);
    pthread_create(&waiter_thread, NULL, waiter, NULL);
    int missed[CALLS] = {0};
    for (int call = 0; call < CALLS; call++) {
        while (atomic_load(&waiting) < call)
            busy();
        busy_for(0.05); /* (in its wait by now, cut short again and again) */
        pthread_kill(waiter_thread, SIGUSR1);
        for (;;) {
            /* (No more frees meanwhile: no mark comes to cut the wait short again, and a
             * wait that went on past the signal would go on.) */
            double until = now() + 0.3;
            while (now() < until && atomic_load(&ended) < call)
                sched_yield();
            if (atomic_load(&ended) >= call)
                break;
            missed[call]++; /* (the wait went on: once more) */
            pthread_kill(waiter_thread, SIGUSR1);
        }
    }
    pthread_join(waiter_thread, NULL);
    for (int call = 0; call < CALLS; call++)
        printf("missed_%s %d\neintr_%s %d\n", names[call], missed[call], names[call],
               eintr[call]);
    return 0;
}
