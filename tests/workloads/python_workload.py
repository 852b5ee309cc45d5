# Pure-Python workload for the "real programs" test: run with PYTHONMALLOC=malloc so every
# object goes through the preloaded allocator. Output must not depend on addresses or hashes
# of str (the test also pins PYTHONHASHSEED).
import collections
import json
import re


def primes(n):
    sieve = bytearray([1]) * (n + 1)
    sieve[0:2] = b"\x00\x00"
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return [i for i, v in enumerate(sieve) if v]


def main():
    ps = primes(200000)
    print("primes", len(ps), sum(ps) % 1000003, ps[-5:])

    words = ["w%d_%s" % (i % 997, "x" * (i % 13)) for i in range(60000)]
    counts = collections.Counter(words)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    print("counter", len(counts), top)

    d = {}
    for i in range(100000):
        d.setdefault(i % 5003, []).append(i * 7 % 1013)
    print("dict", len(d), sum(len(v) for v in d.values()), sum(map(sum, d.values())))
    for k in list(d)[::2]:
        del d[k]
    print("dict after deletes", len(d), min(d), max(d))

    rows = [
        {"id": i, "name": "item-%05d" % i, "price": round(i * 1.25, 2), "tags": ["t%d" % (i % 7), "u%d" % (i % 3)]}
        for i in range(20000)
    ]
    text = json.dumps(rows, sort_keys=True)
    back = json.loads(text)
    print("json", len(text), back == rows, back[12345]["name"], back[-1]["tags"])

    data = [(i * 7919) % 100003 for i in range(150000)]
    data.sort()
    s2 = sorted(("%08d" % x for x in data[:50000]), reverse=True)
    print("sort", data[:3], data[-3:], s2[:2])

    lines = "\n".join("{:>6} | {:<10} | {:8.3f} | {!r}".format(i, "n%d" % i, i / 7, (i, str(i))) for i in range(20000))
    print("format", len(lines), lines.splitlines()[777])

    pat = re.compile(r"(\d+)-(\w+)")
    found = pat.findall(" ".join("%d-%s" % (i, chr(97 + i % 26) * (i % 5 + 1)) for i in range(30000)))
    print("regex", len(found), found[29999])

    class Node:
        __slots__ = ("v", "kids")

        def __init__(self, v):
            self.v = v
            self.kids = []

    root = Node(0)
    frontier = [root]
    n = 1
    while n < 50000:
        nxt = []
        for node in frontier:
            for _ in range(3):
                k = Node(n)
                node.kids.append(k)
                nxt.append(k)
                n += 1
        frontier = nxt

    def total(node):
        s = node.v
        stack = list(node.kids)
        while stack:
            x = stack.pop()
            s += x.v
            stack.extend(x.kids)
        return s

    print("tree", n, total(root))
    big = bytearray(10 * 1024 * 1024)
    big[::4096] = b"\x01" * len(big[::4096])
    print("bytearray", sum(big), len(bytes(big[:100000]).replace(b"\x00", b"")))


if __name__ == "__main__":
    main()
