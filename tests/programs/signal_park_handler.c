/* The program uses SIGPWR (Oscar's park signal) itself: its handler, installed with
 * sigaction, runs for each SIGPWR it raises, sigaction reports it back as installed, its mask
 * of every signal is accepted, and fork with threads running still works (Oscar's stops go on
 * underneath). With an argument "default", SIGPWR keeps its default action and raise(SIGPWR)
 * kills the program by SIGPWR, as under glibc, even after forks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"
#include "fork_common.h"

static atomic_int ran, stop;

static void on_pwr(int sig) {
    (void)sig;
    atomic_fetch_add(&ran, 1);
}

static void *busy(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void *p = malloc(100);
        free(p);
    }
    return NULL;
}

static int forks(void) {
    int bad = 0;
    for (int f = 0; f < 10; f++)
        bad += fork_empty_child();
    return bad;
}

int main(int argc, char **argv) {
    test_init();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, busy, NULL);
    if (argc > 1) {
        check(forks() == 0, "forks");
        printf("raising SIGPWR with the default action\n");
        raise(SIGPWR);
        printf("NOT REACHED after raise(SIGPWR)\n");
        return 0;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_pwr;
    sigfillset(&sa.sa_mask);
    check(sigaction(SIGPWR, &sa, NULL) == 0, "sigaction");
    check(sigaction(SIGPWR, NULL, &old) == 0 && old.sa_handler == on_pwr,
          "sigaction reports the program's handler");
    for (int i = 0; i < 3; i++)
        raise(SIGPWR);
    check(forks() == 0, "every child exited 0");
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("handler ran %d times\n", atomic_load(&ran));
    return test_finish();
}
