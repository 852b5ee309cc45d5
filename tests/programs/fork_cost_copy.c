/* fork's copy of the heap: every byte of every live object reaches the child (48 MB of
 * 1000-byte objects, with freed stretches between them: holes in the heap's file), the
 * child's writes stay in the child, and the same holds for a grandchild (a copy of a copy)
 * and for _Fork(). */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define OBJECT 1000
#define COUNT 48000
#define STRETCH 4096 /* objects [k * STRETCH, k * STRETCH + STRETCH / 2) are freed */

static unsigned char *obj[COUNT];

static int freed(size_t i) { return i % STRETCH < STRETCH / 2 && i / STRETCH % 2 == 1; }

static unsigned char byte_of(size_t i, size_t j) { return (unsigned char)(i * 31 + j * 7 + 1); }

/* Every byte of every live object as the parent wrote it? */
static int intact(void) {
    for (size_t i = 0; i < COUNT; i++) {
        if (freed(i))
            continue;
        for (size_t j = 0; j < OBJECT; j++)
            if (obj[i][j] != byte_of(i, j))
                return 0;
    }
    return 1;
}

/* The child: check, overwrite everything, allocate and free; exit 0 when all was intact. */
static void child_work(int depth) {
    int ok = intact();
    if (ok && depth > 0) { /* a grandchild, from the child's own copy */
        pid_t g = fork();
        if (g == 0)
            child_work(depth - 1);
        int st = 0;
        ok = g > 0 && waitpid(g, &st, 0) == g && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    for (size_t i = 0; i < COUNT; i++)
        if (!freed(i))
            memset(obj[i], 0xEE, OBJECT);
    for (int k = 0; k < 1000; k++)
        free(malloc(OBJECT));
    _exit(ok ? 0 : 1);
}

static int run_child(pid_t pid) {
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void) {
    test_init();
    for (size_t i = 0; i < COUNT; i++) {
        obj[i] = malloc(OBJECT);
        if (!obj[i])
            return 2;
        for (size_t j = 0; j < OBJECT; j++)
            obj[i][j] = byte_of(i, j);
    }
    for (size_t i = 0; i < COUNT; i++)
        if (freed(i)) {
            free(obj[i]);
            obj[i] = NULL;
        }
    for (int r = 0; r < 3; r++) {
        pid_t pid = fork();
        if (pid == 0)
            child_work(r == 1);
        check(run_child(pid), "the child saw every live object whole (fork)");
        check(intact(), "the parent's objects are untouched by the child");
    }
    pid_t pid = _Fork();
    if (pid == 0)
        child_work(0);
    check(run_child(pid), "the child saw every live object whole (_Fork)");
    check(intact(), "the parent's objects are untouched by the _Fork child");
    for (size_t i = 0; i < COUNT; i++)
        free(obj[i]);
    printf("3 forks, a grandchild and a _Fork saw the heap whole\n");
    return test_finish();
}
