/* Reference count underflow then reuse: one extra put() drops the count to zero and frees the
 * object while another holder still uses it; the chunk is refilled with a fake ops pointer.
 * Published: MITRE CWE-911 (improper update of reference count) leading to CWE-416; e.g.
 * CVE-2016-0728 (Linux keyring refcount overflow, Perception Point write-up).
 * Primitive: use after free read of an ops pointer -> control flow hijack. */
#include <string.h>
#include "common.h"

struct file;
struct ops { void (*write)(struct file *, const char *); };
struct file { int refcount; const struct ops *ops; char path[16]; };

static void disk_write(struct file *f, const char *s) { printf("%s <- %s\n", f->path, s); }
static const struct ops disk_ops = {disk_write};
static void attacker(struct file *f, const char *s) {
    (void)f, (void)s;
    printf("ATTACK SUCCEEDED: stale file reached attacker()\n");
}

static void put(struct file *f) {
    if (--f->refcount == 0)
        free(f);
}

int main(void) {
    test_init();
    printf("refcount underflow: extra put frees a shared object\n");
    struct file *f = malloc(sizeof *f);
    f->refcount = 1;
    f->ops = &disk_ops;
    strcpy(f->path, "/var/log/app");
    struct file *holder = f; /* holds the only reference */
    print_ptr("victim", f);
    put(f); /* BUG: a borrower puts a reference it never took: count 0, freed */
    struct ops *fake_ops = malloc(sizeof *fake_ops); /* attacker data */
    fake_ops->write = attacker;
    struct file *msg = malloc(sizeof *msg); /* attacker's same-size message */
    memset(msg, 0, sizeof *msg);
    msg->refcount = 1;
    msg->ops = fake_ops;
    holder->ops->write(holder, "entry"); /* BUG: use after free */
    printf("attack failed\n");
    return 0;
}
