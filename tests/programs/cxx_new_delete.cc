// operator new/delete family: arrays, nothrow, bad_alloc, over-aligned types.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include "common.h"

struct alignas(256) Aligned {
    unsigned char bytes[300];
};

struct Counted {
    static int live;
    int v;
    Counted() : v(live) { live++; }
    ~Counted() { live--; }
};
int Counted::live = 0;

int main() {
    test_init();

    int *a = new int[1000];
    for (int i = 0; i < 1000; i++)
        a[i] = i;
    long s = 0;
    for (int i = 0; i < 1000; i++)
        s += a[i];
    delete[] a;
    std::printf("new[] sum %ld\n", s);

    Counted *cs = new Counted[77];
    check(Counted::live == 77, "constructors ran");
    delete[] cs;
    check(Counted::live == 0, "destructors ran");
    std::printf("new[]/delete[] of class type ok\n");

    size_t huge = SIZE_MAX / 4;
    char *nt = new (std::nothrow) char[huge];
    check(nt == nullptr, "nothrow new of a huge size returns nullptr");
    std::printf("nothrow new huge -> %s\n", nt ? "ptr" : "nullptr");
    int *nt2 = new (std::nothrow) int(5);
    check(nt2 && *nt2 == 5, "nothrow new of a small object");
    delete nt2;

    bool caught = false;
    try {
        char *t = new char[huge];
        t[0] = 1;
        delete[] t;
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    check(caught, "throwing new of a huge size throws std::bad_alloc");
    std::printf("new huge -> %s\n", caught ? "bad_alloc" : "no exception");

    for (int round = 0; round < 100; round++) {
        Aligned *x = new Aligned;
        check(((uintptr_t)x & 255) == 0, "alignas(256) object aligned");
        std::memset(x->bytes, round, sizeof x->bytes);
        Aligned *arr = new Aligned[3];
        check(((uintptr_t)arr & 255) == 0, "alignas(256) array aligned");
        std::memset(arr, round, sizeof(Aligned) * 3);
        delete x;
        delete[] arr;
    }
    Aligned *an = new (std::nothrow) Aligned;
    check(an && ((uintptr_t)an & 255) == 0, "nothrow aligned new");
    delete an;
    void *raw = ::operator new(1000, std::align_val_t(4096));
    check(((uintptr_t)raw & 4095) == 0, "operator new(size, align_val_t(4096))");
    ::operator delete(raw, std::align_val_t(4096));
    raw = ::operator new(1000);
    ::operator delete(raw, (size_t)1000);
    std::printf("aligned new ok\n");
    return test_finish();
}
