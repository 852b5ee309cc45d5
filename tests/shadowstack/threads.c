/* Threads on glibc's stacks and on a user-supplied stack, each recursing deeply through
 * instrumented frames; the output does not depend on scheduling. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

__attribute__((noinline)) static unsigned long depth(unsigned long n, unsigned long acc) {
    volatile char pad[64];
    pad[0] = (char)n;
    if (n == 0)
        return acc + (unsigned long)pad[0];
    return depth(n - 1, acc * 31 + n) + 1;
}

static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    unsigned long r = depth(2000 + id * 100, id);
    return (void *)r;
}

int main(void) {
    pthread_t t[8];
    for (uintptr_t i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 1;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("thread %d: %lu\n", i, (unsigned long)(uintptr_t)r);
    }
    /* A user-supplied stack. */
    size_t size = 1 << 20;
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, size);
    pthread_t u;
    if (pthread_create(&u, &attr, worker, (void *)9) != 0)
        return 1;
    void *r;
    pthread_join(u, &r);
    printf("user stack: %lu\n", (unsigned long)(uintptr_t)r);
    /* Many short threads: glibc reuses its cached stacks. */
    unsigned long sum = 0;
    for (int round = 0; round < 50; round++) {
        pthread_create(&u, NULL, worker, (void *)(uintptr_t)(round % 4));
        pthread_join(u, &r);
        sum += (unsigned long)(uintptr_t)r;
    }
    printf("rounds: %lu\n", sum);
    return 0;
}
