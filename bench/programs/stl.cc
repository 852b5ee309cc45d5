// stl: C++ standard containers doing ordinary work: a std::map of std::string, an
// std::unordered_map, a growing std::vector of small vectors and an std::list used as a
// queue. Every node and string buffer goes through operator new, hence malloc.
// usage: stl ROUNDS
#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include "bench.h"

static uint64_t allocs;  // counted by the program's own logic, not by hooking new

int main(int argc, char **argv) {
    long rounds = bench_arg(argc, argv, 1, 20);
    uint64_t seed = 1234, sum = 0;
    for (long r = 0; r < rounds; r++) {
        std::map<std::string, int> words;
        std::unordered_map<uint64_t, std::vector<int>> index;
        std::list<std::string> queue;
        for (int i = 0; i < 2000; i++) {
            uint64_t x = bench_rand(&seed);
            // longer than the small-string buffer (15 chars), so each string allocates
            std::string w = "word-" + std::to_string(x % 5000) + "-with-a-long-suffix";
            words[w] += i;
            index[x % 701].push_back(i);
            queue.push_back(w);
            if (queue.size() > 64) {
                sum += queue.front().size();
                queue.pop_front();
            }
            allocs += 4;
        }
        for (auto &kv : words) sum += (uint64_t)kv.second;
        for (auto &kv : index) sum += kv.second.size();
        std::vector<std::vector<int>> grid;
        for (int i = 0; i < 500; i++) {
            grid.emplace_back(i % 50 + 1, i);
            allocs += 1;
        }
        for (auto &v : grid) sum += (uint64_t)v.back();
    }
    bench_report(sum, allocs);
    return 0;
}
