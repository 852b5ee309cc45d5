/* Start and join 10,000 threads (8 at a time), each allocating and freeing a little (small
 * and large objects, some freed by main after the thread is gone). Per-thread state must be
 * recycled: after the first 4,000 threads neither the resident set nor the number of kernel
 * mappings (/proc/self/maps lines) may keep growing. (Under Oscar the resident set fills up
 * over the first few thousand threads: a size class's first run is not prefaulted, its pages
 * are touched as objects are handed out; after that it grows only by Oscar's 24 bytes of
 * metadata per shadow page ever used and its stack records, ~7 MB over the 6,000 threads
 * measured, see README "Limitations".) The measurements go to stderr (they differ between allocators); stdout
 * carries only the verdict. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

#define TOTAL 10000
#define BATCH 8
#define WARMUP 4000
/* A thread cache that is not recycled costs at least a page per thread (it is ~25 KiB):
 * 6,000 such threads would add 24+ MB. Oscar's metadata adds ~1.2 KiB per thread here
 * (~7 MB). */
#define MAX_RSS_GROWTH_KB (16 * 1024)
/* Each recycled thread cache may hold one partly used run of shadows per size class (24
 * classes x 9 caches); past that, the count must not grow. */
#define MAX_MAPS_GROWTH 256

static void *leftover[BATCH];

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned char *objs[24];
    int ok = 1;
    for (int i = 0; i < 24; i++) {
        size_t n = 8 + (size_t)((id * 7 + i * 131) % 3000);
        objs[i] = malloc(n);
        if (!objs[i])
            return (void *)1;
        fill_pattern(objs[i], n, (uint64_t)(id + i));
    }
    unsigned char *big = malloc(40000);
    if (!big)
        return (void *)1;
    memset(big, id, 40000);
    for (int i = 0; i < 24; i++) {
        size_t n = 8 + (size_t)((id * 7 + i * 131) % 3000);
        ok &= check_pattern(objs[i], n, (uint64_t)(id + i));
        if (i)
            free(objs[i]);
    }
    ok &= big[39999] == (unsigned char)id;
    free(big);
    leftover[id % BATCH] = objs[0]; /* freed by main after the join */
    return ok ? NULL : (void *)1;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long maps_lines(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int c;
    if (!f)
        return -1;
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

int main(void) {
    test_init();
    int failures = 0, joined = 0;
    long rss0 = 0, maps0 = 0, rss_max = 0, maps_max = 0;
    for (int start = 0; start < TOTAL; start += BATCH) {
        pthread_t t[BATCH];
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(start + i)) != 0) {
                printf("pthread_create failed at %d\n", start + i);
                return 1;
            }
        for (int i = 0; i < BATCH; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            if (ret)
                failures++;
            joined++;
        }
        for (int i = 0; i < BATCH; i++) {
            if (!leftover[i] || !check_pattern(leftover[i], 8 + (size_t)(((start + i) * 7) % 3000),
                                               (uint64_t)(start + i)))
                failures++;
            free(leftover[i]);
            leftover[i] = NULL;
        }
        if (start + BATCH == WARMUP) {
            rss0 = rss_kb();
            maps0 = maps_lines();
        } else if (start + BATCH > WARMUP && (start / BATCH) % 25 == 0) {
            long r = rss_kb(), m = maps_lines();
            rss_max = r > rss_max ? r : rss_max;
            maps_max = m > maps_max ? m : maps_max;
            /* Far past the bound: stop early rather than run into the kernel's limits. */
            if (maps_max - maps0 > 20 * MAX_MAPS_GROWTH || rss_max - rss0 > 8 * MAX_RSS_GROWTH_KB) {
                printf("growth without bound: stopped after %d threads\n", start + BATCH);
                break;
            }
        }
    }
    long r = rss_kb(), m = maps_lines();
    rss_max = r > rss_max ? r : rss_max;
    maps_max = m > maps_max ? m : maps_max;
    fprintf(stderr, "after %d threads: rss %ld KiB, %ld mappings; later maximum: rss %ld KiB, "
            "%ld mappings\n", WARMUP, rss0, maps0, rss_max, maps_max);
    check(failures == 0, "every thread's objects were intact");
    check(rss_max - rss0 <= MAX_RSS_GROWTH_KB, "the resident set stops growing after 4,000 threads");
    check(maps_max - maps0 <= MAX_MAPS_GROWTH, "the mapping count stops growing after 4,000 threads");
    check(joined == TOTAL, "every thread was started and joined");
    printf("%d threads started and joined\n", joined);
    return test_finish();
}
