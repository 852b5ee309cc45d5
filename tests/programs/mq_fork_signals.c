/* POSIX message queues under fork, threads and signals: two threads pass 20,000 messages
 * back and forth through two queues while the main thread forks 100 children (each sends
 * and receives a message of its own and exits), and a timer's signal handler sends to a
 * third queue (a handler may interrupt its thread inside mq_send: Oscar copies each message
 * sent, scan/mqlog.h, and must neither deadlock nor lose the program's errno there). Prints
 * the same under Oscar as under glibc: "mq 0" where no queue can be made, else the counts. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESSAGES 20000
#define FORKS 100

static char names[3][64];
static mqd_t ping, pong, ticks;
static volatile sig_atomic_t ticked, tick_errors;

static void remove_queues(void) {
    for (int i = 0; i < 3; i++)
        if (names[i][0])
            mq_unlink(names[i]);
}

static mqd_t make(int i, long maxmsg, int flags) {
    struct mq_attr attr = {.mq_maxmsg = maxmsg, .mq_msgsize = 32};
    snprintf(names[i], sizeof names[i], "/oscar-mqfork-%d-%d", (int)getpid(), i);
    return mq_open(names[i], O_RDWR | O_CREAT | O_EXCL | flags, 0600, &attr);
}

static void on_tick(int sig) {
    (void)sig;
    int saved = errno;
    char m[32] = "tick";
    if (mq_send(ticks, m, sizeof m, 1) == 0)
        ticked++;
    else if (errno != EAGAIN)
        tick_errors++;
    errno = saved;
}

static void *echo(void *arg) {
    (void)arg;
    char m[32];
    for (int i = 0; i < MESSAGES; i++) {
        unsigned prio;
        if (mq_receive(ping, m, sizeof m, &prio) != (ssize_t)sizeof m || prio != (unsigned)i % 7)
            abort();
        char *copy = malloc(32);
        memcpy(copy, m, sizeof m);
        if (mq_send(pong, copy, 32, prio) != 0)
            abort();
        free(copy);
    }
    return NULL;
}

static void *source(void *arg) {
    (void)arg;
    char m[32];
    long sum = 0;
    for (int i = 0; i < MESSAGES; i++) {
        char *p = malloc(32);
        snprintf(p, 32, "message %d", i);
        memcpy(m, p, sizeof m);
        free(p);
        if (mq_send(ping, m, sizeof m, (unsigned)i % 7) != 0)
            abort();
        unsigned prio;
        if (mq_receive(pong, m, sizeof m, &prio) != (ssize_t)sizeof m)
            abort();
        sum += atoi(m + 8);
    }
    return (void *)sum;
}

int main(void) {
    test_init();
    atexit(remove_queues);
    ping = make(0, 8, 0);
    pong = make(1, 8, 0);
    ticks = make(2, 10, O_NONBLOCK);
    if (ping == (mqd_t)-1 || pong == (mqd_t)-1 || ticks == (mqd_t)-1) {
        printf("mq 0\nOK\n");
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 500}, {0, 500}};
    setitimer(ITIMER_REAL, &every, NULL);
    pthread_t a, b;
    pthread_create(&a, NULL, echo, NULL);
    pthread_create(&b, NULL, source, NULL);
    int children_ok = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t child = fork();
        if (child == 0) {
            char name[64], m[32] = "child";
            struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 32};
            snprintf(name, sizeof name, "/oscar-mqfork-%d-child", (int)getpid());
            mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
            mq_unlink(name);
            unsigned prio;
            _exit(q != (mqd_t)-1 && mq_send(q, m, sizeof m, 3) == 0 &&
                          mq_receive(q, m, sizeof m, &prio) == (ssize_t)sizeof m && prio == 3
                      ? 0
                      : 1);
        }
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
        children_ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
        char m[32];
        while (mq_receive(ticks, m, sizeof m, NULL) == (ssize_t)sizeof m)
            ;
    }
    void *sum;
    pthread_join(a, NULL);
    pthread_join(b, &sum);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("mq 1\nchildren %d\nsum %ld\ntick_errors %d\nticked %s\nOK\n", children_ok, (long)sum,
           (int)tick_errors, ticked > 0 ? "yes" : "no");
    return 0;
}
