/* What OSCAR_MODE=fast (objects share shadow pages) guarantees, one shape per argument:
 *   poison: a freed object's bytes are gone (a secret is not readable back), its address is
 *           not handed out again, and calling a function pointer read from it faults;
 *   page:   once every object on a shadow page is freed and the thread's retire queue (256
 *           pages) has been flushed, any access to one of them faults;
 *   double: a double free is reported;
 *   large:  a freed large object (20000 B) is poisoned at once (its secret is gone) and
 *           faults once the retire queue has been flushed (QUEUE more frees);
 *   large-double: freeing such an object twice is reported at once. */
#include "common.h"

#include <string.h>

/* Entries of a thread's retire queue (RETIRE_MAX in src/heap/thread.h). */
#define QUEUE 256

struct session {
    void (*on_close)(void);
    long id; /* glibc's free writes its list pointers over the first 16 bytes */
    char secret[24];
};

static void close_session(void) { printf("session closed\n"); }

static int shape_poison(void) {
    struct session *s = malloc(sizeof *s);
    s->on_close = close_session;
    strcpy(s->secret, "hunter2-password");
    struct session *neighbour = malloc(sizeof *neighbour); /* keeps the page alive */
    print_ptr("ptr", s);
    free(s);
    volatile char *dangling = s->secret;
    printf("secret %s\n", memcmp((const char *)dangling, "hunter2", 7) == 0 ? "LEAKED" : "gone");
    struct session *again = malloc(sizeof *again);
    print_ptr("again", again);
    printf("reused %s\n", again == s ? "YES" : "no");
    again->on_close = close_session; /* under glibc this also sets the dangling s->on_close */
    void (*volatile f)(void) = s->on_close;
    f();
    printf("NOT REACHED %p\n", (void *)neighbour);
    return 0;
}

static int shape_page(void) {
    enum { N = 16, SIZE = 256 }; /* sixteen 256-byte objects fill one 4 KiB page */
    char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = malloc(SIZE);
    for (int i = 0; i < N; i++)
        free(p[i]);
    /* QUEUE more emptied pages fill the retire queue, which revokes them all, p's too. */
    static char *more[QUEUE * N];
    for (int i = 0; i < QUEUE * N; i++)
        more[i] = malloc(SIZE);
    for (int i = 0; i < QUEUE * N; i++)
        free(more[i]);
    print_ptr("ptr", p[3]);
    volatile char *q = p[3] + 5;
    print_ptr("access", (const void *)q);
    char v = *q;
    printf("NOT REACHED %d\n", v);
    return 0;
}

static int shape_double(void) {
    char *a = malloc(40), *b = malloc(40);
    print_ptr("ptr", a);
    free(a);
    free(a);
    printf("NOT REACHED %p\n", (void *)b);
    return 0;
}

static int shape_large(void) {
    char *big = malloc(20000);
    strcpy(big + 100, "hunter2-password");
    print_ptr("ptr", big);
    printf("size 20000\n");
    free(big);
    volatile char *dangling = big + 100;
    printf("secret %s\n", memcmp((const char *)dangling, "hunter2", 7) == 0 ? "LEAKED" : "gone");
    for (int i = 0; i < QUEUE; i++)
        free(malloc(5000));
    volatile char *q = big + 100;
    print_ptr("access", (const void *)q);
    char v = *q;
    printf("NOT REACHED %d\n", v);
    return 0;
}

static int shape_large_double(void) {
    char *big = malloc(20000), *other = malloc(20000);
    print_ptr("ptr", big);
    free(big);
    free(big);
    printf("NOT REACHED %p\n", (void *)other);
    return 0;
}

int main(int argc, char **argv) {
    test_init();
    const char *shape = argc > 1 ? argv[1] : "";
    if (!strcmp(shape, "poison"))
        return shape_poison();
    if (!strcmp(shape, "page"))
        return shape_page();
    if (!strcmp(shape, "double"))
        return shape_double();
    if (!strcmp(shape, "large"))
        return shape_large();
    if (!strcmp(shape, "large-double"))
        return shape_large_double();
    fprintf(stderr, "usage: fast_mode_shapes poison|page|double|large|large-double\n");
    return 2;
}
