/* The pages of freed large objects are kept and moved to the next large objects (keep.c).
 * Allocate N objects of SIZE bytes (argument, default 300000), fill each with its own
 * pattern and free them; allocate N more of mixed sizes (they get the kept pages), fill
 * them and check that none shares an address with a freed one and that each kept every
 * byte; check that calloc still returns zeros after frees; fork, and have the child do the
 * same churn; raise SIGUSR1 if asked to (argument "stats": OSCAR_STATS_SIGNAL prints the
 * counters); then read a freed object in the middle.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+SIZE/2> (READ)". */
#include "common.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N = 8 };

static size_t size;

/* N objects of mixed sizes around size, each filled with its own pattern; 0 if any lost a
 * byte to a neighbour or sits at a freed address. */
static int churn(unsigned char **freed, int salt) {
    unsigned char *q[N];
    size_t n[N];
    int reused = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        n[i] = size / 2 + (size_t)i * size / 4; /* smaller and bigger than the freed ones */
        q[i] = malloc(n[i]);
        if (!q[i])
            return 0;
        for (int k = 0; k < N; k++)
            reused += q[i] == freed[k];
        memset(q[i], salt + i, n[i]);
    }
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < n[i]; j += 97)
            bad += q[i][j] != (unsigned char)(salt + i) || q[i][n[i] - 1] != (unsigned char)(salt + i);
    for (int i = 0; i < N; i++)
        free(q[i]);
    return !reused && !bad;
}

int main(int argc, char **argv) {
    test_init();
    size = argc > 1 ? strtoul(argv[1], NULL, 0) : 300000;
    unsigned char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(size);
        if (!p[i])
            return 2;
        memset(p[i], 0xa0 + i, size);
    }
    for (int i = 0; i < N; i++)
        free(p[i]);
    printf("churn %s\n", churn(p, 1) && churn(p, 40) ? "ok" : "BAD");
    unsigned char *dirty = malloc(size);
    memset(dirty, 0xff, size);
    free(dirty);
    unsigned char *z = calloc(1, size);
    size_t nonzero = 0;
    for (size_t j = 0; j < size; j++)
        nonzero += z[j] != 0;
    printf("calloc zero %s\n", nonzero ? "NO" : "yes");
    free(z);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        printf("child churn %s\n", churn(p, 80) ? "ok" : "BAD");
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("after fork churn %s\n", churn(p, 120) ? "ok" : "BAD");
    fflush(stdout);
    if (argc > 2 && !strcmp(argv[2], "stats"))
        raise(SIGUSR1);
    unsigned char *freed = p[N / 2];
    print_ptr("ptr", freed);
    printf("size %zu\noffset %zu\n", size, size / 2);
    volatile unsigned char *a = freed + size / 2;
    print_ptr("access", (const void *)a);
    unsigned char v = *a;
    printf("NOT REACHED %u\n", v);
    return 0;
}
