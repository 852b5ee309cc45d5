/* Protect mode: a thread that only frees (a consumer of objects another thread allocates)
 * must trigger marks too, or its quarantine never drains: 400 MiB pass through a ring from a
 * producer to a consumer; prints the peak resident set in MiB (VmHWM). */
#include "common.h"
#include <pthread.h>
#include <stdatomic.h>

#define RING 1024
#define COUNT 3000000
static void *_Atomic ring[RING];

static void *consumer(void *arg) {
    (void)arg;
    for (long i = 0; i < COUNT; i++) {
        void *p;
        while (!(p = atomic_exchange(&ring[i % RING], NULL)))
            ;
        free(p);
    }
    return NULL;
}

int main(void) {
    test_init();
    pthread_t t;
    pthread_create(&t, NULL, consumer, NULL);
    for (long i = 0; i < COUNT; i++) {
        void *p = malloc(128);
        memset(p, 1, 128);
        while (atomic_load(&ring[i % RING]))
            ;
        atomic_store(&ring[i % RING], p);
    }
    pthread_join(t, NULL);
    printf("peak_rss_mib %ld\n", peak_rss_kib() / 1024);
    return 0;
}
