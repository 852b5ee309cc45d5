/* A thread waits in every libc call that the kernel does not restart after a signal handler
 * (usleep, sleep, nanosleep, thrd_sleep, clock_nanosleep relative and absolute, poll, ppoll,
 * select, pselect, epoll_wait, epoll_pwait, sigtimedwait, sigwaitinfo, sem_wait, sem_timedwait,
 * pause, sigsuspend) while the main thread allocates and frees, so that protect mode's marks
 * stop the world, with a signal, again and again. Under glibc no signal comes: every timed wait
 * takes at least its time and none fails with EINTR. It prints, per call, how many waits failed
 * with EINTR ("eintr_<call>") and how many returned before their time ("early_<call>"): all 0,
 * as under glibc. The waits for a signal (pause, sigsuspend, sigwaitinfo, sem_wait) end by the
 * program's own doing: SIGUSR1 or a post sent by the main thread, and each must end exactly
 * once per signal ("woken_<call> N", as under glibc), not early and never hang. With
 * "interrupt" the main thread also sends SIGUSR1 while the waiter is in poll(-1): that one must
 * still fail with EINTR ("program_signal_interrupts 1"). With "fork" the main thread forks
 * instead of allocating: every mode stops the world for that. */
#define _GNU_SOURCE
#include "common.h"
#include "stops_common.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 6
#define WAIT_MS 30

static atomic_int done, phase;
static volatile sig_atomic_t usr1;
static sem_t sem;
static pthread_t waiter_thread;
static int interrupt;

static void on_usr1(int sig) {
    (void)sig;
    usr1++;
}

enum { USLEEP, SLEEP, NANOSLEEP, THRD_SLEEP, CLOCK_REL, CLOCK_ABS, POLL, PPOLL, SELECT,
       PSELECT, EPOLL, EPOLL_P, SIGTIMEDWAIT, SEM_TIMEDWAIT, CALLS };
static const char *const names[CALLS] = {"usleep", "sleep", "nanosleep", "thrd_sleep",
                                         "clock_nanosleep",
                                         "clock_nanosleep_abs", "poll", "ppoll", "select",
                                         "pselect", "epoll_wait", "epoll_pwait",
                                         "sigtimedwait", "sem_timedwait"};
static int eintr[CALLS], early[CALLS];

/* One timed wait of `call` for WAIT_MS (sleep: 1 s): -1 and errno as the call says. */
static int timed_wait(int call, int epfd) {
    struct timespec ts = {0, WAIT_MS * 1000000L}, rem;
    struct timeval tv = {0, WAIT_MS * 1000};
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2); /* (blocked, never sent: sigtimedwait times out) */
    struct epoll_event ev;
    int err;
    switch (call) {
    case USLEEP: return usleep(WAIT_MS * 1000);
    case SLEEP: return sleep(1) == 0 ? 0 : (errno = EINTR, -1);
    case NANOSLEEP: return nanosleep(&ts, &rem);
    case THRD_SLEEP: return thrd_sleep(&ts, &rem) == 0 ? 0 : (errno = EINTR, -1);
    case CLOCK_REL:
        err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        return err ? (errno = err, -1) : 0;
    case CLOCK_ABS: {
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_nsec += WAIT_MS * 1000000L;
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        return err ? (errno = err, -1) : 0;
    }
    case POLL: return poll(NULL, 0, WAIT_MS);
    case PPOLL: return ppoll(NULL, 0, &ts, NULL);
    case SELECT: return select(0, NULL, NULL, NULL, &tv);
    case PSELECT: return pselect(0, NULL, NULL, NULL, &ts, NULL);
    case EPOLL: return epoll_wait(epfd, &ev, 1, WAIT_MS);
    case EPOLL_P: return epoll_pwait(epfd, &ev, 1, WAIT_MS, NULL);
    case SIGTIMEDWAIT: {
        int r = sigtimedwait(&usr2, NULL, &ts);
        return r < 0 && errno == EAGAIN ? 0 : r;
    }
    default: {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += WAIT_MS * 1000000L;
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        int r = sem_timedwait(&sem, &at);
        return r < 0 && errno == ETIMEDOUT ? 0 : r;
    }
    }
}

