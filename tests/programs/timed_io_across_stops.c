/* A thread waits in the calls the kernel does not restart after a signal handler although
 * they are no waits of their own: socket calls on a socket with a timeout (SO_RCVTIMEO: read,
 * readv, recv, recvfrom, recvmsg, recvmmsg, accept, accept4; SO_SNDTIMEO on a full socket or
 * a full listener: write, writev, send, sendto, sendmsg, sendmmsg, connect) and System V's
 * semtimedop, semop and msgrcv, while the main thread allocates and frees (protect mode's
 * marks stop the world with a signal, again and again) or, with "fork", forks (every mode
 * stops the world for that). Under glibc no signal comes: each timed call fails with EAGAIN
 * after about its time, none with EINTR. It prints, per call, how many failed with EINTR
 * ("eintr_<call>"), returned well before their time ("early_<call>") or otherwise than by
 * their timeout ("other_<call>"): all 0, as under glibc. semop and msgrcv wait for the main
 * thread (a semaphore's post, a message), 3 times each: "woken_<call> 3", as under glibc. With
 * "interrupt" the main thread also sends SIGUSR1 (no SA_RESTART) while the waiter is in a
 * recv with a 10 s timeout: that one must still fail with EINTR ("program_signal_interrupts
 * 1"). */
#define _GNU_SOURCE
#include "common.h"
#include "stops_common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2
#define WAIT_MS 30

static atomic_int done, phase;
static volatile sig_atomic_t usr1;
static pthread_t waiter_thread;
static int interrupt, semid = -1, msgid = -1;

static void on_usr1(int sig) {
    (void)sig;
    usr1++;
}

enum { READ, READV, RECV, RECVFROM, RECVMSG, RECVMMSG, ACCEPT, ACCEPT4, WRITE, WRITEV, SEND,
       SENDTO, SENDMSG, SENDMMSG, CONNECT, SEMTIMEDOP, CALLS };
static const char *const names[CALLS] = {"read", "readv", "recv", "recvfrom", "recvmsg",
                                         "recvmmsg", "accept", "accept4", "write", "writev",
                                         "send", "sendto", "sendmsg", "sendmmsg", "connect",
                                         "semtimedop"};
static int eintr[CALLS], early[CALLS], other[CALLS];

static void set_timeout(int fd, int opt, long ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) != 0)
        perror("setsockopt");
}

/* The sockets the calls wait on: a stream nobody writes to, a datagram socket nobody sends
 * to, a listener nobody connects to (all with SO_RCVTIMEO), a stream whose peer reads
 * nothing, filled, and a listener whose backlog is full (SO_SNDTIMEO). */
static int quiet_stream, quiet_dgram, quiet_listener, full_stream, full_listener_addr_len;
static struct sockaddr_un full_listener_addr;

static int listener(const char *name, int backlog, struct sockaddr_un *addr, int *len) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    /* (an abstract name: nothing in the file system to clean up) */
    int n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "oscar-%s-%d", name,
                     (int)getpid());
    *len = (int)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    if (bind(fd, (struct sockaddr *)addr, (socklen_t)*len) != 0 || listen(fd, backlog) != 0)
        perror("listener");
    return fd;
}

static void make_sockets(void) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    quiet_stream = sv[0];
    set_timeout(quiet_stream, SO_RCVTIMEO, WAIT_MS);
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    quiet_dgram = sv[0];
    set_timeout(quiet_dgram, SO_RCVTIMEO, WAIT_MS);
    struct sockaddr_un addr;
    int len;
    quiet_listener = listener("quiet", 4, &addr, &len);
    set_timeout(quiet_listener, SO_RCVTIMEO, WAIT_MS);

    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    full_stream = sv[0];
    char block[4096];
    memset(block, 7, sizeof block);
    while (send(full_stream, block, sizeof block, MSG_DONTWAIT) > 0) {
    }
    while (send(full_stream, block, 1, MSG_DONTWAIT) > 0) {
    }
    set_timeout(full_stream, SO_SNDTIMEO, WAIT_MS);

    /* A backlog of 0 takes one connection; the next waits for room. */
    listener("full", 0, &full_listener_addr, &full_listener_addr_len);
    for (int i = 0; i < 8; i++) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(c, (struct sockaddr *)&full_listener_addr,
                    (socklen_t)full_listener_addr_len) != 0)
            break;
    }
}

