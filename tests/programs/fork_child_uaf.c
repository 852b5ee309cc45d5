/* A use after free in a forked child is caught in the child; the parent's copy is unaffected.
 * Parent prints how the child ended. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

int main(void) {
    test_init();
    char *p = malloc(200);
    strcpy(p, "shared before fork");
    print_ptr("ptr", p);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        void *fresh = malloc(50); /* the child's allocator works */
        free(fresh);
        free(p);
        volatile char *q = p + 7;
        char c = *q;
        printf("NOT REACHED in child %d\n", c);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        printf("child killed by signal %d\n", WTERMSIG(status));
    else
        printf("child exited %d\n", WEXITSTATUS(status));
    printf("parent still reads \"%s\"\n", p);
    free(p);
    return 0;
}
