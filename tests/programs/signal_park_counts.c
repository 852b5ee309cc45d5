/* The program sends SIGPWR (Oscar's park signal) to its own threads, one at a time, while
 * other threads churn and fork (so Oscar's stops send SIGPWR too, in every mode): each one it
 * sends must reach its handler, exactly once, as under glibc. SIGPWR is a standard signal, so
 * a stop's request pending at the same thread merges with the program's in the kernel; Oscar
 * must still run the program's handler (CI: signal_park_handler "handler ran 2 times" of 3).
 *
 * Argument: how the program sends it
 *   raise  raise(SIGPWR): delivered before raise returns
 *   self   pthread_kill(pthread_self(), SIGPWR): the same
 *   tgkill tgkill(getpid(), gettid(), SIGPWR): the same
 *   other  pthread_kill of a waiting thread; the sender waits for its handler to count it
 *   kill   kill(getpid(), SIGPWR) (the whole process: any thread may take it); waits the same
 * A second argument "nofork": no thread forks (the stops are then only protect mode's).
 * Prints how many sends waited longer than SLOW_S (a send to another thread takes Oscar's
 * world lock between two stops: with stops back to back it used to lose that race again and
 * again, up to 0.7 s a send), "handler ran N times" (N sent) and OK. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"
#include "fork_common.h"

#define SENDS 1000
#define SLOW_S 0.25

static atomic_int ran, stop;

static void on_pwr(int sig) {
    (void)sig;
    atomic_fetch_add(&ran, 1);
}

static void *forker(void *arg) {
    int *bad = arg;
    while (!atomic_load(&stop)) {
        *bad += fork_empty_child();
        usleep(2000);
    }
    return NULL;
}

static void *waiter(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        usleep(1000);
    return NULL;
}

int main(int argc, char **argv) {
    test_init();
    const char *how = argc > 1 ? argv[1] : "raise";
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_pwr;
    check(sigaction(SIGPWR, &sa, NULL) == 0, "sigaction");
    int bad_forks = 0;
    pthread_t f, w;
    churners_start(2);
    bool forks = !(argc > 2 && !strcmp(argv[2], "nofork"));
    if (forks)
        pthread_create(&f, NULL, forker, &bad_forks);
    pthread_create(&w, NULL, waiter, NULL);
    int lost = 0, slow = 0;
    for (int i = 0; i < SENDS; i++) {
        int before = atomic_load(&ran);
        double sent_at = mono_seconds();
        if (!strcmp(how, "raise"))
            raise(SIGPWR);
        else if (!strcmp(how, "self"))
            pthread_kill(pthread_self(), SIGPWR);
        else if (!strcmp(how, "tgkill"))
            tgkill(getpid(), gettid(), SIGPWR);
        else if (!strcmp(how, "other"))
            pthread_kill(w, SIGPWR);
        else
            kill(getpid(), SIGPWR);
        if (mono_seconds() - sent_at > SLOW_S)
            slow++;
        /* (to the thread itself: already run; else wait for it, at most 5 s) */
        for (double t0 = mono_seconds(); atomic_load(&ran) == before && mono_seconds() - t0 < 5;)
            usleep(50);
        if (atomic_load(&ran) == before && lost++ == 0)
            printf("FAIL send %d never reached the handler\n", i);
    }
    atomic_store(&stop, 1);
    churners_stop();
    if (forks)
        pthread_join(f, NULL);
    pthread_join(w, NULL);
    check(bad_forks == 0, "every child exited 0");
    check(lost == 0, "no send lost");
    printf("sends slower than %.2f s: %d\n", SLOW_S, slow);
    printf("handler ran %d times\n", atomic_load(&ran));
    return test_finish();
}
