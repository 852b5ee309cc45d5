/* fork then exec of a program that itself runs under the preload (LD_PRELOAD is inherited):
 * this program re-executes itself (/proc/self/exe) in three modes:
 *   (none)  the parent: holds heap objects, forks + execs "work" and "uaf", checks its heap;
 *   work    allocates and frees, says whether liboscar.so is mapped, exits 0;
 *   uaf     reads a freed object: killed by SIGSEGV under oscar, exits 0 under glibc.
 * The parent prints how each child ended; the test compares that with the allocator. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

extern char **environ;

static int preloaded(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[512];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "liboscar"))
            found = 1;
    fclose(f);
    return found;
}

static int work(void) {
    int ok = 1;
    void *objs[2000];
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 2000; i++) {
            size_t n = 1 + (size_t)(i * 31 + round) % 6000;
            objs[i] = malloc(n);
            if (!objs[i])
                return 1;
            fill_pattern(objs[i], n, (uint64_t)i);
        }
        for (int i = 0; i < 2000; i++) {
            ok &= check_pattern(objs[i], 1 + (size_t)(i * 31 + round) % 6000, (uint64_t)i);
            free(objs[i]);
        }
    }
    printf("exec'd child: liboscar mapped %s\n", preloaded() == 1 ? "yes" : "no");
    printf("exec'd child: heap %s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

static int uaf(void) {
    volatile char *p = malloc(100);
    strcpy((char *)p, "freed");
    free((void *)p);
    char c = p[0]; /* faults under oscar */
    printf("exec'd child read %d after free\n", c != 0);
    return 0;
}

static int run_child(const char *mode) {
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Allocate between fork and exec, as shells and servers do. */
        char *arg = strdup(mode);
        char *argv[] = {"fork_exec_preload", arg, NULL};
        execve("/proc/self/exe", argv, environ);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status))
        printf("%s child: exit %d\n", mode, WEXITSTATUS(status));
    else
        printf("%s child: killed by signal %d\n", mode, WTERMSIG(status));
    return status;
}

int main(int argc, char **argv) {
    test_init();
    if (argc > 1 && strcmp(argv[1], "work") == 0)
        return work();
    if (argc > 1 && strcmp(argv[1], "uaf") == 0)
        return uaf();
    unsigned char *objs[100];
    for (int i = 0; i < 100; i++) {
        objs[i] = malloc(10 + (size_t)i * 50);
        fill_pattern(objs[i], 10 + (size_t)i * 50, (uint64_t)i);
    }
    printf("parent: liboscar mapped %s\n", preloaded() == 1 ? "yes" : "no");
    for (int round = 0; round < 3; round++)
        check(run_child("work") == 0, "the exec'd child ran cleanly");
    run_child("uaf");
    int ok = 1;
    for (int i = 0; i < 100; i++) {
        ok &= check_pattern(objs[i], 10 + (size_t)i * 50, (uint64_t)i);
        free(objs[i]);
    }
    check(ok, "the parent's heap is intact");
    return test_finish();
}
