/* unwind_cost: what one allocation stack costs to record, by frame pointers (Oscar before
 * issue 20) and by .eh_frame (report/unwind.c, warm rule cache), docs/reports.md's figures:
 *     gcc -O2 -fno-omit-frame-pointer -I src tools/unwind_cost.c src/report/unwind.c \
 *         src/os/os.c -o /tmp/unwind_cost && /tmp/unwind_cost
 * Each line: a stack DEPTH frames deep (functions with or without frame pointers) walked
 * `max` frames, thread CPU time, best of 7 runs of 200000 walks. */
#define _GNU_SOURCE
#include "report/unwind.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>

extern void *__libc_stack_end;

__attribute__((noinline)) static int walk_fp(uintptr_t *out, int max) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0), sp = fp, top = (uintptr_t)__libc_stack_end;
    int n = 0;
    while (n < max && fp >= sp && fp + 16 <= top && !(fp & 7)) {
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t ret = frame[1], next = frame[0];
        if (ret < 4096)
            break;
        out[n++] = ret;
        if (next <= fp || next - fp > (8UL << 20))
            break;
        fp = next;
    }
    return n;
}

__attribute__((noinline)) static int walk_eh(uintptr_t *out, int max) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0), top = (uintptr_t)__libc_stack_end;
    const uintptr_t *frame = (const uintptr_t *)fp;
    struct unwind_regs r = {frame[1], fp + 16, frame[0], false};
    return unwind_walk(&r, fp, top, true, 0, 0, out, 0, max);
}

static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int max_frames;
static const char *kind;

__attribute__((noinline)) static void measure(int depth) {
    enum { N = 200000 };
    uintptr_t out[64];
    int nf = walk_fp(out, max_frames), ne = walk_eh(out, max_frames);
    double best_fp = 1e9, best_eh = 1e9;
    for (int rep = 0; rep < 7; rep++) {
        double t0 = cpu();
        for (int i = 0; i < N; i++) {
            walk_fp(out, max_frames);
            __asm__ volatile("" ::: "memory");
        }
        double t1 = cpu();
        for (int i = 0; i < N; i++) {
            walk_eh(out, max_frames);
            __asm__ volatile("" ::: "memory");
        }
        double t2 = cpu();
        if (t1 - t0 < best_fp)
            best_fp = t1 - t0;
        if (t2 - t1 < best_eh)
            best_eh = t2 - t1;
    }
    printf("%-22s depth %2d max %2d | frame pointers: %2d frames %6.1f ns | eh_frame: %2d frames %6.1f ns\n",
           kind, depth, max_frames, nf, best_fp / N * 1e9, ne, best_eh / N * 1e9);
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void rec_fp(int d, int depth) {
    if (d)
        rec_fp(d - 1, depth);
    else
        measure(depth);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, optimize("omit-frame-pointer"))) static void rec_nofp(int d, int depth) {
    if (d)
        rec_nofp(d - 1, depth);
    else
        measure(depth);
    __asm__ volatile("" ::: "memory");
}

int main(void) {
    static const int depths[] = {4, 16, 32};
    for (int i = 0; i < 3; i++) {
        max_frames = depths[i] < 16 ? 16 : depths[i];
        kind = "frame pointers";
        rec_fp(depths[i], depths[i]);
        kind = "no frame pointers";
        rec_nofp(depths[i], depths[i]);
    }
    return 0;
}
