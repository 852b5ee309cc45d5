/* Use after free in a callback registry: unsubscribe() frees the subscription but a second
 * registry (the event loop's copy) still lists it; the attacker refills it and the next event
 * calls the attacker's callback with an attacker argument.
 * Published: MITRE CWE-416; browser event-listener UAFs (e.g. CVE-2012-4792, IE CButton;
 * CVE-2014-1776) follow this pattern.
 * Primitive: use after free read of a callback -> control flow hijack. */
#include <string.h>
#include "common.h"

struct sub { void (*cb)(void *ctx, const char *ev); void *ctx; char topic[16]; };

static struct sub *registry[8];
static int nsubs;

static void on_tick(void *ctx, const char *ev) { printf("%s got %s\n", (const char *)ctx, ev); }
static void attacker(void *ctx, const char *ev) {
    (void)ev;
    printf("ATTACK SUCCEEDED: event reached attacker(%s)\n", (const char *)ctx);
}

static struct sub *subscribe(void (*cb)(void *, const char *), void *ctx) {
    struct sub *s = malloc(sizeof *s);
    *s = (struct sub){cb, ctx, "tick"};
    registry[nsubs++] = s;
    return s;
}

static void emit(const char *ev) {
    for (int i = 0; i < nsubs; i++)
        registry[i]->cb(registry[i]->ctx, ev);
}

int main(void) {
    test_init();
    printf("callback registry: freed subscription still registered\n");
    struct sub *s = subscribe(on_tick, "widget");
    emit("tick");
    print_ptr("victim", s);
    free(s); /* BUG: unsubscribed without removing it from the registry */
    static char arg[] = "pwned";
    struct sub fake = {attacker, arg, "tick"};
    void *msg = malloc(sizeof fake);
    memcpy(msg, &fake, sizeof fake);
    emit("tick");
    printf("attack failed\n");
    return 0;
}
