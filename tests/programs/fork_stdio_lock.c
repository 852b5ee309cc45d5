/* glibc's fork resets, in the child, the lock of every FILE on its list; for a FILE the
 * program opened, the lock lies in a heap object. Two threads write to one such FILE, each
 * holding its lock (flockfile) for a while, while the main thread forks 200 times: the FILE
 * must stay usable in the parent (the child's reset must not reach the parent's lock: a lock
 * zeroed under its holder is left taken forever, and the writers hang). alarm() ends a hang. */
#include "common.h"
#include "fork_common.h"

int main(void) {
    test_init();
    alarm(60);
    if (stdio_writers_start() != 0)
        return 2;
    int bad = 0;
    for (int f = 0; f < 200; f++)
        bad += fork_empty_child();
    stdio_writers_stop();
    check(bad == 0, "every child exited 0");
    printf("200 forks while two threads write to one FILE: done\n");
    return test_finish();
}
