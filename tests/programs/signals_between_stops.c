/* A thread runs (a loop in the program's own code) while the main thread sends it SIGUSR1
 * every 20 ms, 30 times, and allocates and frees meanwhile (protect mode's marks stop the
 * world back to back; with "fork", forks do). Under glibc the thread takes each signal at
 * once, so none is pending when the next is sent, and its handler runs 30 times. A standard
 * signal sent while the same one is pending merges into it: a thread kept parked across
 * stops back to back, with every signal blocked in the park handler, took none of them, and
 * the program lost signals (waits_across_stops hung in sigsuspend, waiting for the third of
 * three). Prints "handled 30 of 30". */
#define _GNU_SOURCE
#include "common.h"
#include "stops_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#define SENDS 30
#define APART_S 0.02

static atomic_int handled, stop;

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static void *runner(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        ; /* (runs in the program's code: a signal is taken as soon as it comes) */
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        forking |= strcmp(argv[i], "fork") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, runner, NULL);
    for (int i = 0; i < SENDS; i++) {
        double until = now() + APART_S;
        while (now() < until)
            busy();
        pthread_kill(t, SIGUSR1);
    }
    /* The last one: taken within the same time as the others under glibc. */
    double until = now() + 2;
    while (atomic_load(&handled) < SENDS && now() < until)
        busy();
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("handled %d of %d\n", atomic_load(&handled), SENDS);
    return 0;
}
