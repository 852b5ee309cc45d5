/* Long-dead stretches of the heap give their metadata back, and stay caught (reclaim.h).
 * An early object is freed first (its chunk dies early) and one allocated halfway stays live
 * (its chunk must keep working), while N objects churn through a ring of 256 (small ones, and a large one in
 * sixteen), each checked before it is freed. Prints the process's anonymous memory and page
 * tables, then does what argv[2] says with the early freed object:
 *   none    nothing;
 *   uaf     reads it (must fault with the report);
 *   double  frees it again (must abort with the report);
 *   recent  reads an object freed just now instead (must fault, even once the region is used
 *           up and old addresses are handed out again);
 *   fork    forks; the child churns on, checks the live object and exits 0. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define RING 256

static void churn(long n, uint64_t seed) {
    unsigned char *ring[RING] = {0};
    size_t len[RING] = {0};
    for (long i = 0; i < n; i++) {
        int k = (int)(i % RING);
        if (ring[k]) {
            check(ring[k][0] == (unsigned char)k && ring[k][len[k] - 1] == (unsigned char)k,
                  "churned object intact");
            free(ring[k]);
        }
        uint64_t r = rng_next(&seed);
        len[k] = r % 16 == 0 ? 3000 + r % 100000 : 16 + r % 2000;
        ring[k] = malloc(len[k]);
        if (!ring[k]) {
            printf("FAIL malloc returned NULL\n");
            exit(2);
        }
        ring[k][0] = ring[k][len[k] - 1] = (unsigned char)k;
    }
    for (int k = 0; k < RING; k++)
        free(ring[k]);
}

/* Read byte 8 of the freed object p, which must fault. */
static int read_freed(const char *p) {
    print_ptr("ptr", p);
    print_ptr("access", p + 8);
    printf("read %d\n", p[8]);
    printf("NOT REACHED\n");
    return 1;
}

int main(int argc, char **argv) {
    test_init();
    long n = argc > 1 ? atol(argv[1]) : 100000;
    const char *action = argc > 2 ? argv[2] : "none";
    char *early = malloc(48);
    strcpy(early, "freed long ago");
    free(early);
    churn(n / 2, 7);
    char *kept = malloc(100);
    strcpy(kept, "still here");
    churn(n / 2, 9);
    check(!strcmp(kept, "still here"), "long-lived object intact");
    printf("anon_kib %ld\n", proc_kib("/proc/self/smaps_rollup", "Anonymous:"));
    printf("pte_kib %ld\n", proc_kib("/proc/self/status", "VmPTE:"));
    if (!strcmp(action, "uaf"))
        return read_freed(early);
    if (!strcmp(action, "recent")) {
        char *p = malloc(48);
        strcpy(p, "freed just now");
        free(p);
        return read_freed(p);
    }
    if (!strcmp(action, "double")) {
        print_ptr("ptr", early);
        free(early);
        printf("NOT REACHED\n");
        return 1;
    }
    if (!strcmp(action, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            churn(n / 4, 11);
            check(!strcmp(kept, "still here"), "long-lived object intact in the child");
            _exit(test_failures ? 1 : 0);
        }
        int status = 0;
        check(pid > 0 && waitpid(pid, &status, 0) == pid, "fork and wait");
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0");
        churn(n / 4, 13);
        check(!strcmp(kept, "still here"), "long-lived object intact after fork");
    }
    free(kept);
    return test_finish();
}
