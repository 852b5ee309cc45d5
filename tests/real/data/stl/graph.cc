// Graph algorithms over shared_ptr nodes: Dijkstra with priority_queue, BFS with deque,
// weak_ptr back-edges, a union-find over a vector, a minimum spanning tree.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <sstream>
#include <vector>

#include "common.h"

namespace work {

namespace {

struct Node;
struct Edge {
    std::shared_ptr<Node> to;
    uint64_t weight;
};
struct Node {
    int id;
    std::string label;
    std::vector<Edge> out;
    std::vector<std::weak_ptr<Node>> in;
};

int find(std::vector<int> &parent, int x) {
    while (parent[x] != x) { parent[x] = parent[parent[x]]; x = parent[x]; }
    return x;
}

}  // namespace

std::string run_graph(int scale) {
    Rng rng(7);
    const int n = 3000 * scale, m = 6 * n;
    std::vector<std::shared_ptr<Node>> nodes;
    for (int i = 0; i < n; i++) {
        auto node = std::make_shared<Node>();
        node->id = i;
        node->label = "node-" + std::to_string(i);
        nodes.push_back(node);
    }
    std::vector<std::tuple<uint64_t, int, int>> edges;
    for (int i = 1; i < n; i++) {  // a spanning chain keeps it connected
        int j = (int)rng.below(i);
        edges.emplace_back(1 + rng.below(1000), i, j);
    }
    for (int k = n - 1; k < m; k++)
        edges.emplace_back(1 + rng.below(1000), (int)rng.below(n), (int)rng.below(n));
    for (auto &[w, a, b] : edges) {
        nodes[a]->out.push_back({nodes[b], w});
        nodes[b]->out.push_back({nodes[a], w});
        nodes[b]->in.push_back(nodes[a]);
        nodes[a]->in.push_back(nodes[b]);
    }

    // Dijkstra from node 0.
    const uint64_t inf = std::numeric_limits<uint64_t>::max();
    std::vector<uint64_t> dist(n, inf);
    using Item = std::pair<uint64_t, std::shared_ptr<Node>>;
    auto cmp = [](const Item &a, const Item &b) {
        return a.first != b.first ? a.first > b.first : a.second->id > b.second->id;
    };
    std::priority_queue<Item, std::vector<Item>, decltype(cmp)> pq(cmp);
    dist[0] = 0;
    pq.push({0, nodes[0]});
    while (!pq.empty()) {
        auto [d, node] = pq.top();
        pq.pop();
        if (d != dist[node->id]) continue;
        for (const auto &e : node->out)
            if (d + e.weight < dist[e.to->id]) {
                dist[e.to->id] = d + e.weight;
                pq.push({dist[e.to->id], e.to});
            }
    }
    uint64_t far = *std::max_element(dist.begin(), dist.end());
    uint64_t sum = std::accumulate(dist.begin(), dist.end(), (uint64_t)0);

    // BFS levels.
    std::vector<int> level(n, -1);
    std::deque<std::shared_ptr<Node>> queue{nodes[0]};
    level[0] = 0;
    std::map<int, int> per_level;
    while (!queue.empty()) {
        auto node = queue.front();
        queue.pop_front();
        per_level[level[node->id]]++;
        for (const auto &weak : node->in)
            if (auto other = weak.lock(); other && level[other->id] < 0) {
                level[other->id] = level[node->id] + 1;
                queue.push_back(other);
            }
    }

    // Kruskal.
    std::sort(edges.begin(), edges.end());
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    uint64_t mst = 0;
    int used = 0;
    for (auto &[w, a, b] : edges) {
        int ra = find(parent, a), rb = find(parent, b);
        if (ra != rb) { parent[ra] = rb; mst += w; used++; }
    }

    std::ostringstream out;
    out << "graph nodes " << n << " edges " << edges.size() << "\n";
    out << "graph dijkstra farthest " << far << " sum " << sum << "\n";
    out << "graph bfs levels " << per_level.size();
    for (auto &[lvl, count] : per_level) out << " " << lvl << ":" << count;
    out << "\n";
    out << "graph mst weight " << mst << " edges " << used << "\n";

    // Break the cycles (strong out-edges) and check every node is released.
    std::weak_ptr<Node> probe = nodes[n / 2];
    for (auto &node : nodes) node->out.clear();
    nodes.clear();
    out << "graph released " << (probe.expired() ? "yes" : "no") << "\n";
    return out.str();
}

}  // namespace work
