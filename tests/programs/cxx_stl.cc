// STL-heavy workload: map, unordered_map, vector growth, string, shared_ptr, list, sort.
// Prints checksums only (no addresses); output must match glibc's.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>
#include "common.h"

struct Node {
    std::string name;
    std::vector<int> values;
    std::shared_ptr<Node> next;
};

int main() {
    test_init();
    uint64_t rng = 42;

    std::map<int, std::string> m;
    for (int i = 0; i < 50000; i++)
        m[(int)(rng_next(&rng) % 100000)] = "value-" + std::to_string(i);
    uint64_t h = 0;
    for (auto &kv : m)
        h = h * 31 + (uint64_t)kv.first + kv.second.size();
    std::printf("map size %zu hash %llu\n", m.size(), (unsigned long long)h);

    std::unordered_map<std::string, int> um;
    for (int i = 0; i < 50000; i++)
        um["key" + std::to_string(i % 20000)] += i;
    long long usum = 0;
    for (auto &kv : um)
        usum += kv.second * (long long)kv.first.size();
    for (int i = 0; i < 20000; i += 3)
        um.erase("key" + std::to_string(i));
    std::printf("unordered_map size %zu sum %lld\n", um.size(), usum);

    std::vector<std::string> v;
    for (int i = 0; i < 100000; i++)
        v.push_back(std::string(i % 37, (char)('a' + i % 26)));
    std::sort(v.begin(), v.end());
    size_t total = 0;
    for (auto &s : v)
        total += s.size();
    v.erase(std::unique(v.begin(), v.end()), v.end());
    v.shrink_to_fit();
    std::printf("vector unique %zu total %zu\n", v.size(), total);

    std::shared_ptr<Node> head;
    for (int i = 0; i < 2000; i++) {
        auto n = std::make_shared<Node>();
        n->name = "node" + std::to_string(i);
        n->values.assign(i % 50, i);
        n->next = head;
        head = n;
    }
    long long nsum = 0;
    std::weak_ptr<Node> weak = head;
    for (auto p = head; p; p = p->next)
        for (int x : p->values)
            nsum += x;
    // Unlink iteratively (a 2000-deep recursive destructor chain is fine too, but keep the stack small).
    while (head)
        head = std::move(head->next);
    std::printf("shared_ptr chain sum %lld expired %d\n", nsum, (int)weak.expired());

    std::list<std::unique_ptr<int[]>> l;
    for (int i = 0; i < 10000; i++) {
        l.emplace_back(new int[(i % 64) + 1]);
        l.back()[0] = i;
    }
    long long lsum = 0;
    for (auto &p : l)
        lsum += p[0];
    l.remove_if([](const std::unique_ptr<int[]> &p) { return p[0] % 2 == 0; });
    std::printf("list %zu sum %lld\n", l.size(), lsum);

    std::set<std::string> words;
    std::string text;
    for (int i = 0; i < 20000; i++) {
        text += "w" + std::to_string(rng_next(&rng) % 5000) + " ";
    }
    size_t pos = 0;
    while (pos < text.size()) {
        size_t sp = text.find(' ', pos);
        words.insert(text.substr(pos, sp - pos));
        pos = sp + 1;
    }
    std::printf("set of words %zu text %zu\n", words.size(), text.size());
    return test_finish();
}
