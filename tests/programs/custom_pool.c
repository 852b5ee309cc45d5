/* A slab allocator for fixed-size items on an Oscar arena, protected with views
 * (include/oscar.h), as a custom allocator would use the API.
 *   custom_pool correct     a correct program: same stdout with and without Oscar
 *   custom_pool uaf         read through a freed item: heap-use-after-free report
 *   custom_pool uaf_write   write through a freed item after its slot was reused
 *   custom_pool misuse      every misuse returns its code (printed) and the program goes on
 *   custom_pool arena_uaf   read from a freed arena
 *   custom_pool free_view   free() of a view: invalid-free report
 *   custom_pool fork        a view made in the parent works in the child; isolation holds
 *   custom_pool fork_uaf    the child revokes a view and reads it: the child faults
 *   custom_pool threads     4 threads create and revoke views concurrently
 *   custom_pool fork_threads  fork 100 times while 3 threads create and revoke views
 *   custom_pool long N      N views made and revoked through a ring of 64 (a long-running
 *                           cache): prints the anonymous memory, then revokes an early
 *                           view again (its code is printed) and reads through it */
#include "../../shim/oscar_api.c"

#include "common.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ITEM 96
#define SLOTS 4096

struct pool {
    char *slab;               /* arena */
    int free_list[SLOTS], nfree;
    pthread_mutex_t lock;
};

static void pool_init(struct pool *p) {
    p->slab = oscar_arena_alloc((size_t)ITEM * SLOTS);
    if (!p->slab) {
        printf("FAIL arena\n");
        exit(1);
    }
    for (int i = 0; i < SLOTS; i++)
        p->free_list[i] = SLOTS - 1 - i;
    p->nfree = SLOTS;
    pthread_mutex_init(&p->lock, NULL);
}

static void *pool_get(struct pool *p) {
    pthread_mutex_lock(&p->lock);
    int slot = p->nfree ? p->free_list[--p->nfree] : -1;
    pthread_mutex_unlock(&p->lock);
    if (slot < 0)
        return NULL;
    void *raw = p->slab + (size_t)slot * ITEM, *view;
    int r = oscar_view_create(raw, ITEM, &view);
    if (r != OSCAR_OK) {
        fprintf(stderr, "view_create: %s\n", oscar_strerror(r));
        view = raw; /* unprotected, still correct */
    }
    return view;
}

static void pool_put(struct pool *p, void *item) {
    char *raw = oscar_view_origin(item);
    int r = oscar_view_revoke(item);
    if (r != OSCAR_OK)
        fprintf(stderr, "view_revoke: %s\n", oscar_strerror(r));
    int slot = (int)((raw - p->slab) / ITEM);
    pthread_mutex_lock(&p->lock);
    p->free_list[p->nfree++] = slot;
    pthread_mutex_unlock(&p->lock);
}

static struct pool pool;

static const char *code(int r) {
    static const char *n[] = {"OSCAR_OK", "OSCAR_EINVAL", "OSCAR_ENOTOURS", "OSCAR_EREVOKED",
                              "OSCAR_EBUSY", "OSCAR_ENOMEM", "OSCAR_ENOTSUP"};
    return r >= 0 && r <= 6 ? n[r] : "?";
}

