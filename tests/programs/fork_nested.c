/* Nested forks: parent -> child -> grandchild -> great-grandchild. Every level allocates and
 * frees, writes its own copy of objects inherited from above, and checks that its ancestors
 * still see their own data (no write crosses a fork in either direction). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define DEPTH 3
#define NOBJ 300

static unsigned char *objs[DEPTH + 1][NOBJ];
static size_t sizes[NOBJ];

static size_t size_of(int i) { return 1 + (size_t)((i * 2654435761u) % 9000u); }

static int churn(uint64_t seed) {
    void *tmp[400];
    uint64_t rng = seed;
    int ok = 1;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 400; i++) {
            size_t n = 1 + rng_next(&rng) % 3000;
            tmp[i] = malloc(n);
            if (!tmp[i])
                return 0;
            fill_pattern(tmp[i], n, seed + (uint64_t)i);
            ok &= check_pattern(tmp[i], n, seed + (uint64_t)i);
        }
        for (int i = 0; i < 400; i += 2)
            free(tmp[i]);
        for (int i = 1; i < 400; i += 2)
            free(tmp[i]);
    }
    return ok;
}

/* Every level's objects, as seen from level `me`: levels <= me hold their own pattern. */
static int check_levels(int me) {
    int ok = 1;
    for (int l = 0; l <= me; l++)
        for (int i = 0; i < NOBJ; i++)
            ok &= check_pattern(objs[l][i], sizes[i], (uint64_t)(l * 1000 + i + 1));
    return ok;
}

/* Level `me` (0 = original process) allocates its own objects, overwrites its copy of the
 * objects inherited from every ancestor with its own pattern, forks the next level, and
 * checks that nothing the descendant did is visible. Returns 1 if all was well. */
static int level(int me) {
    int ok = 1;
    for (int i = 0; i < NOBJ; i++) {
        objs[me][i] = malloc(sizes[i]);
        if (!objs[me][i])
            return 0;
        fill_pattern(objs[me][i], sizes[i], (uint64_t)(me * 1000 + i + 1));
    }
    ok &= check_levels(me);
    if (me == DEPTH)
        return ok && churn(99);
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        /* The child overwrites every inherited object, frees half of its ancestors' objects
         * and keeps going one level deeper. */
        for (int l = 0; l <= me; l++)
            for (int i = 0; i < NOBJ; i++)
                memset(objs[l][i], 0xEE, sizes[i]);
        for (int l = 0; l <= me; l++)
            for (int i = 0; i < NOBJ; i += 2) {
                free(objs[l][i]);
                objs[l][i] = malloc(sizes[i]);
                if (!objs[l][i])
                    _exit(3);
            }
        for (int l = 0; l <= me; l++)
            for (int i = 0; i < NOBJ; i++)
                fill_pattern(objs[l][i], sizes[i], (uint64_t)(l * 1000 + i + 1));
        int child_ok = churn((uint64_t)me + 7) && level(me + 1);
        for (int l = 0; l <= me + 1 && l <= DEPTH; l++)
            for (int i = 0; i < NOBJ; i++)
                free(objs[l][i]);
        _exit(child_ok ? 0 : 1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return 0;
    int child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!child_ok)
        printf("level %d: child status 0x%x\n", me + 1, status);
    ok &= child_ok;
    /* The child scribbled over and freed its copies: ours are untouched. */
    ok &= check_levels(me);
    ok &= churn((uint64_t)me + 100);
    ok &= check_levels(me);
    return ok;
}

int main(void) {
    test_init();
    for (int i = 0; i < NOBJ; i++)
        sizes[i] = size_of(i);
    int ok = level(0);
    check(ok, "every level kept its own heap and its descendants' writes stayed private");
    for (int i = 0; i < NOBJ; i++)
        free(objs[0][i]);
    printf("nested forks to depth %d done\n", DEPTH);
    return test_finish();
}
