/* Protect mode under a hard RLIMIT_NOFILE: the program opens descriptors until the kernel
 * refuses, closes one, and churns. A mark's stop takes that one descriptor (to list the
 * threads), and its round needs a second: the round fails. Each failed round was tried again
 * at the next free past the trigger, a whole stop of the world each time: about 2,000 of
 * them in the churn, 100-500 times glibc's time. A round that fails now waits as a stop that
 * fails does (10 ms, doubling). Prints how many descriptors it opened and OK.
 * usage: descriptors_one_left ROUNDS */
#include "common.h"

#include <fcntl.h>

static void *v[256];

static void churn(long rounds) {
    for (long i = 0; i < rounds; i++) {
        int k = (int)(i % 256);
        free(v[k]);
        v[k] = malloc((size_t)(i % 3000 + 1));
        memset(v[k], 0, 1);
    }
}

int main(int argc, char **argv) {
    test_init();
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    churn(rounds);
    int n = 0, last = -1, fd;
    while ((fd = open("/dev/null", O_RDONLY)) >= 0)
        n++, last = fd;
    check(last >= 0, "opened some");
    close(last);
    churn(rounds);
    fd = open("/dev/null", O_RDONLY);
    check(fd == last, "the freed descriptor is the program's again");
    printf("opened %d\n", n);
    return test_finish();
}
