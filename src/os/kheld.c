/* kheld: see kheld.h. */
#define _GNU_SOURCE
#include "os/kheld.h"
#include "os/os.h"

#include <sys/prctl.h>
#include <sys/syscall.h>

__thread struct os_kheld os_kheld_tls __attribute__((tls_model("initial-exec")));

void os_kheld_note_rseq(uintptr_t area) { os_kheld_tls.rseq = area; }
void os_kheld_note_sud(uintptr_t selector) { os_kheld_tls.sud = selector; }

void os_kheld_get(uintptr_t out[OS_KHELD]) {
    uintptr_t tid = 0, head = 0;
    size_t len = 0;
    /* (PR_GET_TID_ADDRESS needs CONFIG_CHECKPOINT_RESTORE: EINVAL without it, 0 then) */
    if (os_syscall(SYS_prctl, PR_GET_TID_ADDRESS, (long)&tid, 0, 0, 0) != 0)
        tid = 0;
    if (os_syscall(SYS_get_robust_list, 0, (long)&head, (long)&len, 0, 0) != 0)
        head = 0;
    out[0] = tid;
    out[1] = head;
    out[2] = os_kheld_tls.rseq;
    out[3] = os_kheld_tls.sud;
}
