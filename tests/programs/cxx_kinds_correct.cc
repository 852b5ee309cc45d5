// C++: every allocation freed by its own kind of deallocation (malloc/free, new/delete,
// new[]/delete[], sized and aligned forms, a virtual destructor's sized delete, the standard
// containers): a correct program, which prints the same under Oscar as under glibc.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>
#include "common.h"

struct Base {
    int id;
    virtual ~Base() {}
    virtual int size() const { return (int)sizeof(Base); }
};
struct Derived : Base {
    char name[100];
    int size() const override { return (int)sizeof(Derived); }
};
struct alignas(64) Aligned {
    char bytes[80];
};
struct WithDtor {
    int v;
    ~WithDtor() { v = 0; }
};

int main() {
    test_init();
    long sum = 0;
    for (int round = 0; round < 200; round++) {
        int n = 1 + round * 37 % 5000;
        char *m = (char *)malloc(n);
        m[0] = 1;
        sum += m[0];
        free(m);
        int *one = new int(round);
        sum += *one;
        delete one;
        int *arr = new int[n];
        arr[n - 1] = round;
        sum += arr[n - 1];
        delete[] arr;
        WithDtor *wd = new WithDtor[3];
        wd[2].v = round;
        sum += wd[2].v;
        delete[] wd; // sized delete[] with the array cookie
        Base *b = new Derived();
        sum += b->size();
        delete b; // virtual destructor: sized delete of the Derived
        Aligned *a = new Aligned();
        a->bytes[0] = 2;
        sum += a->bytes[0];
        delete a; // aligned sized delete
        void *raw = ::operator new(n);
        ::operator delete(raw, (size_t)n);
        void *nt = ::operator new[](n, std::nothrow);
        ::operator delete[](nt);
    }
    std::vector<std::string> words;
    for (int i = 0; i < 1000; i++)
        words.push_back(std::string(i % 50, 'x') + std::to_string(i));
    std::map<std::string, int> counts;
    for (const std::string &w : words)
        counts[w.substr(0, 3)]++;
    auto shared = std::make_shared<Derived>();
    std::unique_ptr<Base> owned(new Derived());
    std::printf("sum %ld words %zu keys %zu sizes %d %d\n", sum, words.size(), counts.size(),
                shared->size(), owned->size());
    return 0;
}
