/* Protect mode: a program whose object sizes change from phase to phase (a parser's nodes,
 * then a table's rows, then a cache's blocks) must not keep every size class's peak: 16 MiB of
 * objects of one size, all freed, then 16 MiB of another size, three sizes, three times.
 * Pages whose slots a mark found all free go back to the page allocator for any size (glibc's
 * free chunks coalesce the same way). Prints the peak resident set in MiB (VmHWM). */
#include "common.h"

int main(void) {
    test_init();
    static const size_t sizes[] = {48, 800, 3000};
    enum { PHASE_BYTES = 16 << 20 };
    static void *objs[PHASE_BYTES / 48 + 1];
    for (int round = 0; round < 3; round++)
        for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = PHASE_BYTES / sizes[k];
            for (size_t i = 0; i < n; i++) {
                objs[i] = malloc(sizes[k]);
                memset(objs[i], (int)(i & 0xff) | 1, sizes[k]);
            }
            for (size_t i = 0; i < n; i++) {
                free(objs[i]);
                objs[i] = NULL; /* (no pointer left behind: the mark may release it) */
            }
        }
    printf("peak_rss_mib %ld\n", peak_rss_kib() / 1024);
    return 0;
}
