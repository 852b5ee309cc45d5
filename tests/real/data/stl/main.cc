// A GUI-free C++ program with heavy STL use, in several translation units. Output depends
// only on the arguments: stdout must be byte-identical under every correct allocator.
//   stl_workload [SCALE [THREADS]]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "common.h"

namespace work {

std::string Digest::hex() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
    return buf;
}

std::string make_word(Rng &rng) {
    static const char *syll[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "an", "el",
                                 "or", "ul", "qu", "zh", "ba", "de"};
    // Zipf-like length and syllable choice so that some words repeat a lot.
    int n = 1 + (int)(rng.below(100) < 70 ? rng.below(2) : rng.below(5));
    std::string w;
    for (int i = 0; i < n; i++) {
        uint64_t r = rng.below(256);
        w += syll[r < 128 ? r % 4 : r % 16];
    }
    return w;
}

}  // namespace work

int main(int argc, char **argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    int threads = argc > 2 ? std::atoi(argv[2]) : 4;
    if (scale < 1) scale = 1;
    if (threads < 1) threads = 1;
    std::ostringstream all;
    all << work::run_text_index(scale);
    all << work::run_graph(scale);
    all << work::run_interpreter(scale);
    all << work::run_parallel(scale, threads);
    work::Digest d;
    d.add(all.str());
    std::cout << all.str() << "total digest " << d.hex() << "\n";
    return 0;
}
