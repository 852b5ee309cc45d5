/* Every descriptor below the soft RLIMIT_NOFILE is the program's: after some allocation
 * churn (a protect-mode program has run marks by then), it opens /dev/null until the kernel
 * refuses, and prints how many it got, the highest number, and the error; then a server's
 * pattern: with one descriptor closed, accept-like reuse gets exactly that number back. Under
 * glibc and under Oscar the output must be the same (memcached's maxconns.t hung when one
 * descriptor of its 1024 was Oscar's: accept4 failed with EMFILE before the server's own
 * limit, and it stopped accepting). usage: descriptor_limit [LIMIT] (lowers the soft limit
 * first; without it, the limit the program was started with). */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

static void churn(void) {
    void *volatile objs[64];
    for (int r = 0; r < 4000; r++) {
        for (int i = 0; i < 64; i++)
            objs[i] = malloc(48 + (size_t)(i % 5) * 16);
        for (int i = 0; i < 64; i++)
            free(objs[i]);
    }
}

int main(int argc, char **argv) {
    test_init();
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (argc > 1) {
        rl.rlim_cur = strtoul(argv[1], NULL, 10);
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    churn();
    int n = 0, highest = -1, err = 0;
    int *fds = calloc(rl.rlim_cur + 1, sizeof *fds);
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            err = errno;
            break;
        }
        fds[n++] = fd;
        if (fd > highest)
            highest = fd;
    }
    printf("limit %lu\n", (unsigned long)rl.rlim_cur);
    printf("opened %d\n", n);
    printf("highest %d\n", highest);
    printf("error %s\n", err == EMFILE ? "EMFILE" : strerror(err));
    churn(); /* (marks with every descriptor taken) */
    int victim = fds[n / 2];
    close(victim);
    int again = open("/dev/null", O_RDONLY);
    printf("reopened_same %d\n", again == victim);
    close(again);
    for (int i = 0; i < n; i++)
        if (fds[i] != victim)
            close(fds[i]);
    free(fds);
    return 0;
}
