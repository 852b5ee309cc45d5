// C++: an object freed by the wrong family of deallocation. The argument picks the pair:
//   malloc_delete     malloc, then delete         (malloc vs operator delete)
//   new_free          new, then free              (operator new vs free)
//   newarr_delete     new[], then delete          (operator new [] vs operator delete)
//   new_deletearr     new, then delete[]          (operator new vs operator delete [])
//   large_new_free    the same as new_free for a large object (over 2 KiB)
//   new_realloc       new, then realloc           (operator new vs free, passed to realloc)
// Expected: SIGABRT, "alloc-dealloc-mismatch (A vs D) on address <ptr>" (AddressSanitizer's
// name). Prints "ptr" and "size" first; "NOT REACHED" after the bad call.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "common.h"

struct Widget {
    int id;
    char name[28];
};

int main(int argc, char **argv) {
    test_init();
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "malloc_delete")) {
        Widget *volatile w = (Widget *)malloc(sizeof(Widget));
        print_ptr("ptr", (Widget *)w);
        std::printf("size %zu\n", sizeof(Widget));
        delete w;
    } else if (!strcmp(what, "new_free")) {
        Widget *volatile w = new Widget{7, "widget"};
        print_ptr("ptr", (Widget *)w);
        std::printf("size %zu\n", sizeof(Widget));
        free(w);
    } else if (!strcmp(what, "newarr_delete")) {
        char *volatile s = new char[40];
        print_ptr("ptr", (char *)s);
        std::printf("size %d\n", 40);
        delete s;
    } else if (!strcmp(what, "new_deletearr")) {
        Widget *volatile w = new Widget{7, "widget"};
        print_ptr("ptr", (Widget *)w);
        std::printf("size %zu\n", sizeof(Widget));
        delete[] w;
    } else if (!strcmp(what, "large_new_free")) {
        char *volatile s = new char[100000];
        print_ptr("ptr", (char *)s);
        std::printf("size %d\n", 100000);
        free(s);
    } else if (!strcmp(what, "new_realloc")) {
        Widget *volatile w = new Widget{7, "widget"};
        print_ptr("ptr", (Widget *)w);
        std::printf("size %zu\n", sizeof(Widget));
        w = (Widget *)realloc(w, 2 * sizeof(Widget));
    } else {
        std::printf("unknown case\n");
        return 2;
    }
    std::printf("NOT REACHED\n");
    return 0;
}
