/* A thread blocks SIGPWR (Oscar's park signal) with a raw rt_sigprocmask, past Oscar's
 * wrappers, and sleeps in read(): a stop cannot park it. fork must still work, and must not
 * wait for the stop's 1 s timeout each time (the stop gives up once /proc shows the signal
 * blocked): 10 forks take well under 10 s. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

static int pfd[2];

static void *blocked(void *arg) {
    (void)arg;
    unsigned long mask = 1UL << (SIGPWR - 1);
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &mask, NULL, 8);
    char c;
    read(pfd[0], &c, 1);
    return NULL;
}

int main(void) {
    test_init();
    pipe(pfd);
    pthread_t t;
    pthread_create(&t, NULL, blocked, NULL);
    usleep(50000);
    char *obj = malloc(100);
    strcpy(obj, "parent");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int bad = 0;
    for (int f = 0; f < 10; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            strcpy(obj, "child");
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    check(bad == 0, "every child exited 0");
    check(strcmp(obj, "parent") == 0, "the parent's object is unchanged");
    check(s < 5.0, "10 forks in under 5 s");
    write(pfd[1], "x", 1);
    pthread_join(t, NULL);
    free(obj);
    printf("10 forks with a thread that blocks the park signal\n");
    return test_finish();
}
