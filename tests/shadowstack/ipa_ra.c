/* Many values live across calls to small functions of the same unit: with -fipa-ra (GCC's
 * default from -O1), the caller keeps them in caller-saved registers the callee was seen not to
 * touch, %r10 and %r11 included, which the instrumentation writes (`oscar cc` passes
 * -fno-ipa-ra). Prints the same sums as the plain build. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) static long leaf2(long x) { return x ^ 0x55; }

int main(int argc, char **argv) {
    (void)argv;
    volatile long seed = argc + 6;
    long a = seed, b = seed * 2, c = seed * 3, d = seed * 5, e = seed * 7, f = seed * 11;
    long g = seed * 13, h = seed * 17, i = seed * 19, j = seed * 23, k = seed * 29;
    for (int n = 0; n < 1000; n++) {
        a += leaf(b);
        b ^= leaf2(c) + d;
        c += e * f;
        d -= g + leaf(h);
        e += i ^ j;
        f += k;
        g ^= a;
        h += b;
        i -= c;
        j += d;
        k ^= e;
    }
    printf("%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", a, b, c, d, e, f, g, h, i, j, k);
    return 0;
}
