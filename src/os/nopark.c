/* nopark: see nopark.h. */
#define _GNU_SOURCE
#include "os/nopark.h"
#include "os/os.h"

__thread struct os_nopark os_nopark_tls __attribute__((tls_model("initial-exec")));
int os_nopark_signal;
uint64_t os_nopark_cookie;
uint64_t os_nopark_spin_ns;

/* The request noted inside the stretch: ask again, now that the thread may park. (If the stop
 * that asked gave up meanwhile, the handler drops the late request, as any late one.) */
void os_nopark_repark(void) {
    int sig = os_nopark_tls.due > 1 ? os_nopark_tls.due : os_nopark_signal;
    os_nopark_tls.due = 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (sig)
        os_send_request(os_getpid(), os_gettid(), sig, os_nopark_cookie);
}
