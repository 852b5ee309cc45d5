/* Issue 18, items 16 and 17: 1 M objects of 64 bytes, then all but one in 64 freed (every
 * page keeps a live object), then some churn so a quarantine is marked and released. Prints
 * the process's resident memory as the kernel counts it (VmRSS: every alias of a page
 * again) and its proportional share (Pss, from smaps_rollup: each page once), in KiB. */
#include "common.h"

#define N 1000000

static long field_kib(const char *path, const char *name) {
    FILE *f = fopen(path, "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, name, strlen(name)) == 0)
            v = strtol(line + strlen(name), NULL, 10);
    if (f)
        fclose(f);
    return v;
}

int main(void) {
    test_init();
    static char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(64);
        memset(p[i], 1, 64);
    }
    for (int i = 0; i < N; i++)
        if (i % 64) {
            free(p[i]);
            p[i] = NULL;
        }
    for (int r = 0; r < 200; r++) {
        char *q[1000];
        for (int i = 0; i < 1000; i++)
            q[i] = malloc(64);
        for (int i = 0; i < 1000; i++)
            free(q[i]);
    }
    long sum = 0;
    for (int i = 0; i < N; i += 64)
        sum += p[i][63];
    printf("live_sum %ld\n", sum);
    printf("rss_kib %ld\n", field_kib("/proc/self/status", "VmRSS:"));
    printf("pss_kib %ld\n", field_kib("/proc/self/smaps_rollup", "Pss:"));
    return 0;
}
