/* Protect mode: memory stays bounded when a program frees everything it allocates: 2 GiB
 * allocated in total (objects of 16 B to 256 KiB), at most ~8 MiB live at a time. Prints the
 * peak resident set in MiB (VmHWM) for the test to bound. */
#include "common.h"

int main(void) {
    test_init();
    enum { N = 256 };
    void *live[N] = {0};
    uint64_t seed = 42, total = 0;
    while (total < (2ULL << 30)) {
        unsigned i = (unsigned)(rng_next(&seed) % N);
        free(live[i]);
        size_t size = 16 + rng_next(&seed) % (rng_next(&seed) % 8 == 0 ? 262144 : 512);
        live[i] = malloc(size);
        memset(live[i], 1, size < 64 ? size : 64);
        total += size;
    }
    for (unsigned i = 0; i < N; i++)
        free(live[i]);
    printf("peak_rss_mib %ld\n", peak_rss_kib() / 1024);
    return 0;
}