/* One timed call: -1 and errno as the call says. */
static long timed_call(int call) {
    char buf[64];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    struct mmsghdr mm = {.msg_hdr = msg};
    struct sembuf down = {0, -1, 0};
    struct timespec ts = {0, WAIT_MS * 1000000L};
    switch (call) {
    case READ: return read(quiet_stream, buf, sizeof buf);
    case READV: return readv(quiet_stream, &iov, 1);
    case RECV: return recv(quiet_stream, buf, sizeof buf, 0);
    case RECVFROM: return recvfrom(quiet_stream, buf, sizeof buf, 0, NULL, NULL);
    case RECVMSG: return recvmsg(quiet_stream, &msg, 0);
    case RECVMMSG: return recvmmsg(quiet_dgram, &mm, 1, 0, NULL);
    case ACCEPT: return accept(quiet_listener, NULL, NULL);
    case ACCEPT4: return accept4(quiet_listener, NULL, NULL, SOCK_CLOEXEC);
    case WRITE: return write(full_stream, buf, 1);
    case WRITEV: iov.iov_len = 1; return writev(full_stream, &iov, 1);
    case SEND: return send(full_stream, buf, 1, 0);
    case SENDTO: return sendto(full_stream, buf, 1, 0, NULL, 0);
    case SENDMSG: iov.iov_len = 1; return sendmsg(full_stream, &msg, 0);
    case SENDMMSG: iov.iov_len = 1; return sendmmsg(full_stream, &mm, 1, 0);
    case CONNECT: {
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        set_timeout(c, SO_SNDTIMEO, WAIT_MS);
        int r = connect(c, (struct sockaddr *)&full_listener_addr,
                        (socklen_t)full_listener_addr_len);
        int e = errno;
        close(c);
        errno = e;
        return r;
    }
    default: return semid < 0 ? (errno = EAGAIN, -1) : semtimedop(semid, &down, 1, &ts);
    }
}

/* Until the main thread says so (phase), then 3 posts of the semaphore or messages: how many
 * times the wait returned with it. */
static int woken(int how) {
    int n = 0;
    atomic_fetch_add(&phase, 1); /* (the main thread sends once it sees this) */
    if (semid < 0)
        return 3; /* (no System V IPC here: as if woken, under glibc too) */
    while (n < 3) {
        struct sembuf down = {0, -1, 0};
        struct { long type; char text[8]; } m;
        long r = how == 0 ? semop(semid, &down, 1) : msgrcv(msgid, &m, sizeof m.text, 0, 0);
        if (r < 0) {
            fprintf(stderr, "wait %d failed: %s\n", how, strerror(errno));
            return -1000 - n;
        }
        n++;
    }
    return n;
}

static void *waiter(void *arg) {
    (void)arg;
    for (int round = 0; round < ROUNDS; round++)
        for (int call = 0; call < CALLS; call++) {
            double t0 = now();
            long r = timed_call(call);
            int e = errno;
            double took = (now() - t0) * 1000;
            if (r < 0 && e == EINTR)
                eintr[call]++;
            else if (r >= 0 || e != EAGAIN) {
                fprintf(stderr, "%s returned %ld: %s\n", names[call], r, strerror(e));
                other[call]++;
            } else if (took < WAIT_MS / 2.0) /* (the kernel's socket timeouts are jiffies) */
                early[call]++;
        }
    for (int call = 0; call < CALLS; call++)
        printf("eintr_%s %d\nearly_%s %d\nother_%s %d\n", names[call], eintr[call],
               names[call], early[call], names[call], other[call]);
    printf("woken_semop %d\n", woken(0));
    printf("woken_msgrcv %d\n", woken(1));
    if (interrupt) {
        set_timeout(quiet_stream, SO_RCVTIMEO, 10000);
        atomic_fetch_add(&phase, 1);
        char c;
        long r = recv(quiet_stream, &c, 1, 0);
        printf("program_signal_interrupts %d\n", r < 0 && errno == EINTR);
    }
    atomic_store(&done, 1);
    return NULL;
}

/* Once the waiter reached phase `at`: `n` wakes of kind `how` (0 a semaphore post, 1 a
 * message, 2 SIGUSR1), 100 ms apart. */
static void send_when(int at, int n, int how) {
    while (atomic_load(&phase) < at && !atomic_load(&done))
        busy();
    for (int i = 0; i < n; i++) {
        double until = now() + 0.1;
        while (now() < until) /* (marks or forks keep coming meanwhile) */
            busy();
        struct sembuf up = {0, 1, 0};
        struct { long type; char text[8]; } m = {1, "wake"};
        if (how == 2)
            pthread_kill(waiter_thread, SIGUSR1);
        else if (semid >= 0 && how == 0)
            semop(semid, &up, 1);
        else if (semid >= 0)
            msgsnd(msgid, &m, sizeof m.text, 0);
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        interrupt |= strcmp(argv[i], "interrupt") == 0;
        forking |= strcmp(argv[i], "fork") == 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* (no SA_RESTART: a timed recv fails with EINTR either way) */
    sigaction(SIGUSR1, &sa, NULL);
    make_sockets();
    semid = semget(IPC_PRIVATE, 1, 0600);
    msgid = semid < 0 ? -1 : msgget(IPC_PRIVATE, 0600);
    if (msgid < 0 && semid >= 0) {
        semctl(semid, 0, IPC_RMID);
        semid = -1;
    }
    pthread_create(&waiter_thread, NULL, waiter, NULL);
    send_when(1, 3, 0); /* semop */
    send_when(2, 3, 1); /* msgrcv */
    if (interrupt)
        send_when(3, 1, 2);
    while (!atomic_load(&done))
        busy();
    pthread_join(waiter_thread, NULL);
    if (semid >= 0) {
        semctl(semid, 0, IPC_RMID);
        msgctl(msgid, IPC_RMID, NULL);
    }
    printf("usr1 %d\n", (int)usr1);
    return 0;
}
