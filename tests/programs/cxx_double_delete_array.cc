// C++: delete[] the same array twice (trivial element type, so the pointer is the allocation).
#include <cstdio>
#include "common.h"

int main() {
    test_init();
    int *volatile a = new int[50];
    for (int i = 0; i < 50; i++)
        a[i] = i;
    print_ptr("ptr", (int *)a);
    delete[] a;
    delete[] a;
    std::printf("NOT REACHED\n");
    return 0;
}
