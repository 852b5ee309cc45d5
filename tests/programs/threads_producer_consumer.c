/* Producer/consumer: 2 producers malloc and fill messages, 2 consumers verify and free them
 * (every object is freed by a thread other than the one that allocated it). */
#include <pthread.h>
#include <string.h>
#include "common.h"

#define PER_PRODUCER 100000
#define PRODUCERS 2
#define CONSUMERS 2
#define QUEUE 1024

struct msg {
    uint64_t seq;
    size_t n;
    unsigned char data[];
};

static struct msg *queue[QUEUE];
static int head, tail, count, producers_left = PRODUCERS;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER, not_empty = PTHREAD_COND_INITIALIZER;
static unsigned long consumed[CONSUMERS], bad[CONSUMERS];
static uint64_t seq_sum[CONSUMERS];

static void *producer(void *arg) {
    uint64_t base = (uint64_t)(intptr_t)arg * PER_PRODUCER;
    uint64_t rng = base + 1;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        size_t n = rng_next(&rng) % 400;
        struct msg *m = malloc(sizeof *m + n);
        if (!m)
            abort();
        m->seq = base + i;
        m->n = n;
        fill_pattern(m->data, n, m->seq);
        pthread_mutex_lock(&lock);
        while (count == QUEUE)
            pthread_cond_wait(&not_full, &lock);
        queue[tail] = m;
        tail = (tail + 1) % QUEUE;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    producers_left--;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *consumer(void *arg) {
    int id = (int)(intptr_t)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (count == 0 && producers_left > 0)
            pthread_cond_wait(&not_empty, &lock);
        if (count == 0) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        struct msg *m = queue[head];
        head = (head + 1) % QUEUE;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
        if (!check_pattern(m->data, m->n, m->seq))
            bad[id]++;
        seq_sum[id] += m->seq;
        consumed[id]++;
        free(m);
    }
}

int main(void) {
    test_init();
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)(intptr_t)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    unsigned long total = 0, total_bad = 0;
    uint64_t sum = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        total += consumed[i];
        total_bad += bad[i];
        sum += seq_sum[i];
    }
    check(total_bad == 0, "every message arrived intact");
    check(total == (unsigned long)PRODUCERS * PER_PRODUCER, "every message consumed");
    printf("consumed %lu messages, sequence sum %llu\n", total, (unsigned long long)sum);
    return test_finish();
}
