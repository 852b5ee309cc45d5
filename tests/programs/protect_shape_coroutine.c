/* Protect mode: the only pointer to a freed object lies in a suspended coroutine's stack
 * (makecontext/swapcontext), and the thread runs another coroutine whose stack lies just
 * above it in the same anonymous mapping (stacks carved from one mmap with no guard between
 * them, or two mmaps the kernel merged into one line): a mark that reads a mapping holding
 * a thread's stack pointer only from that pointer up misses the suspended one below it.
 * With "onstack" the running coroutine's stack is an array in main's frame, and the pointer
 * lies in a frame of the suspended main context, below that array in the process's [stack].
 * The holder keeps the address in its stack alone (made in memory by an xor; its saved
 * registers hold none). See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <sys/mman.h>
#include <ucontext.h>

#define STACK (64 << 10)

static ucontext_t main_ctx, holder_ctx, runner_ctx;
static uintptr_t masked;
static int held;

/* Below: keeps the pointer in a local of its frame across its suspension, then drops it. */
static void holder(void) {
    volatile uintptr_t local = control ? 0 : masked;
    if (!control) /* (the unmasking happens in memory: no register holds the pointer) */
        __asm__ volatile("xorq %1, (%0)" : : "r"(&local), "r"(MASK) : "memory");
    swapcontext(&holder_ctx, &main_ctx);
    local = 0;
    swapcontext(&holder_ctx, &main_ctx);
}

/* Above: churns while the holder is suspended below. */
static void runner(void) {
    held = churn(masked, ROUNDS);
    swapcontext(&runner_ctx, &main_ctx);
}

static void make(ucontext_t *ctx, char *stack, void (*fn)(void)) {
    getcontext(ctx);
    ctx->uc_stack.ss_sp = stack;
    ctx->uc_stack.ss_size = STACK;
    ctx->uc_link = &main_ctx;
    makecontext(ctx, fn, 0);
}

/* "onstack": called by main, below its array; holds the pointer while the runner churns. */
__attribute__((noinline)) static void hold_below(void) {
    volatile uintptr_t local = control ? 0 : masked;
    if (!control)
        __asm__ volatile("xorq %1, (%0)" : : "r"(&local), "r"(MASK) : "memory");
    free_object(masked);
    clear_stack();
    swapcontext(&main_ctx, &runner_ctx); /* churn on the array above this frame */
    local = 0;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    if (argc > 1 && strcmp(argv[1], "onstack") == 0) {
        static char *volatile keep;
        char array[STACK] __attribute__((aligned(16)));
        keep = array;
        make(&runner_ctx, array, runner);
        masked = make_object();
        hold_below();
        clear_stack();
        report(held, released_after(masked, churn(masked, ROUNDS)));
        return 0;
    }
    char *stacks = mmap(NULL, 2 * STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    if (stacks == MAP_FAILED)
        return 2;
    make(&holder_ctx, stacks, holder);        /* the lower half */
    make(&runner_ctx, stacks + STACK, runner); /* the upper half */
    masked = make_object();
    swapcontext(&main_ctx, &holder_ctx); /* the holder takes the pointer and suspends */
    free_object(masked);
    clear_stack();
    swapcontext(&main_ctx, &runner_ctx); /* churn on the upper stack */
    swapcontext(&main_ctx, &holder_ctx); /* the holder drops it */
    clear_stack();
    report(held, released_after(masked, churn(masked, ROUNDS)));
    return 0;
}
