// Word index: unordered_map, map of vectors, sort with custom comparators, string building.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "common.h"

namespace work {

std::string run_text_index(int scale) {
    Rng rng(42);
    std::vector<std::string> words;
    const int n = 20000 * scale;
    words.reserve(16);  // grow through many reallocations on purpose
    for (int i = 0; i < n; i++) words.push_back(make_word(rng));

    std::unordered_map<std::string, int> freq;
    std::map<std::string, std::vector<int>> positions;
    for (int i = 0; i < n; i++) {
        ++freq[words[i]];
        positions[words[i]].push_back(i);
    }
    std::vector<std::pair<std::string, int>> ranked(freq.begin(), freq.end());
    std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });

    std::ostringstream out;
    out << "text words " << n << " distinct " << freq.size() << "\n";
    for (size_t i = 0; i < 12 && i < ranked.size(); i++)
        out << "text top " << ranked[i].first << " " << ranked[i].second << " first "
            << positions[ranked[i].first].front() << " last "
            << positions[ranked[i].first].back() << "\n";

    // Bigrams through a set of strings built by concatenation (many short-lived temporaries).
    std::set<std::string> bigrams;
    for (int i = 0; i + 1 < n; i++) bigrams.insert(words[i] + "_" + words[i + 1]);
    out << "text bigrams " << bigrams.size() << " first " << *bigrams.begin() << " last "
        << *bigrams.rbegin() << "\n";

    // Anagram classes: sorted letters -> words.
    std::map<std::string, std::set<std::string>> anagrams;
    for (const auto &kv : freq) {
        std::string key = kv.first;
        std::sort(key.begin(), key.end());
        anagrams[key].insert(kv.first);
    }
    size_t biggest = 0;
    std::string biggest_key;
    for (const auto &kv : anagrams)
        if (kv.second.size() > biggest) { biggest = kv.second.size(); biggest_key = kv.first; }
    out << "text anagram classes " << anagrams.size() << " biggest " << biggest_key << " "
        << biggest << "\n";

    // Erase half the map entries, then rebuild a joined string from what is left.
    for (auto it = freq.begin(); it != freq.end();)
        it = (it->second % 2) ? freq.erase(it) : std::next(it);
    std::vector<std::string> left;
    for (const auto &kv : freq) left.push_back(kv.first + "=" + std::to_string(kv.second));
    std::sort(left.begin(), left.end());
    std::string joined;
    for (const auto &s : left) { joined += s; joined += ';'; }
    Digest d;
    d.add(joined);
    out << "text even-count words " << left.size() << " digest " << d.hex() << "\n";
    return out.str();
}

}  // namespace work
