/* Issue 18, defect 1: two threads allocate ~120,000 objects between them (most kept, some
 * freed: revocations that split mappings) while the main thread forks; run with
 * OSCAR_GUARDS=0 OSCAR_MAP_RESERVE=60000 the process reaches the mapping limit and Oscar
 * degrades. Nothing may hang. Prints the same under every allocator; "OK" at the end. */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define PER_THREAD 60000

static atomic_int running;
/* Both threads hold everything they kept before either frees it: the peak of mappings is
 * then the sum of both (about 2 x 17,000), never one thread's share when the scheduler
 * happened to run them one after the other (CI: degraded mode never set in). */
static pthread_barrier_t both_kept;

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg + 7;
    char **keep = calloc(PER_THREAD, sizeof *keep);
    long bad = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        size_t n = 16 + rng_next(&rng) % 200;
        keep[i] = malloc(n);
        if (!keep[i])
            abort(); /* the other thread waits at the barrier */
        memset(keep[i], (char)i, n);
        if (i % 2 == 0 && i > 0) { /* free an older one: a hole in a run of shadows */
            int k = (int)(rng_next(&rng) % (uint64_t)i);
            if (keep[k]) {
                bad += keep[k][0] != (char)k;
                free(keep[k]);
                keep[k] = NULL;
            }
        }
    }
    pthread_barrier_wait(&both_kept);
    for (int i = 0; i < PER_THREAD; i++) {
        if (keep[i])
            bad += keep[i][0] != (char)i;
        free(keep[i]);
    }
    free(keep);
    atomic_fetch_sub(&running, 1);
    return (void *)(uintptr_t)(bad != 0);
}

int main(void) {
    test_init();
    pthread_t t[2];
    atomic_store(&running, 2);
    pthread_barrier_init(&both_kept, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    int forks = 0, bad_child = 0;
    while (atomic_load(&running) > 0 && forks < 150) {
        pid_t pid = fork();
        if (pid == 0) {
            char *p = malloc(100);
            _exit(p ? 0 : 1);
        }
        if (pid < 0)
            break;
        int st;
        waitpid(pid, &st, 0);
        bad_child += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        forks++;
    }
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        check(r == NULL, "worker's objects intact");
    }
    check(bad_child == 0, "every child allocated and exited");
    printf("two threads, forks while they allocate: done\n");
    return test_finish();
}
