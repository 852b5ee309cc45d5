/* Issue 18, defect 8: clone() without CLONE_VM and _Fork() give the child a copy of memory,
 * like fork: what the child writes into heap objects must not reach the parent, and the child
 * can allocate and free. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

extern pid_t _Fork(void);

static char *shared_obj;
static char *big_obj;

static int child_work(void *arg) {
    (void)arg;
    strcpy(shared_obj, "written by the child");
    memset(big_obj, 'c', 100000);
    for (int i = 0; i < 100; i++) {
        char *p = malloc(16 + (size_t)i * 64);
        if (!p)
            return 1;
        memset(p, i, 16 + (size_t)i * 64);
        free(p);
    }
    return 0;
}

static int check_parent(const char *how, int status) {
    int ok = 1;
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exited 0");
    ok &= strcmp(shared_obj, "parent's object") == 0;
    ok &= big_obj[0] == 'p' && big_obj[99999] == 'p';
    check(ok, "the parent's objects are unchanged");
    printf("%s: child exit %d, parent's objects %s\n", how,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, ok ? "unchanged" : "CHANGED");
    return ok;
}

int main(void) {
    test_init();
    shared_obj = malloc(64);
    big_obj = malloc(100000);
    strcpy(shared_obj, "parent's object");
    memset(big_obj, 'p', 100000);

    size_t stack_size = 1 << 20;
    char *stack = malloc(stack_size);
    int status = 0;
    pid_t pid = clone(child_work, stack + stack_size, SIGCHLD, NULL);
    check(pid > 0, "clone");
    waitpid(pid, &status, 0);
    check_parent("clone", status);

    strcpy(shared_obj, "parent's object");
    pid = _Fork();
    if (pid == 0)
        _exit(child_work(NULL));
    check(pid > 0, "_Fork");
    waitpid(pid, &status, 0);
    check_parent("_Fork", status);
    free(stack);
    free(shared_obj);
    free(big_obj);
    return test_finish();
}