static int correct(void) {
    void *items[1000];
    unsigned long sum = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 1000; i++) {
            items[i] = pool_get(&pool);
            check(items[i] != NULL, "pool_get");
            memset(items[i], (round * 7 + i) & 0xff, ITEM);
        }
        for (int i = 0; i < 1000; i += 2) /* free half, reuse their slots */
            pool_put(&pool, items[i]);
        for (int i = 0; i < 1000; i += 2) {
            items[i] = pool_get(&pool);
            check(((unsigned char *)items[i])[5] != 0xab || 1, "reuse");
            memset(items[i], 0x5a, ITEM);
        }
        for (int i = 0; i < 1000; i++) {
            const unsigned char *b = items[i];
            check(oscar_view_origin(items[i]) != NULL, "origin");
            for (int k = 0; k < ITEM; k++)
                sum += b[k];
            pool_put(&pool, items[i]);
        }
        printf("round %d sum %lu\n", round, sum);
    }
    /* The arena sees writes made through views, and views see the arena. */
    char *v = pool_get(&pool), *raw = oscar_view_origin(v);
    strcpy(v, "written through the view");
    printf("arena reads: %s\n", raw);
    strcpy(raw, "written through the arena");
    printf("view reads: %s\n", v);
    pool_put(&pool, v);
    printf("strerror: %s\n", oscar_strerror(OSCAR_EREVOKED));
    check(oscar_arena_free(pool.slab) == OSCAR_OK, "arena_free");
    return test_finish();
}

static void *worker(void *arg) {
    long id = (long)arg;
    unsigned long bad = 0;
    for (int round = 0; round < 1500; round++) {
        char *v[8];
        for (int i = 0; i < 8; i++) {
            v[i] = pool_get(&pool);
            memset(v[i], (int)(id * 16 + i), ITEM);
        }
        for (int i = 0; i < 8; i++) {
            for (int k = 0; k < ITEM; k++)
                bad += v[i][k] != (char)(id * 16 + i);
            pool_put(&pool, v[i]);
        }
    }
    return (void *)bad;
}

