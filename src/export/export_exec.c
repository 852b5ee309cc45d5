/* export_exec: libc's exec functions. A stop of the world asks every thread with a signal of
 * its own (the park signal), and a thread that execs while one is pending keeps it pending in
 * the new image, where the handler is back to the default one: termination. A program whose
 * one thread exec'd while another freed died of SIGPWR in 1 of 80 runs (10 of 40 with marks
 * every 64 KiB; tests/programs/exec_while_marking.c). The real call now goes under the world
 * lock, taken between two stops with the program's own mask back (scan/world.h,
 * world_exec_begin), so nothing of ours is pending then; an exec that fails lets stops go on.
 * execl, execle and execlp give their arguments to the array forms, as glibc's do; each form
 * calls libc's own, so that what it does (execvp's search of PATH, the shell for a script
 * without #!) is libc's. posix_spawn and system exec from a child of their own, and a vfork
 * child shares this process's lock (world_exec_begin leaves both alone). errno is libc's. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/world.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

DECLARE(int, execve, const char *, char *const[], char *const[])
DECLARE(int, execv, const char *, char *const[])
DECLARE(int, execvp, const char *, char *const[])
DECLARE(int, execvpe, const char *, char *const[], char *const[])
DECLARE(int, fexecve, int, char *const[], char *const[])

__attribute__((constructor)) static void find_real_execs(void) {
    (void)real_fn_execve();
    (void)real_fn_execv();
    (void)real_fn_execvp();
    (void)real_fn_execvpe();
    (void)real_fn_fexecve();
}

/* One exec, under the world lock: r is what the real call returned (it returns only when it
 * failed), kept with its errno past the lock's release. */
#define EXEC_UNDER_LOCK(call)                                                                 \
    do {                                                                                      \
        struct world_send w_;                                                                 \
        bool held_ = world_exec_begin(&w_);                                                   \
        int r_ = (call);                                                                      \
        if (held_) {                                                                          \
            int e_ = errno;                                                                   \
            world_exec_end(&w_);                                                              \
            errno = e_;                                                                       \
        }                                                                                     \
        return r_;                                                                            \
    } while (0)

OSCAR_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    EXEC_UNDER_LOCK(real_fn_execve()(path, argv, envp));
}

OSCAR_EXPORT int execv(const char *path, char *const argv[]) {
    EXEC_UNDER_LOCK(real_fn_execv()(path, argv));
}

OSCAR_EXPORT int execvp(const char *file, char *const argv[]) {
    EXEC_UNDER_LOCK(real_fn_execvp()(file, argv));
}

OSCAR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    EXEC_UNDER_LOCK(real_fn_execvpe()(file, argv, envp));
}

OSCAR_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    EXEC_UNDER_LOCK(real_fn_fexecve()(fd, argv, envp));
}

/* The arguments after arg, up to the NULL, and (le) the environment after it. */
static size_t count_args(const char *arg, va_list ap) {
    size_t n = 1;
    for (const char *a = arg; a; a = va_arg(ap, const char *))
        n++;
    return n;
}

#define ARGV_FROM_LIST(argv, arg, envp_out)                                                   \
    va_list ap_;                                                                              \
    va_start(ap_, arg);                                                                       \
    size_t n_ = count_args(arg, ap_);                                                         \
    va_end(ap_);                                                                              \
    char *argv[n_];                                                                           \
    va_start(ap_, arg);                                                                       \
    argv[0] = (char *)arg;                                                                    \
    for (size_t i_ = 1; i_ < n_; i_++)                                                        \
        argv[i_] = va_arg(ap_, char *);                                                       \
    envp_out;                                                                                 \
    va_end(ap_)

OSCAR_EXPORT int execl(const char *path, const char *arg, ...) {
    ARGV_FROM_LIST(argv, arg, (void)0);
    return execv(path, argv);
}

OSCAR_EXPORT int execlp(const char *file, const char *arg, ...) {
    ARGV_FROM_LIST(argv, arg, (void)0);
    return execvp(file, argv);
}

OSCAR_EXPORT int execle(const char *path, const char *arg, ...) {
    char *const *envp;
    ARGV_FROM_LIST(argv, arg, envp = va_arg(ap_, char *const *));
    return execve(path, argv, envp);
}
