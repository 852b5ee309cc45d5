/* Start and join 2,000 threads (16 at a time), each doing a few mallocs and frees, some of
 * which outlive the thread and are freed by main (thread-cache teardown). */
#include <pthread.h>
#include <string.h>
#include "common.h"

#define TOTAL 2000
#define BATCH 16

static void *leftover[TOTAL];

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned char *a = malloc(24), *b = malloc(700), *c = malloc(5000);
    if (!a || !b || !c)
        return (void *)1;
    fill_pattern(a, 24, id);
    fill_pattern(b, 700, id);
    fill_pattern(c, 5000, id);
    int ok = check_pattern(a, 24, id) && check_pattern(b, 700, id) && check_pattern(c, 5000, id);
    free(a);
    free(c);
    leftover[id] = b; /* freed by main after the thread is gone */
    return ok ? NULL : (void *)1;
}

int main(void) {
    test_init();
    int failures = 0;
    for (int start = 0; start < TOTAL; start += BATCH) {
        pthread_t t[BATCH];
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(start + i)) != 0) {
                printf("pthread_create failed at %d\n", start + i);
                return 1;
            }
        for (int i = 0; i < BATCH; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            if (ret)
                failures++;
        }
    }
    int bad = 0;
    for (int i = 0; i < TOTAL; i++) {
        if (!leftover[i] || !check_pattern(leftover[i], 700, i))
            bad++;
        free(leftover[i]);
    }
    check(failures == 0, "every thread's objects were intact");
    check(bad == 0, "objects outliving their thread were intact");
    printf("%d threads started and joined\n", TOTAL);
    return test_finish();
}
