/* fork() while other threads are inside malloc/free: the child must not deadlock on an
 * allocator lock and must be able to allocate. 4 churning threads, 50 forks. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static atomic_int stop;

static void *churn(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg + 1;
    void *win[64] = {0};
    while (!atomic_load(&stop)) {
        int k = (int)(rng_next(&rng) % 64);
        free(win[k]);
        win[k] = malloc(1 + rng_next(&rng) % 20000);
    }
    for (int k = 0; k < 64; k++)
        free(win[k]);
    return NULL;
}

int main(void) {
    test_init();
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i);
    int bad = 0;
    for (int f = 0; f < 50; f++) {
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            int ok = 1;
            for (int i = 0; i < 200; i++) {
                unsigned char *p = malloc(1 + (size_t)i * 37);
                if (!p) {
                    ok = 0;
                    break;
                }
                fill_pattern(p, 1 + (size_t)i * 37, i);
                ok &= check_pattern(p, 1 + (size_t)i * 37, i);
                free(p);
            }
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    check(bad == 0, "every child allocated and exited cleanly");
    printf("50 forks with 4 busy threads done\n");
    return test_finish();
}
