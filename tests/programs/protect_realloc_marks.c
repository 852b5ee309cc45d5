/* A block realloc'd back and forth between 64 bytes and 3 MB (each growth moves it), 20,000
 * times, as a string or a buffer that grows and shrinks. A realloc that moves its object
 * frees the old one: protect mode's marks must run for those frees as for free's. None ran,
 * the quarantine kept every old copy (29 GB of them in 77,000 reallocs) and the peak resident
 * memory reached 1.5 GB where glibc's is 1 MB. Prints whether the peak stayed under 256 MiB. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int main(void) {
    static const size_t sizes[] = {64, 100000, 200, 5000, 70000, 64, 300000, 1000, 3000000};
    void *h = malloc(64);
    for (long n = 0; n < 20000; n++) {
        void *q = realloc(h, sizes[n % 9]);
        if (!q)
            return 1;
        ((char *)q)[0] = (char)n; /* (touched, as a real buffer is) */
        h = q;
    }
    free(h);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak resident memory under 256 MiB: %s\n", ru.ru_maxrss < 256 * 1024 ? "yes" : "no");
    return 0;
}
