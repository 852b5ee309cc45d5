/* Callbacks from uninstrumented code into instrumented code: qsort, bsearch, atexit,
 * on_exit-style handlers, signal handlers (also on an alternate signal stack), pthread_once,
 * makecontext/swapcontext, and fork/vfork children. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void bye(void) { printf("atexit handler\n"); }

static volatile sig_atomic_t got;
static void handler(int sig) { got = sig; }

static int on_alt;
static void alt_handler(int sig) {
    char here;
    stack_t ss;
    sigaltstack(NULL, &ss);
    on_alt = (char *)ss.ss_sp <= &here && &here < (char *)ss.ss_sp + ss.ss_size;
    got = sig;
}

static void once_fn(void) { printf("once\n"); }

static ucontext_t main_ctx, co_ctx;
static void coroutine(int a, int b) {
    printf("coroutine %d %d\n", a, b);
    swapcontext(&co_ctx, &main_ctx);
    printf("coroutine resumed\n");
}

__attribute__((noinline)) static int child_work(int n) { return n <= 1 ? 1 : n * child_work(n - 1); }

int main(void) {
    atexit(bye);
    int v[] = {5, 3, 9, 1, 7, 2, 8};
    qsort(v, 7, sizeof v[0], cmp);
    for (int i = 0; i < 7; i++)
        printf("%d ", v[i]);
    printf("\n");
    int key = 7;
    int *found = bsearch(&key, v, 7, sizeof v[0], cmp);
    printf("bsearch: %d\n", found ? (int)(found - v) : -1);

    signal(SIGUSR1, handler);
    raise(SIGUSR1);
    printf("signal %d\n", (int)got);

    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = alt_handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    printf("altstack signal %d on alt stack %d\n", (int)got, on_alt);

    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, once_fn);

    static char co_stack[1 << 16];
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = co_stack;
    co_ctx.uc_stack.ss_size = sizeof co_stack;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, (void (*)(void))coroutine, 2, 11, 22);
    swapcontext(&main_ctx, &co_ctx);
    printf("back in main\n");
    swapcontext(&main_ctx, &co_ctx);
    printf("coroutine finished\n");

    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        printf("fork child %d\n", child_work(5));
        exit(0);
    }
    int st;
    waitpid(p, &st, 0);
    p = vfork();
    if (p == 0)
        _exit(child_work(4));
    waitpid(p, &st, 0);
    printf("vfork child %d\n", WEXITSTATUS(st));
    return 0;
}
