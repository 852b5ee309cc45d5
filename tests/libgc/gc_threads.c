/* Boehm GC (libgc), a real user of SIGPWR: its collector stops the program's threads with
 * pthread_kill(thread, SIGPWR), Oscar's park signal, and waits for each one's handler to
 * acknowledge it (then resumes them with SIGXCPU). Four threads build and drop linked lists
 * in the collected heap, and malloc and free now and then (Oscar's heap: in protect mode its
 * marks stop the threads, between and during the collections); the main thread forks now and
 * then (a stop in every mode). Every list is checked; prints what glibc prints.
 * Built by tests/test_libgc.py (gcc ... -lgc), not by CMake: libgc-dev may be missing. */
#define GC_THREADS
#include <gc/gc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 300

struct node {
    struct node *next;
    long value;
};

static void *worker(void *arg) {
    long id = (long)arg, bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct node *head = NULL;
        for (long i = 0; i < 500; i++) {
            struct node *n = GC_MALLOC(sizeof *n);
            n->next = head;
            n->value = id * 1000000 + r * 1000 + i;
            head = n;
            if (i % 8 == 0) { /* (Oscar's heap: its protect mode's marks) */
                void *p = malloc(16 + (size_t)(i % 300));
                free(p);
            }
        }
        long i = 499;
        for (struct node *n = head; n; n = n->next, i--)
            bad += n->value != id * 1000000 + r * 1000 + i;
        bad += i != -1;
        if (r % 50 == 0)
            GC_gcollect();
    }
    return (void *)bad;
}

int main(void) {
    GC_INIT();
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    int bad_forks = 0;
    for (int f = 0; f < 20; f++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int status;
        bad_forks += waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
                     WEXITSTATUS(status) != 0;
        usleep(5000);
    }
    long bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    GC_gcollect();
    printf("lists checked: %d, wrong values %ld, failed forks %d\n", THREADS * ROUNDS, bad,
           bad_forks);
    printf(bad || bad_forks ? "FAIL\n" : "OK\n");
    return bad || bad_forks;
}
