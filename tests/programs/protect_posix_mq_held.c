/* A pointer only the kernel holds: a message waiting in a POSIX message queue (one thread of
 * a program handing an object to another with mq_send, or to itself), the address three
 * bytes into the message. The program's own copy is masked (protect_common.h). Prints
 * whether this system gives the process a queue at all (mq 0: none; the test skips), how
 * often a new allocation of the object's class was the freed object while the message waited
 * (held_reused), whether receiving it gives the freed address back (mq_returns_freed 1),
 * then, received and dropped, whether the object is handed out again (released_reused).
 * Protect mode keeps a copy of what the program sends to a queue until the queue is found
 * empty or the program receives it (scan/kroots.h): held_reused is 0.
 *
 * Variants: "control", the message holds 0 (nothing holds the object: held_reused > 0);
 * "reopen", the program closes its descriptor while the message waits and opens the queue
 * again by its name to receive it; "notify", the pointer is the value of the queue's
 * notification (mq_notify, SIGEV_SIGNAL with a signal that stays blocked: the kernel holds
 * the value until a message arrives), dropped by mq_notify(NULL); "many", 8 queues with 7
 * messages each of other priorities around the one that holds the pointer, received in
 * priority order; "other", a child process receives the message (the parent's copy goes once
 * a mark finds the queue empty). */
#include "protect_common.h"

#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/wait.h>

#define MSG_BYTES 16
#define QUEUES 8

static char names[QUEUES][64];
static mqd_t queues[QUEUES];

static void remove_queues(void) {
    for (int i = 0; i < QUEUES; i++)
        if (names[i][0])
            mq_unlink(names[i]);
}

static mqd_t open_queue(int i, int create) {
    struct mq_attr attr = {.mq_maxmsg = 10, .mq_msgsize = MSG_BYTES};
    if (create)
        snprintf(names[i], sizeof names[i], "/oscar-test-%d-%d", (int)getpid(), i);
    return mq_open(names[i], O_RDWR | (create ? O_CREAT | O_EXCL : 0), 0600,
                   create ? &attr : NULL);
}

__attribute__((noinline)) static void send_address(mqd_t q, uintptr_t masked, unsigned prio) {
    char m[MSG_BYTES] = {0};
    uintptr_t p = control || !masked ? 0 : masked ^ MASK;
    memcpy(m + 3, &p, sizeof p);
    if (mq_send(q, m, sizeof m, prio) != 0) {
        perror("mq_send");
        exit(2);
    }
    p = 0;
    memset(m, 0, sizeof m);
    __asm__ volatile("" : : "m"(m), "m"(p) : "memory");
}

/* A message received (so taken from the queue), the address in it masked at once. */
__attribute__((noinline)) static uintptr_t receive_address(mqd_t q, unsigned *prio) {
    char m[MSG_BYTES];
    if (mq_receive(q, m, sizeof m, prio) != (ssize_t)sizeof m) {
        perror("mq_receive");
        exit(2);
    }
    uintptr_t p;
    memcpy(&p, m + 3, sizeof p);
    uintptr_t masked = p ? p ^ MASK : 0;
    p = 0;
    memset(m, 0, sizeof m);
    __asm__ volatile("" : : "m"(m), "m"(p) : "memory");
    return masked;
}

__attribute__((noinline)) static void notify_with(mqd_t q, uintptr_t masked) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    ev.sigev_value.sival_ptr = control ? NULL : (void *)(masked ^ MASK);
    if (mq_notify(q, &ev) != 0) {
        perror("mq_notify");
        exit(2);
    }
    memset(&ev, 0, sizeof ev);
    __asm__ volatile("" : : "m"(ev) : "memory");
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "";
    int reopen = strcmp(how, "reopen") == 0, notify = strcmp(how, "notify") == 0;
    int many = strcmp(how, "many") == 0, other = strcmp(how, "other") == 0;
    atexit(remove_queues);
    int nq = many ? QUEUES : 1;
    for (int i = 0; i < nq; i++) {
        queues[i] = open_queue(i, 1);
        if (queues[i] == (mqd_t)-1) {
            printf("mq 0\n");
            return 0;
        }
    }
    printf("mq 1\n");
    uintptr_t m = make_object();
    if (notify) {
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, NULL);
        notify_with(queues[0], m);
    } else {
        /* (many: the pointer's message between others, in the last queue) */
        for (int i = 0; i < nq; i++)
            for (unsigned k = 0; k < (many ? 7u : 0u); k++)
                send_address(queues[i], 0, k == 3 ? 5 : k);
        send_address(queues[nq - 1], m, 4);
    }
    free_object(m);
    if (reopen) {
        mq_close(queues[0]);
        queues[0] = (mqd_t)-1;
    }
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    if (notify) {
        mq_notify(queues[0], NULL);
    } else {
        if (reopen && (queues[0] = open_queue(0, 0)) == (mqd_t)-1) {
            perror("mq_open again");
            return 2;
        }
        int found = 0;
        if (other) { /* (the child's receive is its own: the parent sees none) */
            pid_t child = fork();
            if (child == 0) {
                unsigned prio;
                _exit(receive_address(queues[0], &prio) == m && prio == 4 ? 7 : 8);
            }
            int status = 0;
            waitpid(child, &status, 0);
            found = WIFEXITED(status) && WEXITSTATUS(status) == 7;
            nq = 0;
        }
        for (int i = 0; i < nq; i++)
            for (unsigned k = 0; k < (many ? 7u : 0u) + (i == nq - 1); k++) {
                unsigned prio;
                uintptr_t got = receive_address(queues[i], &prio);
                found |= got == m && prio == 4;
            }
        printf("mq_returns_freed %d\n", found);
    }
    if (control)
        return 0;
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
