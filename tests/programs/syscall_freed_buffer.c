/* A freed buffer handed to a system call (issue 18, item 20): read() into it (the kernel
 * writes it), write() from it (the kernel reads it), recv/send on a socket pair, and
 * readv/writev. Under glibc the calls succeed on the stale memory; under Oscar's strict mode
 * the kernel used to return EFAULT without a report, and in fast mode to write into the freed
 * object. Expected with Oscar: a heap-use-after-free report (WRITE for the reads, READ for the
 * writes) and death by SIGSEGV before the call. argv[1]: read, write, recv, send, readv,
 * writev; "live" does the same calls on live buffers and must print what glibc prints. */
#include "common.h"
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    test_init();
    const char *what = argc > 1 ? argv[1] : "read";
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 2;
    char *buf = malloc(64);
    char *volatile neighbour = malloc(64); /* (fast mode: keeps buf's shadow page mapped) */
    memset(buf, 'x', 64);
    write(sv[0], "hello", 5);
    if (strcmp(what, "live") == 0) {
        ssize_t r = read(sv[1], buf, 64);
        struct iovec iov = {buf, 5};
        ssize_t w = writev(sv[0], &iov, 1);
        ssize_t s = send(sv[0], buf, 5, 0);
        ssize_t c = recv(sv[1], buf, 64, 0);
        printf("live %zd %zd %zd %zd %.5s\n", r, w, s, c, buf);
        free(buf);
        return 0;
    }
    free(buf);
    ssize_t r = -1;
    struct iovec iov = {buf, 64};
    if (strcmp(what, "read") == 0)
        r = read(sv[1], buf, 64);
    else if (strcmp(what, "write") == 0)
        r = write(sv[0], buf, 5);
    else if (strcmp(what, "recv") == 0)
        r = recv(sv[1], buf, 64, 0);
    else if (strcmp(what, "send") == 0)
        r = send(sv[0], buf, 5, 0);
    else if (strcmp(what, "readv") == 0)
        r = readv(sv[1], &iov, 1);
    else if (strcmp(what, "writev") == 0)
        r = writev(sv[0], &iov, 1);
    printf("returned %zd\n", r);
    printf("NOT REACHED\n");
    return 0;
}
