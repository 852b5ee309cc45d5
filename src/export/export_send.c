/* export_send: the program's sends of a signal to one of its own threads (raise,
 * pthread_kill, tgkill; pthread_sigqueue is in export_kroots.c). For the park signal only,
 * the send goes through scan/world.h's world_program_send_begin/_end: a request of a stop
 * pending at the same thread would otherwise swallow it (a standard signal is pending once),
 * and the program's handler would never run (tests/programs/signal_park_counts.c). Every
 * other signal goes straight to libc's function. A send to the whole process (kill,
 * sigqueue) needs nothing: the kernel keeps it apart from a thread's own pending signals. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/world.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

DECLARE(int, raise, int)
DECLARE(int, pthread_kill, pthread_t, int)
DECLARE(int, tgkill, pid_t, pid_t, int)

__attribute__((constructor)) static void find_real_functions(void) {
    void *all[] = {real_fn_raise(), real_fn_pthread_kill(), real_fn_tgkill()};
    (void)all;
}

OSCAR_EXPORT int raise(int sig) {
    if (sig != world_park_signal())
        return real_fn_raise()(sig);
    struct world_send w;
    world_program_send_begin(true, &w);
    int r = real_fn_raise()(sig);
    world_program_send_end(&w);
    return r;
}

OSCAR_EXPORT int pthread_kill(pthread_t thread, int sig) {
    if (sig != world_park_signal())
        return real_fn_pthread_kill()(thread, sig);
    struct world_send w;
    world_program_send_begin(pthread_equal(thread, pthread_self()), &w);
    int r = real_fn_pthread_kill()(thread, sig);
    world_program_send_end(&w);
    return r;
}

OSCAR_EXPORT int tgkill(pid_t pid, pid_t tid, int sig) {
    if (sig != world_park_signal() || pid != getpid())
        return real_fn_tgkill()(pid, tid, sig);
    struct world_send w;
    world_program_send_begin(tid == gettid(), &w);
    int r = real_fn_tgkill()(pid, tid, sig);
    world_program_send_end(&w);
    return r;
}
