/* Run under vm.overcommit_memory=2 (every private writable mapping counts against the commit
 * limit, NORESERVE or not): strict and fast mode could not set up and let glibc's malloc
 * serve the program, but left their tables mapped (9 GiB here), so the program's fork failed
 * with ENOMEM, and so did every other process's allocations while it lived. Prints "fork ok". */
#include "common.h"

#include <errno.h>
#include <sys/wait.h>

int main(void) {
    test_init();
    void *p = malloc(100);
    free(p);
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    if (c < 0) {
        printf("fork: %s\n", strerror(errno));
        return 1;
    }
    waitpid(c, NULL, 0);
    printf("fork ok\n");
    return 0;
}
