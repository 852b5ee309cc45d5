/* A pointer only the kernel holds: the only pointer to a freed object was written to a pipe
 * (or a stream socket pair) and not read back yet, as one thread hands objects to another
 * through a pipe. Three bytes go first, so the pointer lies at no 8-byte boundary of the
 * stream. The program's own copy is masked (protect_common.h). Prints how often a new
 * allocation of the object's class was the freed object while it was in flight
 * ("held_reused", 0), whether reading the stream gives the freed address back
 * ("stream_returns_freed 1"), then, the pointer read and dropped, how often the object was
 * handed out again ("released_reused", > 0).
 *
 * Protect mode notes the pipes and stream socket pairs the program makes and reads what they
 * hold as roots at every mark (scan/kroots.h): the pipe's through tee(2), the socket's by
 * peeking. Arguments:
 *   socket   a stream socket pair instead of a pipe
 *   dgram, seqpacket  a datagram (or sequenced-packet) socket pair instead, the pointer's
 *            datagram behind an empty one and one of 5 bytes (the first datagram's size is
 *            all the kernel says is pending: 0 here)
 *   named    a local socket of the program's connected to another of its own by an address
 *            (abstract: listen, connect, accept; a datagram socket bound there and one that
 *            sends to it), not a pair; with reverse, the accepted end writes
 *   dup      the pipe's read end lives on as a copy (dup2), the first closed
 *   procfd, scm, pidfd  ... as a descriptor the wrappers do not see made: the pipe opened
 *            again through /proc/self/fd/N, the read end sent to the process itself over a
 *            local socket (SCM_RIGHTS) and received, or taken with pidfd_getfd; the first
 *            closed. Before, the note of the first was dropped once it was closed, and the
 *            object handed out again in every run
 *   peekoff  the program set the socket's peek offset itself (SO_PEEK_OFF 1): it must be
 *            as it was after the marks ("peek_offset_kept 1")
 *   many     1100 pipes are made first (and kept): more than Oscar notes, so its marks read
 *            every pipe of /proc/self/fd instead ("unsupported" where RLIMIT_NOFILE's hard
 *            limit leaves no room for them)
 *   raw      the pipe or socket pair made by syscall(SYS_pipe2 / SYS_socketpair), past libc's
 *            functions: unseen before, its pointer was handed out again in every run
 *   control  nothing is written: held_reused > 0 (the check can fail) */
#define _GNU_SOURCE
#include "protect_common.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define MANY 1100

static int has(int argc, char **argv, const char *what) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], what) == 0)
            return 1;
    return 0;
}

/* The object's address into the stream, unmasked only in this frame (cleared after). */
__attribute__((noinline)) static void send_pointer(int fd, uintptr_t masked) {
    unsigned char msg[3 + sizeof(uintptr_t)] = {'a', 'b', 'c'};
    uintptr_t p = masked ^ MASK;
    memcpy(msg + 3, &p, sizeof p);
    if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg)
        exit(2);
    memset(msg, 0, sizeof msg);
    p = 0;
}

/* The pointer read back: is it the object's? (compared masked) */
__attribute__((noinline)) static int receive_pointer(int fd, uintptr_t masked, int datagrams) {
    unsigned char msg[3 + sizeof(uintptr_t)];
    size_t got = 0;
    while (got < sizeof msg) {
        ssize_t n = read(fd, msg + got, sizeof msg - got);
        if (datagrams && n >= 0 && (size_t)n < sizeof msg)
            continue; /* (the datagrams before the pointer's) */
        if (n <= 0)
            exit(2);
        got += (size_t)n;
    }
    uintptr_t p;
    memcpy(&p, msg + 3, sizeof p);
    int same = (p ^ MASK) == masked && memcmp(msg, "abc", 3) == 0;
    memset(msg, 0, sizeof msg);
    p = 0;
    return same;
}

/* Two sockets of this process connected through an abstract AF_UNIX address (no pair):
 * fds[0] reads, fds[1] writes (reverse: the accepted end writes). 0, or -1 (errno). */
