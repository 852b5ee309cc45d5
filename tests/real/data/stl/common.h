// Shared helpers for the STL workload (tests/test_real_suites.py: compiled by g++ under
// glibc and under Oscar, then run under both).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace work {

// Deterministic generator (splitmix64): the same sequence under every allocator.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return next() % n; }
};

// FNV-1a, folded over anything printable.
struct Digest {
    uint64_t h = 1469598103934665603ULL;
    void add(const std::string &s) {
        for (unsigned char c : s) { h ^= c; h *= 1099511628211ULL; }
        h ^= 0xff; h *= 1099511628211ULL;
    }
    void add(uint64_t v) { add(std::to_string(v)); }
    std::string hex() const;
};

std::string make_word(Rng &rng);

// Each part prints its own lines to the string it returns.
std::string run_text_index(int scale);
std::string run_graph(int scale);
std::string run_interpreter(int scale);
std::string run_parallel(int scale, int threads);

}  // namespace work