/* Until the main thread says so (phase), then `want` program signals or posts: how many
 * times the wait returned. */
static int woken(int want, int how) {
    int n = 0;
    sigset_t none, usr1set;
    sigemptyset(&none);
    sigemptyset(&usr1set);
    sigaddset(&usr1set, SIGUSR1);
    if (how == 2)
        pthread_sigmask(SIG_BLOCK, &usr1set, NULL); /* (sigwaitinfo takes it, no handler) */
    atomic_fetch_add(&phase, 1); /* (the main thread sends once it sees this) */
    while (n < want) {
        int r;
        if (how == 0)
            r = pause();
        else if (how == 1)
            r = sigsuspend(&none);
        else if (how == 2) {
            r = sigwaitinfo(&usr1set, NULL) == SIGUSR1 ? -1 : 0; /* (-1: the signal came) */
            errno = EINTR;
        } else if ((r = sem_wait(&sem)) == 0) {
            r = -1; /* (posted: counts as woken) */
            errno = EINTR;
        } else {
            r = 0; /* (sem_wait failed: errno says why) */
        }
        if (r < 0 && errno == EINTR) {
            n++;
        } else {
            fprintf(stderr, "wait %d returned %d: %s\n", how, r, strerror(errno));
            return -1000 - n; /* an error of another kind */
        }
    }
    if (how == 2)
        pthread_sigmask(SIG_UNBLOCK, &usr1set, NULL);
    return n;
}

static void *waiter(void *arg) {
    (void)arg;
    int epfd = epoll_create1(0);
    for (int round = 0; round < ROUNDS; round++)
        for (int call = 0; call < CALLS; call++) {
            if (call == SLEEP && round > 0)
                continue; /* (one second each: once) */
            double ms = call == SLEEP ? 1000 : WAIT_MS;
            double t0 = now();
            int r = timed_wait(call, epfd);
            double took = (now() - t0) * 1000;
            if (r < 0 && errno == EINTR)
                eintr[call]++;
            else if (took < ms - 1) /* (the kernel's clocks round: 1 ms of slack) */
                early[call]++;
        }
    close(epfd);
    for (int call = 0; call < CALLS; call++)
        printf("eintr_%s %d\nearly_%s %d\n", names[call], eintr[call], names[call], early[call]);
    static const char *const waits[] = {"pause", "sigsuspend", "sigwaitinfo", "sem_wait"};
    for (int how = 0; how < 4; how++)
        printf("woken_%s %d\n", waits[how], woken(3, how));
    if (interrupt) {
        atomic_fetch_add(&phase, 1);
        int r = poll(NULL, 0, -1);
        printf("program_signal_interrupts %d\n", r < 0 && errno == EINTR);
    }
    atomic_store(&done, 1);
    return NULL;
}

/* Send `n` SIGUSR1 (or sem posts) once the waiter has reached phase `at`, 100 ms apart. */
static void send_when(int at, int n, int post) {
    while (atomic_load(&phase) < at && !atomic_load(&done)) {
        busy();
    }
    for (int i = 0; i < n; i++) {
        double until = now() + 0.1;
        while (now() < until) /* (marks or forks keep coming meanwhile) */
            busy();
        if (post)
            sem_post(&sem);
        else
            pthread_kill(waiter_thread, SIGUSR1);
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        interrupt |= strcmp(argv[i], "interrupt") == 0;
        forking |= strcmp(argv[i], "fork") == 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sem_init(&sem, 0, 0);
    pthread_create(&waiter_thread, NULL, waiter, NULL);
    send_when(1, 3, 0); /* pause */
    send_when(2, 3, 0); /* sigsuspend */
    send_when(3, 3, 0); /* sigwaitinfo */
    send_when(4, 3, 1); /* sem_wait */
    if (interrupt)
        send_when(5, 1, 0);
    while (!atomic_load(&done))
        busy();
    pthread_join(waiter_thread, NULL);
    printf("usr1 %d\n", (int)usr1);
    return 0;
}
