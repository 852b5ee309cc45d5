/* A pointer only the kernel holds: a message waiting in a System V message queue (one thread
 * of a program handing an object to another with msgsnd, or to itself), the address three
 * bytes into the message's text. The program's own copy is masked (protect_common.h). Prints
 * how often a new allocation of the object's class was the freed object while the message
 * waited (held_reused), whether receiving it gives the freed address back
 * (msgq_returns_freed 1), then, received and dropped, whether the object is handed out again
 * (released_reused). Protect mode reads the messages waiting in the queues the program sent
 * to, without taking them (msgrcv's MSG_COPY; scan/kroots.h): held_reused is 0. With
 * "control" the message holds 0: nothing holds the object, held_reused > 0. First prints
 * whether this kernel can copy a message without taking it (msg_copy: 0 without
 * CONFIG_CHECKPOINT_RESTORE). The queue is removed at the end. */
#include "protect_common.h"

#include <errno.h>
#include <sys/ipc.h>
#include <sys/msg.h>

#ifndef MSG_COPY
#define MSG_COPY 040000
#endif

struct message {
    long type;
    unsigned char text[16]; /* the address at text + 3 */
};

static int queue = -1;

static void remove_queue(void) {
    if (queue >= 0)
        msgctl(queue, IPC_RMID, NULL);
}

__attribute__((noinline)) static void send_address(uintptr_t masked) {
    struct message m = {.type = 1};
    uintptr_t p = control ? 0 : masked ^ MASK;
    memcpy(m.text + 3, &p, sizeof p);
    if (msgsnd(queue, &m, sizeof m.text, 0) != 0) {
        perror("msgsnd");
        exit(2);
    }
    p = 0;
    memset(&m, 0, sizeof m);
    __asm__ volatile("" : : "m"(m), "m"(p) : "memory");
}

/* The message received (so taken from the queue), its address masked at once. */
__attribute__((noinline)) static uintptr_t receive_address(void) {
    struct message m;
    if (msgrcv(queue, &m, sizeof m.text, 0, IPC_NOWAIT) != (ssize_t)sizeof m.text) {
        perror("msgrcv");
        exit(2);
    }
    uintptr_t p;
    memcpy(&p, m.text + 3, sizeof p);
    uintptr_t masked = p ^ MASK;
    p = 0;
    memset(&m, 0, sizeof m);
    __asm__ volatile("" : : "m"(m), "m"(p) : "memory");
    return masked;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    queue = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    if (queue < 0) {
        perror("msgget");
        return 2;
    }
    atexit(remove_queue);
    struct message probe = {.type = 1};
    msgsnd(queue, &probe, sizeof probe.text, 0);
    int copies = msgrcv(queue, &probe, sizeof probe.text, 0, IPC_NOWAIT | MSG_COPY) >= 0;
    printf("msg_copy %d\n", copies || errno != ENOSYS);
    msgrcv(queue, &probe, sizeof probe.text, 0, IPC_NOWAIT);
    uintptr_t m = make_object();
    send_address(m);
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    printf("msgq_returns_freed %d\n", receive_address() == m);
    if (control)
        return 0;
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
