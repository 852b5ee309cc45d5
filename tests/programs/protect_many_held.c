/* Protect mode: many freed objects held at once. A live heap array points to HELD freed
 * objects (more than one batch of a snapshot mark's answer, os/cowchild.h's COW_WORDS 4096,
 * so its batching is exercised); the size class churns while marks run, 30,000 objects at a
 * time; "held_reused" counts allocations that returned one of them (must be 0). Then the
 * array is cleared, and "released_reused" counts them handed out again (> 0). The program's own list of the
 * addresses is masked (protect_common.h), sorted, and searched. */
#include "protect_common.h"

#define HELD 10000

static int cmp(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static uintptr_t masked[HELD];

#define MANY (3 * HELD) /* objects live at once while churning, at most */
static void *volatile objs[MANY];

/* Allocate, then free, rounds of `many` objects of the held ones' size (more at once than
 * the other freed objects, so that released slots anywhere are handed out): how many
 * allocations were one of them? */
__attribute__((noinline)) static int churn_many(int rounds, int many) {
    int hits = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < many; i++) {
            objs[i] = malloc(OBJ_SIZE);
            uintptr_t key = (uintptr_t)objs[i] ^ MASK;
            hits += bsearch(&key, masked, HELD, sizeof *masked, cmp) != NULL;
        }
        for (int i = 0; i < many; i++) {
            free(objs[i]);
            objs[i] = NULL;
        }
    }
    return hits;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile *holder = calloc(HELD, sizeof(void *));
    for (int i = 0; i < HELD; i++)
        masked[i] = make_object();
    for (int i = 0; i < HELD; i++) {
        if (!control)
            holder[i] = (void *)(masked[i] ^ MASK);
        free_object(masked[i]);
    }
    qsort(masked, HELD, sizeof *masked, cmp);
    clear_stack();
    int held = churn_many(6, MANY);
    for (int i = 0; i < HELD; i++)
        holder[i] = NULL;
    clear_stack();
    report(held, churn_many(6, MANY));
    free((void *)holder);
    return 0;
}
