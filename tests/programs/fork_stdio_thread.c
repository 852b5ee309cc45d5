/* Issue 18, defect 2: fork while another thread uses stdio. A 100 MiB heap of live objects,
 * one thread doing fopen/fclose in a loop (each allocates and frees a FILE and its buffer),
 * while the main thread forks 40 children that each malloc/free and exit 0. The child must
 * see a consistent heap: none of them may die. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static atomic_int stop;

static void *stdio_loop(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        FILE *f = fopen("/proc/self/stat", "r");
        if (f) {
            char line[256];
            if (!fgets(line, sizeof line, f))
                line[0] = 0;
            fclose(f);
        }
    }
    return NULL;
}

int main(void) {
    test_init();
    enum { N = 100 * 1024 };                /* 100 MiB in 1 KiB objects */
    char **heap = malloc(N * sizeof *heap);
    for (int i = 0; i < N; i++) {
        heap[i] = malloc(1024);
        memset(heap[i], (char)i, 1024);
    }
    pthread_t t;
    pthread_create(&t, NULL, stdio_loop, NULL);
    int bad = 0;
    for (int f = 0; f < 40; f++) {
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            int ok = 1;
            for (int i = 0; i < 100; i++) {
                char *p = malloc(16 + (size_t)i * 40);
                if (!p)
                    ok = 0;
                else
                    memset(p, 1, 16 + (size_t)i * 40);
                free(p);
            }
            ok &= heap[N - 1][5] == (char)(N - 1);
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    check(bad == 0, "every child exited 0");
    for (int i = 0; i < N; i++)
        free(heap[i]);
    free(heap);
    printf("40 forks while a thread opens and closes files: %d failed\n", bad);
    return test_finish();
}
