/* The first thread leaves with pthread_exit while two others run: one frees a lot (protect
 * mode's marks come as often as the test makes them), one sleeps a moment. The process ends
 * when the last of them returns, with status 0, as glibc does it (its last pthread calls
 * exit(0)). Under protect mode Oscar's own threads (the mark's team, the marking thread) kept
 * the process alive for ever, and every stop waited in vain for the first thread (a zombie
 * that never parks): each mark gave up after 1 s. Prints what each thread did, then OK from
 * an atexit handler. */
#include "common.h"
#include <pthread.h>
#include <unistd.h>

static void *churner(void *arg) {
    (void)arg;
    unsigned long sum = 0;
    for (int r = 0; r < 3000; r++) {
        unsigned char *volatile objs[64];
        for (int i = 0; i < 64; i++) {
            objs[i] = malloc(48);
            objs[i][0] = (unsigned char)i;
        }
        for (int i = 0; i < 64; i++) {
            sum += objs[i][0];
            free(objs[i]);
        }
    }
    printf("churner sum %lu\n", sum);
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    usleep(100 * 1000);
    printf("sleeper woke\n");
    return NULL;
}

static void at_exit(void) {
    printf("OK\n");
    fflush(stdout);
}

int main(void) {
    test_init();
    atexit(at_exit);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t a, b;
    pthread_create(&b, NULL, sleeper, NULL);
    pthread_join(b, NULL); /* (the order of the lines is fixed: the sleeper first) */
    pthread_create(&a, NULL, churner, NULL);
    pthread_exit(NULL);
}
