/* The calls that need a single-threaded process (unshare(CLONE_NEWUSER); setns into a user
 * namespace: the kernel answers EINVAL otherwise) work as under glibc after protect mode's
 * marks have started threads of Oscar's own (scan/team.h's helpers, the concurrent marker):
 * those leave first, and come back at a later mark. 8 MiB live of 16-4096 bytes and 32 MiB
 * freed make marks with helpers; then unshare, the threads /proc lists, and as many marks
 * again; every live object keeps its bytes. Prints what unshare returned and the count. */
#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>

#define LIVE 4096

static int threads(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static unsigned char *live[LIVE];

static void churn(uint64_t *seed, long bytes) {
    for (long done = 0; done < bytes;) {
        unsigned i = (unsigned)(rng_next(seed) % LIVE);
        size_t size = 16 + rng_next(seed) % 4080;
        if (live[i]) {
            check(check_pattern(live[i], 16, i), "a live object kept its bytes");
            free(live[i]);
        }
        live[i] = malloc(size);
        fill_pattern(live[i], 16, i);
        done += (long)size;
    }
}

int main(void) {
    test_init();
    uint64_t seed = 42;
    churn(&seed, 32L << 20);
    int r = unshare(CLONE_NEWUSER);
    printf("unshare %d %s\n", r, r ? strerror(errno) : "");
    printf("threads %d\n", threads());
    churn(&seed, 32L << 20);
    for (unsigned i = 0; i < LIVE; i++)
        if (live[i])
            check(check_pattern(live[i], 16, i), "a live object kept its bytes");
    return test_finish();
}
