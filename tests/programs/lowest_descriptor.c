/* A program that closes every descriptor from 3 up and then opens one must get 3 (POSIX: the
 * lowest free number), also while another thread's frees make Oscar stop the world (protect
 * mode marks; the test sets a tiny quarantine). Oscar's own descriptors lie past the soft
 * limit, but listing the threads to stop opens one (/proc/self/task): opened while this
 * thread still ran, it took 3 and the open below got 4.
 * Prints "bad_fd N": the opens that did not return 3. */
#define _GNU_SOURCE
#include "common.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static atomic_int stop;

static void *churner(void *arg) {
    (void)arg;
    void *volatile objs[64];
    while (!atomic_load(&stop)) {
        for (int i = 0; i < 64; i++)
            objs[i] = malloc(48);
        for (int i = 0; i < 64; i++)
            free(objs[i]);
    }
    return NULL;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    test_init();
    pthread_t t;
    pthread_create(&t, NULL, churner, NULL);
    long bad = 0, opens = 0;
    double end = seconds() + 2.0;
    while (seconds() < end) {
        syscall(SYS_close_range, 3, ~0U, 0);
        int fd = open("/dev/null", O_RDONLY);
        bad += fd != 3;
        opens++;
        if (fd >= 0)
            close(fd);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("bad_fd %ld\n", opens > 0 ? bad : -1);
    return 0;
}
