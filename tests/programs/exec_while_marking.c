/* A thread frees and allocates while another execs. Protect mode stops the world often (its
 * marks), asking each thread with a signal of its own; one pending at the thread that execs
 * stayed pending in the new image, whose handler is the default one, and the new program
 * died of SIGPWR at once (1 run in 80; 10 in 40 with a mark every 64 KiB of frees). Oscar
 * execs under the world lock now (export/export_exec.c).
 *
 * Each generation starts a churning thread, lets it run a little, and execs, while it still
 * churns, the next generation (this program, with N - 1, through the function named by the
 * second argument) or, at 0, /bin/true without Oscar (an empty environment: no LD_PRELOAD).
 * usage: exec_while_marking N execl|execle|execv|execve|execvp|execlp|fexecve */
#define _GNU_SOURCE
#include "common.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static void *churn(void *arg) {
    (void)arg;
    static __thread unsigned char *table[1024];
    uint64_t x = 88172645463325252ull ^ (uintptr_t)&x;
    for (;;)
        replace_one(table, 1024, &x);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3;
    const char *how = argc > 2 ? argv[2] : "execv";
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL);
    usleep(20000);
    char next[16], self[4096];
    snprintf(next, sizeof next, "%d", n - 1);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        perror("readlink");
        return 2;
    }
    self[len] = 0;
    char *const to_self[] = {argv[0], next, (char *)how, NULL};
    char *const to_true[] = {"true", NULL}, *const empty[] = {NULL};
    if (n <= 0) {
        execve("/bin/true", to_true, empty);
    } else if (!strcmp(how, "execl")) {
        execl(self, argv[0], next, how, (char *)NULL);
    } else if (!strcmp(how, "execle")) {
        execle(self, argv[0], next, how, (char *)NULL, environ);
    } else if (!strcmp(how, "execlp")) {
        execlp(self, argv[0], next, how, (char *)NULL);
    } else if (!strcmp(how, "execvp")) {
        execvp(self, to_self);
    } else if (!strcmp(how, "execve")) {
        execve(self, to_self, environ);
    } else if (!strcmp(how, "fexecve")) {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        fexecve(fd, to_self, environ);
    } else {
        execv(self, to_self);
    }
    perror("exec");
    return 1;
}
