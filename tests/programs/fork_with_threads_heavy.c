/* The heavier fork_with_threads: 200 forks while 4 threads allocate and free (small and
 * large). Each child checks and overwrites objects the parent holds, allocates and frees,
 * starts and joins a thread of its own, and frees objects allocated by the parent's threads;
 * the parent checks after every fork that the child's writes stayed in the child. A fork
 * whose cost keeps growing with the age of the process fails here: the median of the last
 * WINDOW forks may not be over GROWTH times that of the first WINDOW (a ratio, not a time
 * budget, so a loaded machine does not fail it; the suite's timeout catches a hang). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

#define FORKS 200
#define NSENT 64
#define WINDOW 20
#define GROWTH 8.0

static double took[FORKS];

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n) {
    double s[WINDOW];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), by_value);
    return s[n / 2];
}

static atomic_int stop;
static unsigned char *sentinel[NSENT];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sent_size(int i) { return 1 + (size_t)i * 523 % 9000; }

static void *churn(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg + 1;
    void *win[64] = {0};
    while (!atomic_load(&stop)) {
        int k = (int)(rng_next(&rng) % 64);
        free(win[k]);
        size_t n = 1 + rng_next(&rng) % 20000;
        win[k] = malloc(n);
        if (win[k])
            memset(win[k], k, n < 64 ? n : 64);
    }
    for (int k = 0; k < 64; k++)
        free(win[k]);
    return NULL;
}

static void *child_thread(void *arg) {
    int ok = 1;
    for (int i = 0; i < 100; i++) {
        unsigned char *p = malloc(1 + (size_t)i * 41);
        if (!p)
            return (void *)1;
        fill_pattern(p, 1 + (size_t)i * 41, (uint64_t)i);
        ok &= check_pattern(p, 1 + (size_t)i * 41, (uint64_t)i);
        free(p);
    }
    return ok ? arg : (void *)1;
}

static int child_main(int f) {
    int ok = 1;
    for (int i = 0; i < NSENT; i++) {
        ok &= check_pattern(sentinel[i], sent_size(i), (uint64_t)i);
        memset(sentinel[i], 0xCC, sent_size(i));
    }
    for (int i = 0; i < NSENT; i += 4) {
        free(sentinel[i]);
        sentinel[i] = NULL;
    }
    for (int i = 0; i < 200; i++) {
        unsigned char *p = malloc(1 + (size_t)(i * 37 + f) % 5000);
        if (!p)
            return 0;
        fill_pattern(p, 1 + (size_t)(i * 37 + f) % 5000, (uint64_t)i);
        ok &= check_pattern(p, 1 + (size_t)(i * 37 + f) % 5000, (uint64_t)i);
        free(p);
    }
    if (f % 10 == 0) {
        pthread_t t;
        void *ret = (void *)1;
        if (pthread_create(&t, NULL, child_thread, NULL) != 0)
            return 0;
        pthread_join(t, &ret);
        ok &= ret == NULL;
    }
    return ok;
}

int main(void) {
    test_init();
    for (int i = 0; i < NSENT; i++) {
        sentinel[i] = malloc(sent_size(i));
        fill_pattern(sentinel[i], sent_size(i), (uint64_t)i);
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i);
    int bad_child = 0, bad_parent = 0, done = 0;
    for (int f = 0; f < FORKS; f++, done++) {
        double start = now();
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0)
            _exit(child_main(f) ? 0 : 1);
        int status = 0;
        waitpid(pid, &status, 0);
        took[f] = now() - start;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (bad_child++ < 5)
                printf("fork %d: child status 0x%x\n", f, status);
        }
        for (int i = 0; i < NSENT; i++)
            if (!check_pattern(sentinel[i], sent_size(i), (uint64_t)i))
                bad_parent++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NSENT; i++)
        free(sentinel[i]);
    check(bad_child == 0, "every child saw the parent's objects, allocated and exited cleanly");
    check(bad_parent == 0, "no child's write reached the parent");
    double early = median(took, WINDOW), late = median(took + FORKS - WINDOW, WINDOW);
    if (late > GROWTH * early)
        printf("fork cost grew: median %.1f ms (first %d) -> %.1f ms (last %d)\n", early * 1e3,
               WINDOW, late * 1e3, WINDOW);
    check(done == FORKS && late <= GROWTH * early, "fork does not get slower as the process ages");
    printf("%d forks with 4 busy threads done\n", FORKS);
    return test_finish();
}
