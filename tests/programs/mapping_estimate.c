/* Issue 18, defect 21: after N large malloc/free pairs (and a few other shapes), the mapping
 * estimate Oscar keeps (mappings_estimate in the statistics) matches the real count. Prints
 * the real count of /proc/self/maps lines last ("maps N"), right before exit.
 *   mapping_estimate N   (default 20000 pairs) */
#include "common.h"

static long count_maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    long n = 0;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    test_init();
    long n = argc > 1 ? atol(argv[1]) : 20000;
    static char *keep[64];
    for (long i = 0; i < n; i++) {
        size_t sz = 70000 + (size_t)(i % 13) * 40000;
        char *p = malloc(sz);
        check(p != NULL, "malloc");
        if (!p)
            break;
        p[0] = 1;
        p[sz - 1] = 2;
        if (i % 7 == 0) { /* some stay live a while, freed out of order */
            int k = (int)(i / 7 % 64);
            free(keep[k]);
            keep[k] = p;
        } else {
            free(p);
        }
        if (i % 1000 == 0) {
            char *s = malloc(40);
            free(s);
        }
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
    long maps = count_maps();
    int rc = test_finish();
    printf("maps %ld\n", maps);
    return rc;
}
