/* After fork, parent and child have private copies of heap objects: the child's writes are
 * invisible to the parent, and both can keep allocating and freeing. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static int churn(uint64_t seed) {
    void *objs[500];
    uint64_t rng = seed;
    int ok = 1;
    for (int i = 0; i < 500; i++) {
        size_t n = 1 + rng_next(&rng) % 5000;
        objs[i] = malloc(n);
        if (!objs[i])
            return 0;
        fill_pattern(objs[i], n, (uint64_t)i);
    }
    rng = seed;
    for (int i = 0; i < 500; i++) {
        size_t n = 1 + rng_next(&rng) % 5000;
        ok &= check_pattern(objs[i], n, (uint64_t)i);
        free(objs[i]);
    }
    return ok;
}

int main(void) {
    test_init();
    char *small = malloc(64);
    char *large = malloc(300000);
    strcpy(small, "parent data");
    memset(large, 'P', 300000);
    char *to_free_in_child = malloc(100);
    strcpy(to_free_in_child, "still here");

    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        strcpy(small, "child data");
        memset(large, 'C', 300000);
        free(to_free_in_child);
        int ok = strcmp(small, "child data") == 0 && large[299999] == 'C' && churn(1);
        char *again = realloc(small, 100000);
        ok = ok && again && strcmp(again, "child data") == 0;
        free(again);
        free(large);
        printf("child %s\n", ok ? "ok" : "FAIL");
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    int large_ok = 1;
    for (int i = 0; i < 300000; i++)
        large_ok &= large[i] == 'P';
    check(strcmp(small, "parent data") == 0, "parent's small object unchanged by the child");
    check(large_ok, "parent's large object unchanged by the child");
    check(strcmp(to_free_in_child, "still here") == 0, "object freed by the child still live in the parent");
    check(churn(2), "parent allocates and frees after fork");
    printf("parent sees \"%s\", \"%s\"\n", small, to_free_in_child);
    free(small);
    free(large);
    free(to_free_in_child);
    return test_finish();
}
