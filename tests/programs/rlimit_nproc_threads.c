/* A program run under an RLIMIT_NPROC that leaves it one task more than it uses (a service's
 * user, `prlimit --nproc`): it churns (protect mode's marks start Oscar's threads), then makes
 * a thread and forks a child. RLIMIT_NPROC counts every thread of the user's, Oscar's too: the
 * mark's team and marking threads took the last one, and the program's pthread_create and
 * fork failed with EAGAIN, where under glibc both work. Prints what each gave. */
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>

static void *v[4096];

static void churn(long rounds) {
    for (long i = 0; i < rounds; i++) {
        int k = (int)(i % 4096);
        free(v[k]);
        v[k] = malloc((size_t)(i % 3000 + 1));
        memset(v[k], 1, 1);
    }
}

static void *thread_main(void *arg) { return arg; }

int main(void) {
    test_init();
    churn(300000);
    pthread_t t;
    int r = pthread_create(&t, NULL, thread_main, NULL);
    printf("pthread_create: %s\n", r ? strerror(r) : "ok");
    if (!r)
        pthread_join(t, NULL);
    churn(300000);
    pid_t p = fork();
    if (p == 0)
        _exit(7);
    int st = 0;
    if (p < 0)
        printf("fork: %s\n", strerror(errno));
    else if (waitpid(p, &st, 0) == p)
        printf("fork: ok, child status %d\n", WEXITSTATUS(st));
    return 0;
}
