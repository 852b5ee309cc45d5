// C++: delete the same object twice. Expected: SIGABRT, "double-free on address <ptr>".
#include <cstdio>
#include "common.h"

struct Widget {
    int id;
    char name[20];
};

int main() {
    test_init();
    Widget *volatile w = new Widget{7, "widget"};
    print_ptr("ptr", (Widget *)w);
    delete w;
    delete w;
    std::printf("NOT REACHED\n");
    return 0;
}
