// C++: delete an object, then make a virtual call through the dangling pointer. Loading the
// vtable pointer must fault; the method body must never run.
#include <cstdint>
#include <cstdio>
#include "common.h"

struct Base {
    virtual ~Base() {}
    virtual void speak() = 0;
};

struct Derived : Base {
    long payload[5] = {1, 2, 3, 4, 5};
    void speak() override { std::printf("METHOD BODY RAN\n"); }
};

int main() {
    test_init();
    Base *volatile b = new Derived;
    b->speak();
    print_ptr("ptr", (Base *)b);
    std::printf("size %zu\noffset 0\n", sizeof(Derived));
    print_ptr("access", (Base *)b);
    delete b;
    b->speak();
    std::printf("NOT REACHED\n");
    return 0;
}
