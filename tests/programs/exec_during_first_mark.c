/* Children that exec while another thread of theirs allocates: each child starts a thread
 * that frees and allocates without pause (its first protect-mode mark starts Oscar's stops
 * there: world_init, then a stop that asks every thread with SIGPWR), sleeps 1-4 ms and execs
 * /bin/true. An exec went ahead without the world lock while the world was being started (its
 * check saw no world yet), the stop's request reached the thread inside execve, stayed pending
 * in the new image, and killed it: 63-95 children of 300 died of SIGPWR. Prints how many of
 * the children did not exit 0 (0, as under glibc).
 * usage: exec_during_first_mark [CHILDREN] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *churn(void *arg) {
    char *keep[256] = {0};
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (;;) {
        int k = rand_r(&seed) % 256;
        free(keep[k]);
        keep[k] = malloc(16 + rand_r(&seed) % 300);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200, failed = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            pthread_t t;
            pthread_create(&t, NULL, churn, (void *)(uintptr_t)(i + 1));
            usleep(1000 + (unsigned)(i * 7919) % 3000);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    printf("children that did not exit 0: %d\n", failed);
    return 0;
}
