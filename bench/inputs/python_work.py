"""Pure-Python workload for the allocator benchmark: run with PYTHONMALLOC=malloc so every
object reaches malloc. Builds and discards dicts, lists, tuples and strings in rounds, keeping
a bounded live set (a big live set is a different benchmark).  usage: python_work.py ROUNDS"""
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
checksum = 0
for r in range(rounds):
    table = {}
    for i in range(3000):
        key = "key-%d-%d" % (r, i)
        table[key] = [i, str(i * 7), (i, r)]
    words = " ".join(k for k in table if k.endswith("7")).split()
    checksum += len(words) + sum(len(v[1]) for v in table.values())
    records = sorted(((i * 7919) % 1009, "x" * (i % 40)) for i in range(3000))
    checksum += records[len(records) // 2][0]
    text = "".join(chr(97 + (i * r) % 26) for i in range(5000))
    checksum += text.count("ab") + len(text.upper().replace("A", "aa"))
print("checksum", checksum)
