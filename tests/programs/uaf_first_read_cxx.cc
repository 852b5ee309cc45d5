// uaf_first_read's C++ shapes (Juliet's CWE-416 new/delete cases): the object freed with
// delete or delete[] and read after, reached directly, through a std::vector or a std::map
// (the container's own nodes and buffers are allocations too), or a class's field.
// usage: uaf_first_read_cxx array|vector|map|class
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <vector>

namespace {
void printLine(const char *line) {
    if (line)
        std::printf("%s\n", line);
}

struct Holder {
    int value;
    explicit Holder(int v) : value(v) {}
};

char *filled() {
    char *data = new char[100];
    std::memset(data, 'A', 99);
    data[99] = '\0';
    return data;
}

void good() {
    std::vector<char *> kept;
    for (int i = 0; i < 3; i++)
        kept.push_back(filled());
    printLine(kept[2]);
    for (char *d : kept)
        delete[] d;
}
} // namespace

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "array";
    std::cout << "Calling good()..." << std::endl;
    good();
    printLine("Finished good()");
    printLine("Calling bad()...");
    if (!std::strcmp(what, "vector")) {
        std::vector<char *> v(3, filled());
        delete[] v[0];
        printLine(v[2]); // the use after free
    } else if (!std::strcmp(what, "map")) {
        std::map<int, char *> m;
        m[0] = m[1] = m[2] = filled();
        delete[] m[2];
        printLine(m[0]); // the use after free
    } else if (!std::strcmp(what, "class")) {
        Holder *h = new Holder(42);
        delete h;
        std::printf("%d\n", h->value); // the use after free
    } else {
        char *data = filled();
        delete[] data;
        printLine(data); // the use after free
    }
    printLine("Finished bad()");
    return 0;
}
