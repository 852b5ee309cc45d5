/* The program forks (a child that exits at once) while two threads churn: under protect mode
 * with a tiny quarantine floor, Oscar's marks come back to back. A fork waits until no mark
 * is stopping the world (the child must not copy a heap in the middle of one), and it used to
 * try only in the moment between one mark's end and the next one's start, losing that race
 * again and again: single forks waited up to 3.6 s (glibc: 5 ms at most).
 *
 * Argument: forks (300). Prints how many forks waited longer than SLOW_S, and OK. */
#define _GNU_SOURCE
#include <stdlib.h>
#include "common.h"
#include "fork_common.h"

#define SLOW_S 0.25

int main(int argc, char **argv) {
    test_init();
    int forks = argc > 1 ? atoi(argv[1]) : 300, slow = 0, bad = 0;
    churners_start(2);
    for (int i = 0; i < forks; i++) {
        double t0 = mono_seconds();
        bad += fork_empty_child();
        if (mono_seconds() - t0 > SLOW_S)
            slow++;
    }
    churners_stop();
    printf("forks slower than %.2f s: %d\n", SLOW_S, slow);
    check(bad == 0, "every child exited 0");
    return test_finish();
}
