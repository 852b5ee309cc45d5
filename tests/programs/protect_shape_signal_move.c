/* Protect mode: a timer's signal handler, on a thread other than the one that marks, takes the
 * only pointer to a freed object out of a global into its own frame for a while, then puts it
 * back. A handler that runs while its thread is parked for a mark must not hide the pointer
 * (the park must hold off the program's signals), so the object is never handed out again.
 * See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <unistd.h>

static void *volatile global;
static atomic_int stop;

static void on_alarm(int sig) {
    (void)sig;
    void *volatile local = global;
    global = NULL;
    for (volatile int i = 0; i < 20000; i++)
        ;
    global = local;
    local = NULL;
}

static void *victim(void *arg) {
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    while (!atomic_load(&stop))
        usleep(1000);
    /* The handler's last signal frame lies dead below this frame, its saved registers maybe
     * still holding the pointer; glibc keeps an exited thread's stack mapped, and such a stale
     * copy would keep the object after the global is cleared (released_reused 0: seen once,
     * under the debug build on a loaded machine). */
    clear_stack();
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &s, NULL); /* (only the victim takes the timer's signal) */
    uintptr_t m = make_object();
    if (!control)
        global = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    pthread_t t;
    pthread_create(&t, NULL, victim, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    int held = churn(m, ROUNDS * 4);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    global = NULL;
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
    return 0;
}
