/* glibc's fork resets, in the child, the lock of every FILE on its list; for a FILE the
 * program opened, the lock lies in a heap object. Two threads write to one such FILE, each
 * holding its lock (flockfile) for a while, while the main thread forks 200 times: the FILE
 * must stay usable in the parent (the child's reset must not reach the parent's lock: a lock
 * zeroed under its holder is left taken forever, and the writers hang). alarm() ends a hang. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static atomic_int stop;
static FILE *out;
static atomic_long rounds;

static void *writer(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        flockfile(out);
        for (int i = 0; i < 2000; i++)
            putc_unlocked('x', out);
        funlockfile(out);
        atomic_fetch_add(&rounds, 1);
    }
    return NULL;
}

int main(void) {
    test_init();
    alarm(60);
    out = fopen("/dev/null", "w");
    if (!out)
        return 2;
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, writer, NULL);
    int bad = 0;
    for (int f = 0; f < 200; f++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int status;
        waitpid(pid, &status, 0);
        bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    /* Both writers must still get the lock in turn. */
    long before = atomic_load(&rounds);
    while (atomic_load(&rounds) < before + 20)
        usleep(1000);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    check(bad == 0, "every child exited 0");
    fclose(out);
    printf("200 forks while two threads write to one FILE: done\n");
    return test_finish();
}
