/* A daemon's double fork: the first child calls setsid(), forks again and exits at once; the
 * grandchild (reparented, the "daemon") keeps using the heap it inherited, allocates and
 * frees, and reports through a pipe. The original process checks its own heap afterwards. */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define NOBJ 200

int main(void) {
    test_init();
    unsigned char *objs[NOBJ];
    for (int i = 0; i < NOBJ; i++) {
        size_t n = 16 + (size_t)i * 97;
        objs[i] = malloc(n);
        fill_pattern(objs[i], n, (uint64_t)i);
    }
    char *name = strdup("daemon config");
    int fds[2];
    if (pipe(fds) != 0)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        close(fds[0]);
        if (setsid() < 0)
            _exit(3);
        pid_t d = fork();
        if (d < 0)
            _exit(4);
        if (d > 0)
            _exit(0); /* the first child exits at once, as daemon() does */
        /* The daemon. */
        int ok = strcmp(name, "daemon config") == 0;
        for (int i = 0; i < NOBJ; i++) {
            size_t n = 16 + (size_t)i * 97;
            ok &= check_pattern(objs[i], n, (uint64_t)i);
            memset(objs[i], 0xDD, n);
        }
        for (int i = 0; i < NOBJ; i += 3) {
            free(objs[i]);
            objs[i] = NULL;
        }
        char *big = malloc(1 << 20);
        ok &= big != NULL;
        if (big)
            memset(big, 'D', 1 << 20);
        void *tmp[1000];
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < 1000; i++) {
                tmp[i] = malloc(1 + (size_t)(i * 13 + round) % 2500);
                ok &= tmp[i] != NULL;
                if (tmp[i])
                    fill_pattern(tmp[i], 1 + (size_t)(i * 13 + round) % 2500, (uint64_t)i);
            }
            for (int i = 0; i < 1000; i++) {
                if (tmp[i])
                    ok &= check_pattern(tmp[i], 1 + (size_t)(i * 13 + round) % 2500, (uint64_t)i);
                free(tmp[i]);
            }
        }
        free(big);
        free(name);
        char msg[64];
        int len = snprintf(msg, sizeof msg, "daemon %s\n", ok ? "ok" : "FAIL");
        if (write(fds[1], msg, (size_t)len) != len)
            _exit(5);
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("first child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    char buf[128];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r; /* EOF: the daemon has exited (or died) */
    buf[got] = 0;
    check(strncmp(buf, "daemon ok", 9) == 0, "the daemon kept a working heap");
    printf("daemon said: %s", got ? buf : "(nothing)\n");
    int ok = strcmp(name, "daemon config") == 0;
    for (int i = 0; i < NOBJ; i++) {
        size_t n = 16 + (size_t)i * 97;
        ok &= check_pattern(objs[i], n, (uint64_t)i);
        free(objs[i]);
    }
    check(ok, "the original process's heap is untouched by the daemon");
    free(name);
    return test_finish();
}
