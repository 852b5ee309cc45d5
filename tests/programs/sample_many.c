/* Protect mode with sampling on: a correct program that allocates, reallocates and frees
 * more objects than the sample pool holds (16,384), in two threads, checking every byte;
 * it prints the same under glibc. */
#include "common.h"
#include <malloc.h>
#include <pthread.h>

#define N 20000

static void *work(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    static __thread unsigned char *keep[64];
    long sum = 0;
    for (int i = 0; i < N; i++) {
        size_t n = 1 + (seed = seed * 1103515245u + 12345u) % 5000;
        unsigned char *p = calloc(1, n);
        check(p[n - 1] == 0, "calloc zeroes");
        memset(p, i & 0xff, n);
        if (i % 3 == 0) {
            p = realloc(p, n + 100);
            check(p[n - 1] == (i & 0xff), "realloc keeps the bytes");
            n += 100;
            memset(p, i & 0xff, n);
        }
        check(malloc_usable_size(p) >= n, "usable size");
        unsigned k = (unsigned)i % 64;
        if (keep[k]) {
            sum += keep[k][0];
            free(keep[k]);
        }
        keep[k] = p;
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
    return (void *)sum;
}

int main(void) {
    test_init();
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("thread %d sum %ld\n", i, (long)r);
    }
    return test_finish();
}
