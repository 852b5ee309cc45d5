#!/usr/bin/env python3
"""The runtime-versus-memory curve for K objects per shadow page (fast mode), from a
bench/run.py results.csv that has the oscar-fast-k* allocators (and oscar-fast for K = all):

    python3 bench/run.py --ablation --allocators glibc,oscar,oscar-fast-k1,oscar-fast-k2,\\
        oscar-fast-k4,oscar-fast-k8,oscar-fast-k16,oscar-fast --out DIR
    python3 bench/kcurve.py DIR

Writes DIR/kcurve.md (one row per K: geometric-mean time and memory ratios to glibc over the
workloads every configuration completed, system calls per 1000 allocations) and
DIR/kcurve.png (time ratio against memory ratio, one point per K, strict mode for reference).
"""

import csv
import math
import os
import re
import sys


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def label(allocator):
    if allocator == "oscar-fast":
        return "all"
    m = re.fullmatch(r"oscar-fast-k(\d+)", allocator)
    return m.group(1) if m else None


def load(out_dir):
    with open(os.path.join(out_dir, "results.csv")) as f:
        rows = [r for r in csv.DictReader(f)]
    configs = {}
    for r in rows:
        if r["allocator"] == "oscar" or label(r["allocator"]):
            configs.setdefault(r["allocator"], {})[r["workload"]] = r
    if not configs:
        sys.exit("kcurve: no oscar-fast-k* rows in %s/results.csv" % out_dir)
    # Only workloads every configuration completed, so every point averages the same set.
    common = set.intersection(*({w for w, r in c.items() if r["status"] == "ok"}
                                for c in configs.values()))
    return configs, sorted(common)


def summarize(configs, workloads):
    points = []
    for name, cells in configs.items():
        rows = [cells[w] for w in workloads]
        sys_per_k = [float(r["syscalls_per_1k_allocs"]) for r in rows
                     if r["syscalls_per_1k_allocs"] not in ("", None)]
        points.append({
            "name": name,
            "k": label(name) or "strict",
            "time": geomean([float(r["time_ratio"]) for r in rows]),
            "mem": geomean([float(r["mem_ratio"]) for r in rows]),
            "syscalls": geomean(sys_per_k) if sys_per_k else float("nan"),
        })
    order = {"strict": -1, "all": 10 ** 6}
    points.sort(key=lambda p: order.get(p["k"], None) if p["k"] in order else int(p["k"]))
    return points


def write_md(points, workloads, path):
    with open(path, "w") as f:
        f.write("Geometric means over %d workloads (%s); ratios to glibc.\n\n"
                % (len(workloads), ", ".join(workloads)))
        f.write("| K (objects per shadow page) | time ratio | memory ratio | syscalls per 1000 allocs (geomean) |\n")
        f.write("|---|---:|---:|---:|\n")
        for p in points:
            k = "strict mode (K=1, immediate)" if p["k"] == "strict" else p["k"]
            f.write("| %s | %.2f | %.2f | %.1f |\n" % (k, p["time"], p["mem"], p["syscalls"]))


def plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4.5))
    fast = [p for p in points if p["k"] != "strict"]
    ax.plot([p["mem"] for p in fast], [p["time"] for p in fast], "o-", label="fast mode, K objects per page")
    for p in fast:
        ax.annotate("K=%s" % p["k"], (p["mem"], p["time"]), textcoords="offset points", xytext=(5, 5))
    for p in points:
        if p["k"] == "strict":
            ax.plot([p["mem"]], [p["time"]], "s", color="red", label="strict mode")
    ax.set_xlabel("peak memory, geomean ratio to glibc")
    ax.set_ylabel("run time, geomean ratio to glibc")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    configs, workloads = load(out_dir)
    points = summarize(configs, workloads)
    write_md(points, workloads, os.path.join(out_dir, "kcurve.md"))
    plot(points, os.path.join(out_dir, "kcurve.png"))
    print(open(os.path.join(out_dir, "kcurve.md")).read())


if __name__ == "__main__":
    main()