int main(int argc, char **argv) {
    test_init();
    pool_init(&pool);
    const char *mode = argc > 1 ? argv[1] : "correct";
    fprintf(stderr, "oscar_active %d\n", oscar_active());
    if (!strcmp(mode, "correct"))
        return correct();
    if (!strcmp(mode, "uaf")) {
        char *a = pool_get(&pool);
        strcpy(a, "secret");
        print_ptr("item", a);
        print_ptr("origin", oscar_view_origin(a));
        pool_put(&pool, a);
        printf("read %c\n", a[8]);
        printf("NOT REACHED\n");
        return 0;
    }
    if (!strcmp(mode, "long")) {
        long n = argc > 2 ? atol(argv[2]) : 100000;
        char *first = NULL;
        char *ring[64] = {0};
        for (long i = 0; i < n; i++) {
            if (i == 1000) { /* (past the arena's own chunk, which stays live) */
                first = pool_get(&pool);
                strcpy(first, "first");
                pool_put(&pool, first);
            }
            int k = (int)(i % 64);
            if (ring[k]) {
                check(ring[k][0] == (char)k, "item intact");
                pool_put(&pool, ring[k]);
            }
            ring[k] = pool_get(&pool);
            ring[k][0] = (char)k;
        }
        for (int k = 0; k < 64; k++)
            pool_put(&pool, ring[k]);
        printf("anon_kib %ld\n", proc_kib("/proc/self/smaps_rollup", "Anonymous:"));
        printf("revoke again: %s\n", code(oscar_view_revoke(first)));
        print_ptr("item", first);
        printf("read %c\n", first[8]);
        printf("NOT REACHED\n");
        return 0;
    }
    if (!strcmp(mode, "uaf_write")) {
        char *a = pool_get(&pool);
        pool_put(&pool, a);
        char *b = pool_get(&pool); /* the same slot, a new view */
        check(oscar_view_origin(a) == oscar_view_origin(b), "slot reused");
        strcpy(b, "victim");
        print_ptr("item", a);
        a[0] = 'X';
        printf("NOT REACHED %s\n", b);
        return 0;
    }
    if (!strcmp(mode, "misuse")) {
        char *a = pool_get(&pool), *b = pool_get(&pool);
        void *v = (void *)1;
        printf("revoke_ok %s\n", code(oscar_view_revoke(b)));
        printf("revoke_twice %s\n", code(oscar_view_revoke(b)));
        printf("revoke_interior %s\n", code(oscar_view_revoke(a + 1)));
        char *m = malloc(64);
        printf("revoke_malloc %s\n", code(oscar_view_revoke(m)));
        printf("create_malloc %s\n", code(oscar_view_create(m, 16, &v)));
        printf("create_malloc_view_null %d\n", v == NULL);
        printf("create_of_view %s\n", code(oscar_view_create(a, 16, &v)));
        printf("create_past_end %s\n",
               code(oscar_view_create(pool.slab + ITEM * SLOTS - 8, 4096, &v)));
        printf("create_null_out %s\n", code(oscar_view_create(pool.slab, 16, NULL)));
        printf("revoke_arena %s\n", code(oscar_view_revoke(pool.slab)));
        printf("arena_free_busy %s\n", code(oscar_arena_free(pool.slab)));
        printf("arena_free_interior %s\n", code(oscar_arena_free(pool.slab + 4096)));
        printf("arena_free_malloc %s\n", code(oscar_arena_free(m)));
        printf("origin_of_malloc %d\n", oscar_view_origin(m) == (void *)m);
        free(m);
        strcpy(a, "still fine");
        printf("a %s\n", a);
        pool_put(&pool, a);
        printf("arena_free %s\n", code(oscar_arena_free(pool.slab)));
        printf("arena_free_twice %s\n", code(oscar_arena_free(pool.slab)));
        printf("create_freed_arena %s\n", code(oscar_view_create(pool.slab, 16, &v)));
        printf("done\n");
        return 0;
    }
    if (!strcmp(mode, "arena_uaf")) {
        char *arena = oscar_arena_alloc(10000);
        arena[9999] = 1;
        print_ptr("arena", arena);
        oscar_arena_free(arena);
        printf("read %d\n", arena[5000]);
        printf("NOT REACHED\n");
        return 0;
    }
    if (!strcmp(mode, "free_view")) {
        char *a = pool_get(&pool);
        print_ptr("item", a);
        free(a);
        printf("NOT REACHED\n");
        return 0;
    }
    if (!strcmp(mode, "fork") || !strcmp(mode, "fork_uaf")) {
        char *a = pool_get(&pool);
        strcpy(a, "parent");
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            printf("child sees %s\n", a);
            strcpy(a, "child");
            char *c = pool_get(&pool); /* views work in the child too */
            strcpy(c, "child item");
            printf("child item %s\n", c);
            pool_put(&pool, c);
            if (!strcmp(mode, "fork_uaf")) {
                pool_put(&pool, a);
                print_ptr("item", a);
                printf("child read %c\n", a[0]);
                printf("NOT REACHED\n");
            }
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st))
            printf("child signal %d\n", WTERMSIG(st));
        else
            printf("child exit %d\n", WEXITSTATUS(st));
        printf("parent sees %s\n", a);
        printf("parent arena sees %s\n", (char *)oscar_view_origin(a));
        pool_put(&pool, a);
        return test_finish();
    }
    if (!strcmp(mode, "threads")) {
        pthread_t t[4];
        for (long i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, worker, (void *)i);
        unsigned long bad = 0;
        for (int i = 0; i < 4; i++) {
            void *r;
            pthread_join(t[i], &r);
            bad += (unsigned long)r;
        }
        printf("bad bytes %lu\n", bad);
        printf("free slots %d\n", pool.nfree);
        check(oscar_arena_free(pool.slab) == OSCAR_OK, "arena_free");
        return test_finish();
    }
    if (!strcmp(mode, "fork_threads")) {
        pthread_t t[3];
        for (long i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, worker, (void *)i);
        int bad = 0;
        for (int i = 0; i < 100; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                /* not pool_get: a worker may hold the pool's mutex across fork */
                char *c;
                if (oscar_view_create(pool.slab + 4000 * ITEM, ITEM, (void **)&c) != OSCAR_OK)
                    _exit(3);
                strcpy(c, "in child");
                _exit(strcmp(c, "in child") != 0);
            }
            int st;
            waitpid(pid, &st, 0);
            bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        }
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
        printf("bad children %d\n", bad);
        return test_finish();
    }
    printf("unknown mode\n");
    return 2;
}
