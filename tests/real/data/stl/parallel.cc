// Threads: each worker builds its own maps and strings from its own generator, results
// are merged in order; shared state behind a mutex; futures; objects freed by another thread
// than the one that allocated them.
#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common.h"

namespace work {

namespace {

struct Chunk {
    int index;
    std::map<std::string, int> counts;
    std::vector<std::unique_ptr<std::string>> lines;
};

std::unique_ptr<Chunk> build_chunk(int index, int size) {
    auto c = std::make_unique<Chunk>();
    c->index = index;
    Rng rng(1000 + index);
    for (int i = 0; i < size; i++) {
        std::string w = make_word(rng);
        c->counts[w]++;
        if (i % 7 == 0) c->lines.push_back(std::make_unique<std::string>(w + ":" + std::to_string(i)));
    }
    return c;
}

}  // namespace

std::string run_parallel(int scale, int threads) {
    const int chunks = 16 * scale, size = 3000;
    std::vector<std::future<std::unique_ptr<Chunk>>> futures;
    std::vector<std::unique_ptr<Chunk>> done(chunks);
    std::mutex lock;
    std::unordered_map<std::string, int> shared;
    // Run `threads` workers over the chunk indices.
    std::vector<std::thread> pool;
    int next = 0;
    for (int t = 0; t < threads; t++)
        pool.emplace_back([&] {
            for (;;) {
                int mine;
                {
                    std::lock_guard<std::mutex> g(lock);
                    if (next >= chunks) return;
                    mine = next++;
                }
                auto c = build_chunk(mine, size);
                std::lock_guard<std::mutex> g(lock);
                for (auto &[w, n] : c->counts) shared[w] += n;
                done[mine] = std::move(c);
            }
        });
    for (auto &t : pool) t.join();

    // Futures: each frees (in another thread) the chunk the pool built.
    for (int i = 0; i < chunks; i++)
        futures.push_back(std::async(std::launch::async, [c = std::move(done[i])]() mutable {
            auto keep = std::make_unique<Chunk>();
            keep->index = c->index;
            for (auto &l : c->lines)
                if (l->size() % 3 == 0) keep->lines.push_back(std::move(l));
            keep->counts = c->counts;
            c.reset();
            return keep;
        }));
    Digest d;
    size_t kept = 0;
    std::map<std::string, int> merged;
    for (auto &f : futures) {
        auto c = f.get();
        kept += c->lines.size();
        for (auto &l : c->lines) d.add(*l);
        for (auto &[w, n] : c->counts) merged[w] += n;
    }
    bool same = merged.size() == shared.size() &&
                std::all_of(merged.begin(), merged.end(),
                            [&](auto &kv) { return shared.at(kv.first) == kv.second; });
    std::ostringstream out;
    out << "parallel chunks " << chunks << " distinct " << merged.size() << " kept lines " << kept
        << " digest " << d.hex() << " merged==shared " << (same ? "yes" : "no") << "\n";
    return out.str();
}

}  // namespace work
