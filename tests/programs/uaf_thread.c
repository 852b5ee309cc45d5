/* Use after free across threads: thread A allocates and frees, thread B (started after A was
 * joined) reads through the dangling pointer. */
#include <pthread.h>
#include "common.h"

static unsigned char *volatile shared;

static void *thread_a(void *arg) {
    (void)arg;
    unsigned char *p = malloc(48);
    for (int i = 0; i < 48; i++)
        p[i] = (unsigned char)i;
    shared = p;
    print_ptr("ptr", p);
    printf("size 48\noffset 16\n");
    free(p);
    return NULL;
}

static void *thread_b(void *arg) {
    (void)arg;
    volatile unsigned char *q = shared + 16;
    print_ptr("access", (const void *)q);
    unsigned char v = *q;
    printf("NOT REACHED %u\n", v);
    return NULL;
}

int main(void) {
    test_init();
    pthread_t a, b;
    if (pthread_create(&a, NULL, thread_a, NULL) != 0)
        return 2;
    pthread_join(a, NULL);
    if (pthread_create(&b, NULL, thread_b, NULL) != 0)
        return 2;
    pthread_join(b, NULL);
    printf("NOT REACHED (joined)\n");
    return 0;
}
