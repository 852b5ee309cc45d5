/* Stop-the-world (fork parks every other thread, then resumes them) with threads in every
 * shape: 2 blocked in read() on a pipe, 2 spinning, 2 with every signal blocked by
 * pthread_sigmask(SIG_BLOCK, all) (they sleep and spin in turns), 2 running a signal handler
 * on an alternate signal stack, and one that keeps starting short-lived threads (threads exit
 * during stops). The main thread forks 100 times; each child checks the heap and exits 0; after
 * each fork every spinning thread must make progress again (it was resumed). Then the readers
 * get their bytes, everything is joined, and the output is the same as under glibc. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

#define FORKS 100

static atomic_int stop;
static atomic_long progress[8];
static int pipes[2][2];
static long got[2];
static atomic_long started;
static unsigned char *shared_obj;

static void *reader(void *arg) {
    long i = (long)arg;
    char buf[16];
    long n = read(pipes[i][0], buf, sizeof buf);
    got[i] = n;
    return NULL;
}

static void *spinner(void *arg) {
    long i = (long)arg;
    char *p = malloc(100); /* (a pointer kept in a register and on the stack) */
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&progress[i], 1);
        p[atomic_load(&progress[i]) % 100] = 1;
    }
    free(p);
    return NULL;
}

static void *blocker(void *arg) {
    long i = (long)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&progress[i], 1);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static __thread long alt_index;

static void on_usr1(int sig) {
    (void)sig;
    while (!atomic_load(&stop))
        atomic_fetch_add(&progress[alt_index], 1);
}

static void *on_altstack(void *arg) {
    alt_index = (long)arg;
    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    pthread_kill(pthread_self(), SIGUSR1); /* runs on_usr1 on the alternate stack */
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    return NULL;
}

static void *short_lived(void *arg) {
    (void)arg;
    void *p = malloc(64);
    free(p);
    return NULL;
}

static void *starter(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, NULL) == 0) {
            pthread_join(t, NULL);
            atomic_fetch_add(&started, 1);
        }
    }
    return NULL;
}

static int progressed_since(long before[8]) {
    /* Every spinning thread moves again within 10 s (it was resumed). */
    for (int w = 0; w < 10000; w++) {
        int all = 1;
        for (int i = 2; i < 8; i++)
            all &= atomic_load(&progress[i]) > before[i];
        if (all)
            return 1;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int main(void) {
    test_init();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    shared_obj = malloc(4000);
    memset(shared_obj, 7, 4000);
    pthread_t t[9];
    for (long i = 0; i < 2; i++) {
        pipe(pipes[i]);
        pthread_create(&t[i], NULL, reader, (void *)i);
    }
    for (long i = 2; i < 4; i++)
        pthread_create(&t[i], NULL, spinner, (void *)i);
    for (long i = 4; i < 6; i++)
        pthread_create(&t[i], NULL, blocker, (void *)i);
    for (long i = 6; i < 8; i++)
        pthread_create(&t[i], NULL, on_altstack, (void *)i);
    pthread_create(&t[8], NULL, starter, NULL);

    int bad_child = 0, stuck = 0;
    for (int f = 0; f < FORKS; f++) {
        long before[8];
        for (int i = 0; i < 8; i++)
            before[i] = atomic_load(&progress[i]);
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            int ok = shared_obj[3999] == 7;
            for (int i = 0; i < 50; i++) {
                char *p = malloc(10 + (size_t)i * 50);
                ok &= p != NULL;
                free(p);
            }
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        bad_child += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        stuck += !progressed_since(before);
    }
    check(bad_child == 0, "every child exited 0");
    check(stuck == 0, "every thread runs again after each fork");
    write(pipes[0][1], "hello", 5);
    write(pipes[1][1], "world!", 6);
    atomic_store(&stop, 1);
    for (int i = 0; i < 9; i++)
        pthread_join(t[i], NULL);
    check(atomic_load(&started) > 0, "short-lived threads were started");
    printf("%d forks; readers got %ld and %ld bytes\n", FORKS, got[0], got[1]);
    free(shared_obj);
    return test_finish();
}
