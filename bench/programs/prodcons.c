/* prodcons: objects allocated by one thread and freed by another, the pattern that defeats
 * thread-local caches. PAIRS producer threads each send COUNT objects (32..1024 bytes, filled)
 * through a bounded queue to PAIRS consumer threads, which check and free them.
 * usage: prodcons COUNT_PER_PRODUCER [PAIRS] */
#include <pthread.h>
#include <string.h>
#include "bench.h"

#define QCAP 1024
static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    unsigned char *items[QCAP];
    size_t sizes[QCAP];
    long head, tail;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static long count;

static void *producer(void *arg) {
    uint64_t seed = 0xD1B54A32D192ED03ULL + (uintptr_t)arg;
    for (long i = 0; i < count; i++) {
        size_t n = 32 + bench_rand(&seed) % 993;
        unsigned char *p = malloc(n);
        memset(p, (int)(i & 0xff), n);
        pthread_mutex_lock(&q.lock);
        while (q.tail - q.head == QCAP)
            pthread_cond_wait(&q.not_full, &q.lock);
        q.items[q.tail % QCAP] = p;
        q.sizes[q.tail % QCAP] = n;
        q.tail++;
        pthread_cond_signal(&q.not_empty);
        pthread_mutex_unlock(&q.lock);
    }
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    uint64_t sum = 0;
    for (long i = 0; i < count; i++) {
        pthread_mutex_lock(&q.lock);
        while (q.tail == q.head)
            pthread_cond_wait(&q.not_empty, &q.lock);
        unsigned char *p = q.items[q.head % QCAP];
        size_t n = q.sizes[q.head % QCAP];
        q.head++;
        pthread_cond_signal(&q.not_full);
        pthread_mutex_unlock(&q.lock);
        sum += p[0] + p[n - 1];
        free(p);
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
    count = bench_arg(argc, argv, 1, 100000);
    long pairs = bench_arg(argc, argv, 2, 2);
    pthread_t prod[16], cons[16];
    if (pairs > 16) pairs = 16;
    for (long t = 0; t < pairs; t++) {
        pthread_create(&prod[t], NULL, producer, (void *)(uintptr_t)t);
        pthread_create(&cons[t], NULL, consumer, NULL);
    }
    uint64_t sum = 0;
    for (long t = 0; t < pairs; t++) {
        void *r;
        pthread_join(prod[t], NULL);
        pthread_join(cons[t], &r);
        sum += (uint64_t)(uintptr_t)r;
    }
    bench_report(sum, (uint64_t)pairs * (uint64_t)count);
    return 0;
}
