/* setjmp/longjmp and sigsetjmp/siglongjmp (out of a signal handler) across instrumented
 * frames; every function still returns normally afterwards. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static jmp_buf env;
static sigjmp_buf senv;

__attribute__((noinline)) static int dive(int n) {
    volatile int here = n;
    if (n == 0)
        longjmp(env, 7);
    return dive(n - 1) + here;
}

__attribute__((noinline)) static int catcher(int n) {
    int r = setjmp(env);
    if (r)
        return r * 100 + n;
    return dive(n);
}

static void on_usr1(int sig) { siglongjmp(senv, sig); }

__attribute__((noinline)) static int sdive(int n) {
    volatile int here = n;
    if (n == 0)
        raise(SIGUSR1);
    return sdive(n - 1) + here;
}

__attribute__((noinline)) static int scatcher(int n) {
    int r = sigsetjmp(senv, 1);
    if (r)
        return r * 1000 + n;
    return sdive(n);
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    for (int i = 0; i < 5; i++)
        printf("longjmp %d -> %d\n", i, catcher(i * 10));
    for (int i = 0; i < 5; i++)
        printf("siglongjmp %d -> %d\n", i, scatcher(i * 10));
    printf("done\n");
    return 0;
}
