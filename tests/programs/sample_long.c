/* Protect mode, every allocation sampled (OSCAR_SAMPLE_RATE=1): a long run of a correct
 * program keeps working and keeps sampling far past the first 16,384 sampled objects, while
 * the kernel mapping count stays bounded (a freed sampled page must not become a mapping of
 * its own: the growth is printed on stderr). A thread frees objects another allocated; a forked child allocates, reads and
 * frees, the parent's objects among them. It prints the same under glibc. */
#include "common.h"
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 60000
#define LIVE 1000

static unsigned char *live[LIVE];
static size_t sizes[LIVE];

/* Lines of /proc/self/maps, read with a stack buffer. */
static long maps_lines(void) {
    int fd = open("/proc/self/maps", O_RDONLY);
    char buf[4096];
    long n = 0, r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        for (long i = 0; i < r; i++)
            n += buf[i] == '\n';
    close(fd);
    return n;
}

static void put(unsigned k, size_t n) {
    unsigned char *p = (k & 1) ? calloc(1, n) : malloc(n);
    check(p != NULL, "allocation");
    if (k & 1)
        check(p[0] == 0 && p[n - 1] == 0, "calloc zeroes");
    check(malloc_usable_size(p) >= n, "usable size");
    memset(p, (int)(k & 0xff), n);
    live[k] = p;
    sizes[k] = n;
}

static long take(unsigned k) {
    unsigned char *p = live[k];
    check(p[0] == (k & 0xff) && p[sizes[k] - 1] == (k & 0xff), "contents kept");
    long v = p[0];
    free(p);
    live[k] = NULL;
    return v;
}

static void *free_half(void *arg) {
    long sum = 0;
    for (unsigned k = 0; k < LIVE; k += 2)
        sum += take(k);
    return (void *)sum;
}

int main(void) {
    test_init();
    long before = maps_lines(), most = before;
    long sum = 0;
    for (unsigned i = 0; i < ROUNDS; i++) {
        unsigned k = i % LIVE;
        if (live[k])
            sum += take(k);
        put(k, 1 + (i * 7919u) % 3000);
        if (i % 997 == 0) {
            unsigned char *q = realloc(live[k], sizes[k] + 500);
            check(q[sizes[k] - 1] == (k & 0xff), "realloc keeps the bytes");
            memset(q, (int)(k & 0xff), sizes[k] + 500);
            live[k] = q;
            sizes[k] += 500;
        }
        if (i % 5000 == 0) {
            long m = maps_lines();
            most = m > most ? m : most;
        }
    }
    printf("sum %ld\n", sum);
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, free_half, NULL);
    pthread_join(t, &r);
    printf("freed by another thread: %ld\n", (long)r);
    pid_t pid = fork();
    if (pid == 0) {
        long s = 0;
        for (unsigned i = 0; i < 5000; i++) {
            unsigned k = 2 * (i % (LIVE / 2)); /* (the slots the thread emptied) */
            if (live[k])
                s += take(k);
            put(k, 1 + i % 2000);
        }
        for (unsigned k = 1; k < LIVE; k += 2)
            s += take(k); /* (the parent's objects) */
        _exit(test_failures ? 1 : (int)(s % 200));
    }
    int status;
    waitpid(pid, &status, 0);
    printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    for (unsigned k = 0; k < LIVE; k++)
        if (live[k])
            sum += take(k);
    printf("sum %ld\n", sum);
    fprintf(stderr, "maps grew by %ld\n", most - before); /* (the test checks it) */
    return test_finish();
}
