/* A pointer only the kernel holds: a freed object is still registered as epoll's user data
 * (a server that frees a connection but forgets EPOLL_CTL_DEL). The program's own copy is
 * masked (protect_common.h), so the kernel's is the only one. Prints how often a new
 * allocation of the object's class was the freed object (held_reused), then whether epoll
 * still hands back the freed address ("epoll_returns_freed 1").
 *
 * Protect mode notes the epoll instances the program makes and reads their registrations'
 * user data as roots (scan/kroots.h); strict and fast mode never hand an address out again.
 * Either way held_reused is 0. Arguments:
 *   dup      the instance lives on through a copy of its descriptor (dup2), the first closed
 *   fdup     likewise, the copy made by fcntl(F_DUPFD_CLOEXEC)
 *   raw      the instance is made by the system call itself, not libc's function (as one
 *            inherited across exec, or made before Oscar was loaded)
 *   del      control: the registration is removed (EPOLL_CTL_DEL) before the churn
 *   close    control: the instance is closed before the churn
 * With del or close nothing holds the object: held_reused > 0 in protect mode and under glibc
 * (the check can fail). */
#include "protect_common.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) static void watch(int ep, int fd, uintptr_t masked) {
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.u64 = masked ^ MASK;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll_ctl");
        exit(2);
    }
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[argc - 1] : "";
    int ep = strcmp(how, "raw") == 0 ? (int)syscall(SYS_epoll_create1, EPOLL_CLOEXEC)
                                     : epoll_create1(EPOLL_CLOEXEC);
    int fd = eventfd(0, EFD_CLOEXEC);
    if (ep < 0 || fd < 0) {
        perror("epoll_create1/eventfd");
        return 2;
    }
    uintptr_t m = make_object();
    watch(ep, fd, m);
    if (strcmp(how, "dup") == 0) {
        int copy = dup2(ep, 100);
        close(ep);
        ep = copy;
    } else if (strcmp(how, "fdup") == 0) {
        int copy = fcntl(ep, F_DUPFD_CLOEXEC, 200);
        close(ep);
        ep = copy;
    } else if (strcmp(how, "del") == 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    } else if (strcmp(how, "close") == 0) {
        close(ep);
        ep = -1;
    }
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    if (ep < 0 || strcmp(how, "del") == 0)
        return 0;
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != (ssize_t)sizeof one)
        return 2;
    struct epoll_event got;
    int n = epoll_wait(ep, &got, 1, 1000);
    printf("epoll_returns_freed %d\n", n == 1 && (got.data.u64 ^ MASK) == m);
    return 0;
}
