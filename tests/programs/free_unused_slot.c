/* Issue 17, item 10: free() of a slot address that was never handed out, next to a live
 * object of the same size (argv[1]: how many slots further). Fast mode used to accept it, and
 * a later malloc returning that slot then gave a false double free. Expected in every mode:
 * SIGABRT, "invalid-free on address <never> (never allocated)". */
#include "common.h"

int main(int argc, char **argv) {
    test_init();
    int k = argc > 1 ? atoi(argv[1]) : 1;
    char *p = malloc(48);
    char *volatile never = p + 48 * k;
    print_ptr("ptr", p);
    print_ptr("never", never);
    free(never);
    printf("NOT REACHED\n");
    char *q[300];
    for (int i = 0; i < 300; i++)
        q[i] = malloc(48);
    for (int i = 0; i < 300; i++)
        free(q[i]);
    return 0;
}
