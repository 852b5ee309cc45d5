/* A pointer only the kernel holds: a freed object is still registered as epoll's user data
 * (a server that frees a connection but forgets EPOLL_CTL_DEL). The program's own copy is
 * masked (protect_common.h), so the kernel's is the only one. Prints how often a new
 * allocation of the object's class was the freed object (held_reused), then whether epoll
 * still hands back the freed address ("epoll_returns_freed 1").
 *
 * Protect mode's mark reads the process's memory only, so it cannot see this pointer: the
 * object is handed out again and the next event gives the program a new object (README,
 * Limitations). Strict and fast mode never hand an address out again: held_reused is 0. */
#include "protect_common.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
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
    int ep = epoll_create1(EPOLL_CLOEXEC), fd = eventfd(0, EFD_CLOEXEC);
    if (ep < 0 || fd < 0) {
        perror("epoll_create1/eventfd");
        return 2;
    }
    uintptr_t m = make_object();
    watch(ep, fd, m);
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) != (ssize_t)sizeof one)
        return 2;
    struct epoll_event got;
    int n = epoll_wait(ep, &got, 1, 1000);
    printf("epoll_returns_freed %d\n", n == 1 && (got.data.u64 ^ MASK) == m);
    return 0;
}
