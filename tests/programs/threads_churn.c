/* 6 threads churning malloc/free/realloc of mixed sizes, each keeping a window of live objects
 * filled with a per-object pattern that is verified before every free. */
#include <pthread.h>
#include "common.h"

#define THREADS 6
#define ITERATIONS 30000
#define WINDOW 256

struct slot {
    unsigned char *p;
    size_t n;
    uint64_t seed;
};

static unsigned long errors[THREADS];

static void *churn(void *arg) {
    int id = (int)(intptr_t)arg;
    struct slot win[WINDOW] = {{0}};
    uint64_t rng = 1000 + (uint64_t)id;
    for (int it = 0; it < ITERATIONS; it++) {
        struct slot *s = &win[rng_next(&rng) % WINDOW];
        if (s->p) {
            if (!check_pattern(s->p, s->n, s->seed))
                errors[id]++;
            if (rng_next(&rng) % 4 == 0) {
                size_t n = 1 + rng_next(&rng) % 3000;
                unsigned char *q = realloc(s->p, n);
                if (!q) {
                    errors[id]++;
                    continue;
                }
                size_t keep = n < s->n ? n : s->n;
                if (!check_pattern(q, keep, s->seed))
                    errors[id]++;
                s->p = q;
                s->n = n;
                fill_pattern(q, n, s->seed);
                continue;
            }
            free(s->p);
            s->p = NULL;
        }
        uint64_t r = rng_next(&rng);
        size_t n = r % 64 == 0 ? 1 + r % 70000 : 1 + r % 512;
        s->p = malloc(n);
        if (!s->p) {
            errors[id]++;
            continue;
        }
        s->n = n;
        s->seed = r;
        fill_pattern(s->p, n, r);
    }
    for (int i = 0; i < WINDOW; i++)
        if (win[i].p) {
            if (!check_pattern(win[i].p, win[i].n, win[i].seed))
                errors[id]++;
            free(win[i].p);
        }
    return NULL;
}

int main(void) {
    test_init();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, churn, (void *)(intptr_t)i) != 0)
            return 2;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    unsigned long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += errors[i];
    check(total == 0, "no thread saw a corrupted object");
    printf("%d threads x %d iterations done\n", THREADS, ITERATIONS);
    return test_finish();
}
