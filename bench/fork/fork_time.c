/* fork_time MB [REPEATS]: hold MB megabytes of live 1000-byte objects, then fork REPEATS
 * times and time each fork: how long fork() takes to return in the parent, and how long
 * until the child is running (with Oscar: after its heap copy has been remapped). Prints
 * one line per fork: "fork parent_ms CHILD_READY_MS". The child checks a sample of the
 * objects before it reports, so a broken copy cannot look fast. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OBJECT 1000

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    long mb = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    size_t n = (size_t)mb * 1000000 / OBJECT;
    unsigned char **objs = malloc(n * sizeof *objs);
    if (!objs)
        return 2;
    for (size_t i = 0; i < n; i++) {
        objs[i] = malloc(OBJECT);
        if (!objs[i])
            return 2;
        memset(objs[i], (int)(i & 0xff), OBJECT);
    }
    for (int r = 0; r < repeats; r++) {
        int fds[2];
        if (pipe(fds) != 0)
            return 2;
        double t0 = now_ms();
        pid_t pid = fork();
        if (pid == 0) {
            double ready = now_ms();
            int ok = 1;
            for (size_t i = 0; i < n; i += 997)
                ok &= objs[i][OBJECT - 1] == (unsigned char)(i & 0xff);
            double msg[2] = {ready, ok};
            if (write(fds[1], msg, sizeof msg) != sizeof msg)
                _exit(3);
            _exit(0);
        }
        double t1 = now_ms();
        double msg[2] = {0, 0};
        if (pid < 0 || read(fds[0], msg, sizeof msg) != sizeof msg)
            return 2;
        int status;
        waitpid(pid, &status, 0);
        close(fds[0]);
        close(fds[1]);
        if (!msg[1] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("child saw a corrupt heap\n");
            return 1;
        }
        printf("fork %.3f %.3f\n", t1 - t0, msg[0] - t0);
    }
    return 0;
}
