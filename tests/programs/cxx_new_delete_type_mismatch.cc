// C++: delete through a base class without a virtual destructor: the sized operator delete
// gets the base's size, not the allocated object's. The argument picks the object:
//   small  a 40-byte Derived deleted as a 4-byte Base
//   large  a 4004-byte Derived deleted as a 4-byte Base
// Expected: SIGABRT, "new-delete-type-mismatch on <ptr>" (AddressSanitizer's name), then the
// two sizes. Prints "ptr", "allocated" and "deallocated" first.
#include <cstdio>
#include <cstring>
#include "common.h"

struct Base {
    int id;
};
struct Derived : Base {
    char name[36];
};
struct BigDerived : Base {
    char page[4000];
};

int main(int argc, char **argv) {
    test_init();
    Base *volatile b;
    if (argc > 1 && !strcmp(argv[1], "large")) {
        b = new BigDerived();
        std::printf("allocated %zu\n", sizeof(BigDerived));
    } else {
        b = new Derived();
        std::printf("allocated %zu\n", sizeof(Derived));
    }
    print_ptr("ptr", (Base *)b);
    std::printf("deallocated %zu\n", sizeof(Base));
    delete b; // sized delete: operator delete(void *, sizeof(Base))
    std::printf("NOT REACHED\n");
    return 0;
}
