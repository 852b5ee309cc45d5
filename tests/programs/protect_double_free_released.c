/* Protect mode: a double free long after the first, with many marks in between. The pointer
 * kept for the second free keeps the object quarantined (never reused), so the second free
 * is still caught. Expected: SIGABRT, "double-free on address <ptr>". */
#include "common.h"

int main(void) {
    test_init();
    char *volatile p = malloc(48);
    print_ptr("ptr", p);
    free(p);
    for (int r = 0; r < 2000; r++) { /* churn the class: marks run, others are reused */
        void *volatile q[16];
        for (int i = 0; i < 16; i++)
            q[i] = malloc(48);
        for (int i = 0; i < 16; i++) {
            if (q[i] == p)
                printf("FAIL reused while pointed to\n");
            free(q[i]);
        }
    }
    free(p);
    printf("NOT REACHED\n");
    return 0;
}
