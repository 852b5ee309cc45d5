// C++ names in a report (issue 20: reports read like AddressSanitizer's): a use after free
// whose stacks pass through a static function taking void* (`thr(void*)`, mangled _ZL3thrPv),
// a method (`Widget::poke(int)`), a const method (`Widget::peek(int) const`) and one inlined
// into it (`Widget::at(int) const`, named by its DWARF linkage name), a function in a
// namespace (`demo::drop(Widget*)`) and a template instance with its return type
// (`Widget* demo::make<Widget>(int, unsigned long)`).
// The report's frames must show them demangled, as c++filt prints them.
//   (no argument)  read after delete, in Widget::peek(int) const called from thr(void*)
//   write          write after delete, in Widget::poke(int)
//   big            the Widget at the start of a 64 KiB block (fast mode revokes those at once)
#include <pthread.h>
#include <new>
#include <cstdio>
#include <cstring>
#include <vector>
#include "common.h"

struct Widget {
    long values[384]; // (3 KiB: a page of its own in fast mode, sampled in protect mode)
    __attribute__((always_inline)) inline long at(int i) const { return values[i]; }
    __attribute__((noinline)) long peek(int i) const { return at(i); }
    __attribute__((noinline)) void poke(int i) { values[i] = 42; }
};

namespace demo {
template <typename T> __attribute__((noinline)) T *make(int fill, size_t extra) {
    T *t = new (::operator new(sizeof(T) + extra)) T;
    std::memset(t, fill, sizeof *t);
    return t;
}
__attribute__((noinline)) void drop(Widget *w) {
    w->~Widget();
    ::operator delete(w);
}
}  // namespace demo

static std::vector<Widget *> keep;
static bool write_mode;

__attribute__((noinline)) static void *thr(void *arg) {
    Widget *w = static_cast<Widget *>(arg);
    print_ptr("access", &w->values[2]);
    if (write_mode) {
        w->poke(2);
    } else {
        long v = w->peek(2);
        std::printf("value %ld\n", v);
    }
    std::printf("NOT REACHED\n");
    return nullptr;
}

int main(int argc, char **argv) {
    test_init();
    size_t extra = 0;
    for (int i = 1; i < argc; i++) {
        write_mode |= std::strcmp(argv[i], "write") == 0;
        if (std::strcmp(argv[i], "big") == 0)
            extra = 64 << 10;
    }
    Widget *w = demo::make<Widget>(1, extra);
    keep.push_back(w);
    print_ptr("ptr", w);
    std::printf("size %zu\n", sizeof(Widget) + extra);
    demo::drop(w);
    pthread_t t;
    pthread_create(&t, nullptr, thr, keep[0]);
    pthread_join(t, nullptr);
    return 0;
}
