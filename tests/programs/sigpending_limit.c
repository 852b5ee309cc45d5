/* A program whose RLIMIT_SIGPENDING leaves no room for a queued signal (a sandbox may set it
 * to 0; a user with many signals queued reaches it too): the kernel still delivers a
 * standard signal sent with sigqueue, but without its siginfo. A stop of the world parks
 * each thread with such a signal (SIGPWR, its request told from the program's own by a value
 * in the siginfo): with the value lost, the park handler took the request for the program's
 * SIGPWR and passed it on to its default action, and the process died ("Power failure") at
 * the first stop, in every mode. A second thread waits on a pipe meanwhile; the main thread
 * churns (protect mode: marks) and forks a few times (every mode: a stop around each fork),
 * then its own SIGPWR, caught, must still reach its handler.
 *
 * usage: sigpending_limit */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int wake[2];
static volatile sig_atomic_t pwr;

static void on_pwr(int sig) {
    (void)sig;
    pwr++;
}

static void *waiter(void *arg) {
    (void)arg;
    char c;
    while (read(wake[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

int main(void) {
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_SIGPENDING, &none) != 0) {
        perror("setrlimit");
        return 2;
    }
    pthread_t t;
    if (pipe(wake) != 0 || pthread_create(&t, NULL, waiter, NULL) != 0) {
        perror("thread");
        return 2;
    }
    static unsigned char *table[512];
    unsigned long x = 1, sum = 0;
    for (int r = 0; r < 100000; r++) { /* about 100 MiB freed */
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        unsigned i = (unsigned)(x >> 33) % 512;
        size_t n = 16 + (size_t)((x >> 13) % 2048);
        free(table[i]);
        table[i] = malloc(n);
        if (!table[i])
            return 1;
        memset(table[i], r & 0x7f, n);
        sum += table[i][n - 1];
    }
    for (int k = 0; k < 5; k++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(7);
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 7) {
            printf("fork %d failed\n", k);
            return 1;
        }
    }
    printf("sum %lu\n", sum);
    signal(SIGPWR, on_pwr);
    kill(getpid(), SIGPWR);
    printf("the program's own SIGPWR reached its handler: %d\n", (int)pwr);
    if (write(wake[1], "x", 1) != 1 || pthread_join(t, NULL) != 0)
        return 1;
    printf("done\n");
    return 0;
}
