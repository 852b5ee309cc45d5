/* Issue 18, defects 6, 7, 14: resource limits and address placement.
 *   limits_shapes fsize   RLIMIT_FSIZE 1 MiB set by the program, then 32 MiB of small objects
 *                         and two forks: nobody dies of SIGXFSZ; a SIGXFSZ the program causes
 *                         itself (writing past the limit with the signal blocked) stays its own
 *   limits_shapes work    a mix of small and large objects, a fork (run it under a limit)
 *   limits_shapes addr    prints the address of a new small and a new large object
 *   limits_shapes fixed   maps the addresses older versions of Oscar reserved, then works
 * Prints the same under every allocator (except addr); "OK" at the end. */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEEP 65536
static char *keep[NKEEP];

/* About `mib` MiB of small objects kept, then checked and freed, plus large ones. */
static long work(int mib) {
    long bad = 0;
    size_t n = (size_t)mib << 20, used = 0;
    int k = 0;
    for (; used < n && k < NKEEP; k++) {
        size_t sz = 64 + (size_t)(k % 900);
        keep[k] = malloc(sz);
        if (!keep[k])
            return -1;
        memset(keep[k], (char)k, sz);
        used += sz;
    }
    for (int i = 0; i < 64; i++) {
        char *big = malloc(300000 + (size_t)i * 4096);
        if (!big)
            return -1;
        memset(big, 1, 300000);
        free(big);
    }
    for (int i = 0; i < k; i++) {
        bad += keep[i][0] != (char)i || keep[i][63] != (char)i;
        free(keep[i]);
        keep[i] = NULL;
    }
    return bad;
}

static void fork_work(const char *what, int mib) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("%s: fork failed\n", what);
        return;
    }
    if (pid == 0)
        _exit(work(mib) == 0 ? 0 : 3);
    int st;
    waitpid(pid, &st, 0);
    printf("%s: child %s %d\n", what, WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(int argc, char **argv) {
    test_init();
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "fsize") == 0) {
        struct rlimit rl = {1 << 20, RLIM_INFINITY};
        check(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
        char *hold[2048];
        for (int i = 0; i < 2048; i++) { /* 16 MiB live across the forks */
            hold[i] = malloc(8000);
            memset(hold[i], (char)i, 8000);
        }
        check(work(32) == 0, "parent heap");
        fork_work("fsize", 8);
        fork_work("fsize again", 8);
        for (int i = 0; i < 2048; i++) {
            check(hold[i][7999] == (char)i, "held object");
            free(hold[i]);
        }
        /* The program's own SIGXFSZ: blocked, it stays pending for the program. */
        sigset_t set, old;
        sigemptyset(&set);
        sigaddset(&set, SIGXFSZ);
        sigprocmask(SIG_BLOCK, &set, &old);
        int fd = open("/dev/shm/oscar-limits-fsize", O_RDWR | O_CREAT | O_TRUNC, 0600);
        unlink("/dev/shm/oscar-limits-fsize");
        check(fd >= 0 && ftruncate(fd, 2 << 20) != 0, "the program's own file is limited");
        char *p = malloc(100);
        free(p);
        fork_work("fsize pending", 1);
        sigset_t pend;
        sigpending(&pend);
        printf("own SIGXFSZ pending %d\n", sigismember(&pend, SIGXFSZ));
        signal(SIGXFSZ, SIG_IGN);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(fd);
    } else if (strcmp(mode, "work") == 0) {
        check(work(64) == 0, "heap");
        fork_work("work", 16);
    } else if (strcmp(mode, "addr") == 0) {
        void *s = malloc(24), *l = malloc(1 << 20);
        print_ptr("small", s);
        print_ptr("large", l);
        free(s);
        free(l);
    } else if (strcmp(mode, "fixed") == 0) {
        static const uintptr_t old[] = {0x700000000000UL, 0x720000000000UL, 0x740000000000UL};
        for (int i = 0; i < 3; i++)
            mmap((void *)old[i], 1 << 20, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        check(work(16) == 0, "heap");
        fork_work("fixed", 4);
    } else {
        check(0, "unknown mode");
    }
    return test_finish();
}
