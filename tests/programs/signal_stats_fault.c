/* Issue 18, defect 12: run with OSCAR_STATS_SIGNAL=11; the program dereferences NULL and must
 * die by SIGSEGV at once (the statistics handler must not be installed for a fault signal,
 * or every return re-runs the faulting load: thousands of dumps a second, forever). */
#include <signal.h>
#include "common.h"

int main(void) {
    test_init();
    void *q = malloc(16);
    free(q);
    printf("before\n");
    volatile int *p = NULL;
    int v = *p;
    printf("NOT REACHED %d\n", v);
    return 0;
}
