// operator delete keeps errno, as glibc's does (its delete calls free, which keeps it since
// glibc 2.33): `if (write(...) < 0) { delete[] buf; report(errno); }` must see write's errno.
// Every form of delete, for small and large objects, many times over (in protect mode a mark
// runs inside some of them, and a mark makes system calls). And an allocation that succeeds
// leaves errno as it was, as glibc's do.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include "common.h"

struct alignas(64) Over {
    char c[100];
};

int main() {
    test_init();
    long bad = 0;
    for (int i = 0; i < 20000; i++) {
        size_t n = (i % 7 == 0) ? 70000 : 16 + (size_t)(i % 500);
        errno = 776;
        char *a = new char[n];
        void *m = std::malloc(n), *c = std::calloc(1, n);
        m = std::realloc(m, n + 100);
        bad += errno != 776;
        std::free(m);
        std::free(c);
        a[0] = 1;
        errno = 777;
        delete[] a;
        bad += errno != 777;
        int *s = new int(i);
        errno = 778;
        delete s;
        bad += errno != 778;
        Over *o = new Over;
        errno = 779;
        delete o; /* (sized and aligned: operator delete(void*, size_t, align_val_t)) */
        bad += errno != 779;
        char *t = new (std::nothrow) char[n];
        errno = 780;
        ::operator delete[](t, std::nothrow);
        bad += errno != 780;
    }
    check(bad == 0, "delete and successful allocations keep errno");
    std::printf("delete and allocations keep errno: %ld changed\n", bad);
    return 0;
}
