/* A thread exits while holding objects; other threads then use and free them. Round after
 * round: a producer thread allocates objects of every size class (and large ones), fills
 * them, hands them over and exits; a new consumer thread (which may be handed the producer's
 * recycled per-thread cache) first allocates objects of its own, checks that they do not
 * overlap any handed-over object, checks the handed-over objects, rewrites and frees half;
 * main checks and frees the rest. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "common.h"

#define NOBJ 400
#define ROUNDS 200

static unsigned char *handed[NOBJ];
static size_t hsize[NOBJ];

static size_t obj_size(int i, int round) {
    if (i % 50 == 49)
        return 5000 + (size_t)(i * 37 + round) % 70000; /* large */
    return 1 + (size_t)(i * 13 + round * 7) % 2048;
}

static void *producer(void *arg) {
    int round = (int)(intptr_t)arg;
    for (int i = 0; i < NOBJ; i++) {
        hsize[i] = obj_size(i, round);
        handed[i] = malloc(hsize[i]);
        if (!handed[i])
            return (void *)1;
        fill_pattern(handed[i], hsize[i], (uint64_t)(round * NOBJ + i));
    }
    /* Some churn, so the exiting thread's cache holds freed and ready objects too. */
    for (int i = 0; i < 300; i++)
        free(malloc(1 + (size_t)i * 7));
    return NULL; /* exits holding every handed[] object */
}

static int overlaps(const unsigned char *p, size_t n) {
    for (int i = 0; i < NOBJ; i++)
        if (handed[i] && p < handed[i] + hsize[i] && handed[i] < p + n)
            return 1;
    return 0;
}

static void *consumer(void *arg) {
    int round = (int)(intptr_t)arg;
    int ok = 1;
    unsigned char *own[NOBJ];
    for (int i = 0; i < NOBJ; i++) {
        size_t n = obj_size(NOBJ - 1 - i, round);
        own[i] = malloc(n);
        if (!own[i])
            return (void *)1;
        ok &= !overlaps(own[i], n);
        memset(own[i], 0xA5, n);
    }
    for (int i = 0; i < NOBJ; i++)
        ok &= check_pattern(handed[i], hsize[i], (uint64_t)(round * NOBJ + i));
    for (int i = 0; i < NOBJ; i += 2) {
        memset(handed[i], 0x5A, hsize[i]); /* writable */
        free(handed[i]);
        handed[i] = NULL;
    }
    for (int i = 0; i < NOBJ; i++)
        free(own[i]);
    return ok ? NULL : (void *)1;
}

int main(void) {
    test_init();
    int bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t p, c;
        void *ret;
        pthread_create(&p, NULL, producer, (void *)(intptr_t)round);
        pthread_join(p, &ret);
        bad += ret != NULL;
        pthread_create(&c, NULL, consumer, (void *)(intptr_t)round);
        pthread_join(c, &ret);
        bad += ret != NULL;
        for (int i = 1; i < NOBJ; i += 2) {
            bad += !check_pattern(handed[i], hsize[i], (uint64_t)(round * NOBJ + i));
            free(handed[i]);
            handed[i] = NULL;
        }
    }
    check(bad == 0, "objects outliving their thread stayed intact and were freed by others");
    printf("%d rounds of hand-over done\n", ROUNDS);
    return test_finish();
}
