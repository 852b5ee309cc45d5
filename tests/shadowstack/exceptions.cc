// C++ exceptions through instrumented frames: destructors run, rethrow, nested try,
// std::function callbacks, exceptions thrown from a thread.
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct Noisy {
    std::string name;
    explicit Noisy(std::string n) : name(std::move(n)) {}
    ~Noisy() { std::printf("~%s\n", name.c_str()); }
};

__attribute__((noinline)) int deep(int n) {
    Noisy guard("deep" + std::to_string(n));
    if (n == 0)
        throw std::runtime_error("bottom");
    return deep(n - 1) + 1;
}

__attribute__((noinline)) int rethrower(int n) {
    try {
        return deep(n);
    } catch (std::runtime_error &e) {
        std::printf("rethrowing %s\n", e.what());
        throw;
    }
}

int main() {
    for (int i = 0; i < 3; i++) {
        try {
            rethrower(i);
        } catch (std::exception &e) {
            std::printf("caught %s at %d\n", e.what(), i);
        }
    }
    std::vector<std::function<int(int)>> fs = {[](int x) { return x + 1; },
                                               [](int x) -> int {
                                                   if (x > 2) throw x;
                                                   return x * 2;
                                               }};
    for (int x = 0; x < 5; x++) {
        try {
            std::printf("f(%d) = %d %d\n", x, fs[0](x), fs[1](x));
        } catch (int v) {
            std::printf("threw %d\n", v);
        }
    }
    int result = 0;
    std::thread t([&] {
        try {
            deep(3);
        } catch (std::exception &e) {
            result = 42;
        }
    });
    t.join();
    std::printf("thread result %d\n", result);
    return 0;
}