static int named_sockets(int type, int reverse, int fds[2]) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "oscar-test-%d", (int)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                strlen(a.sun_path + 1));
    int server = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    int client = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (server < 0 || client < 0 || bind(server, (struct sockaddr *)&a, len) != 0)
        return -1;
    if (type == SOCK_DGRAM) {
        fds[0] = server;
        fds[1] = client;
        return connect(client, (struct sockaddr *)&a, len);
    }
    if (listen(server, 1) != 0 || connect(client, (struct sockaddr *)&a, len) != 0)
        return -1;
    struct sockaddr_un peer;
    socklen_t peer_len = sizeof peer;
    int accepted = accept(server, (struct sockaddr *)&peer, &peer_len);
    if (accepted < 0)
        return -1;
    close(server);
    fds[0] = reverse ? client : accepted;
    fds[1] = reverse ? accepted : client;
    return 0;
}

/* procfd, scm, pidfd: fd under a number of its own made another way than dup; else fd. */
static int move_descriptor(int argc, char **argv, int fd) {
    if (has(argc, argv, "procfd")) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        return open(path, O_RDONLY | O_NONBLOCK);
    }
    if (has(argc, argv, "pidfd")) {
        int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
        int got = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (pidfd >= 0)
            close(pidfd);
        return got;
    }
    if (!has(argc, argv, "scm"))
        return fd;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
        return -1;
    char c = 'x', cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&c, 1};
    struct msghdr m;
    memset(&m, 0, sizeof m);
    memset(cbuf, 0, sizeof cbuf);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    int got = -1;
    if (sendmsg(sv[0], &m, 0) == 1) {
        memset(cbuf, 0, sizeof cbuf);
        m.msg_controllen = sizeof cbuf;
        if (recvmsg(sv[1], &m, 0) == 1 && CMSG_FIRSTHDR(&m))
            memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
    }
    close(sv[0]);
    close(sv[1]);
    return got;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int socket_pair = has(argc, argv, "socket"), peekoff = has(argc, argv, "peekoff");
    int type = has(argc, argv, "dgram") ? SOCK_DGRAM
               : has(argc, argv, "seqpacket") ? SOCK_SEQPACKET : SOCK_STREAM;
    socket_pair |= type != SOCK_STREAM;
    int fds[2];
    if (has(argc, argv, "many")) {
        struct rlimit r;
        getrlimit(RLIMIT_NOFILE, &r);
        r.rlim_cur = r.rlim_max;
        if (r.rlim_max < 2 * MANY + 64 || setrlimit(RLIMIT_NOFILE, &r) != 0) {
            printf("unsupported RLIMIT_NOFILE's hard limit %lu\n", (unsigned long)r.rlim_max);
            return 0;
        }
        for (int i = 0; i < MANY; i++)
            if (pipe(fds) != 0) {
                perror("pipe");
                return 2;
            }
    }
    int raw = has(argc, argv, "raw");
    if (has(argc, argv, "named") ? named_sockets(type, has(argc, argv, "reverse"), fds) != 0
        : socket_pair && raw ? syscall(SYS_socketpair, AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0
        : socket_pair        ? socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0
        : raw                ? syscall(SYS_pipe2, fds, O_CLOEXEC) != 0
                             : pipe2(fds, O_CLOEXEC) != 0) {
        perror("pipe/socketpair/socket");
        return 2;
    }
    int rd = fds[0], wr = fds[1];
    if (has(argc, argv, "dup")) {
        int copy = dup2(rd, 100);
        close(rd);
        rd = copy;
    }
    int moved = move_descriptor(argc, argv, rd);
    if (moved < 0) {
        perror("moving the read end");
        return 2;
    }
    if (moved != rd) {
        close(rd);
        rd = moved;
    }
    int off = 1;
    if (peekoff && setsockopt(rd, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off) != 0) {
        perror("SO_PEEK_OFF");
        return 2;
    }
    uintptr_t m = make_object();
    if (type != SOCK_STREAM && (write(wr, "", 0) != 0 || write(wr, "12345", 5) != 5)) {
        perror("write");
        return 2;
    }
    if (!control)
        send_pointer(wr, m);
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    if (peekoff) {
        socklen_t len = sizeof off;
        off = -2;
        getsockopt(rd, SOL_SOCKET, SO_PEEK_OFF, &off, &len);
        printf("peek_offset_kept %d\n", off == 1);
        off = -1;
        setsockopt(rd, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off);
    }
    if (control)
        return 0;
    printf("stream_returns_freed %d\n", receive_pointer(rd, m, type != SOCK_STREAM));
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
