/* Helpers shared by the test programs (not a program itself: only *.c and *.cc are built).
 *
 * Conventions the pytest side relies on:
 *  - stdout is unbuffered (a program killed by a signal loses nothing it printed, and stdio
 *    does not malloc a buffer behind the test's back);
 *  - programs that report addresses print "name 0x<hex>" lines via print_ptr();
 *  - "NOT REACHED" is printed right after an access or free that must be fatal;
 *  - correctness programs print only values that are the same under every allocator
 *    (never addresses), call check() for every expectation, and exit 1 after any "FAIL". */
#ifndef OSCAR_TEST_COMMON_H
#define OSCAR_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int test_failures;

static inline void test_init(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
}

static inline void print_ptr(const char *name, const void *p) {
    printf("%s 0x%lx\n", name, (unsigned long)(uintptr_t)p);
}

/* The peak resident set in KiB (VmHWM of /proc/self/status), -1 if unknown. */
static inline long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* Runs the program again, from the start, under an RLIMIT_AS of `bytes` (so that Oscar sizes
 * what it reserves by it), unless the environment variable `flag` says this is that run.
 * Returns only in that run; exits 2 if it cannot be made. */
/* One step of a churn: a random entry of table[n] freed and replaced by 16-300 bytes, the
 * first 16 written (x: the xorshift state). */
static inline void replace_one(unsigned char **table, unsigned n, uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    unsigned i = (unsigned)(*x % n);
    free(table[i]);
    table[i] = (unsigned char *)malloc(16 + (*x >> 20) % 285);
    memset(table[i], 1, 16);
}

static inline void rerun_under_as_limit(char **argv, const char *flag, unsigned long bytes) {
    if (getenv(flag))
        return;
    struct rlimit as = {bytes, bytes};
    setenv(flag, "1", 1);
    if (setrlimit(RLIMIT_AS, &as) != 0 || execv("/proc/self/exe", argv) != 0) {
        perror("setrlimit, execv");
        exit(2);
    }
}

/* Records a failed expectation; the program keeps going so one run shows every failure. */
#define check(cond, what)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL %s (%s:%d: %s)\n", (what), __FILE__, __LINE__, #cond);                \
            test_failures++;                                                                   \
        }                                                                                      \
    } while (0)

static inline int test_finish(void) {
    if (test_failures) {
        printf("%d failure(s)\n", test_failures);
        return 1;
    }
    printf("OK\n");
    return 0;
}

/* xorshift64*: deterministic, allocator-independent pseudo-random sizes and patterns. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline void fill_pattern(unsigned char *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)((seed * 131u) + i * 7u + (i >> 8));
}

static inline int check_pattern(const unsigned char *p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)((seed * 131u) + i * 7u + (i >> 8)))
            return 0;
    return 1;
}

/* A "Field: N kB" value of a /proc file (smaps_rollup, status) in KiB, or -1. */
static inline long proc_kib(const char *path, const char *field) {
    FILE *f = fopen(path, "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n))
            v = atol(line + n);
    if (f)
        fclose(f);
    return v;
}

#endif
