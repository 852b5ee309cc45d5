#!/usr/bin/env python3
"""Two-thread scaling (issue 6): the larson microbenchmark with 1 and with 2 threads, the same
work per thread, under glibc, Oscar strict and Oscar fast. Speedup = 2 x t(1 thread) /
t(2 threads): 2.0 is perfect scaling, 1.0 no gain, below 1 the second thread slows both.
Runs are interleaved; each figure is the median of --runs.

    python3 bench/scaling.py [--runs 5] [--build-dir build]

Iterations per thread differ per allocator (Oscar is slower), so compare the speedups, not
the times. A configuration whose settings the library refuses (an older liboscar.so without
protect mode) is left out with a note."""

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CONFIGS = [  # name, settings, iterations per thread
    ("glibc", None, 4000000),
    ("oscar", {}, 100000),
    ("oscar-fast", {"OSCAR_MODE": "fast"}, 400000),
    ("oscar-protect", {"OSCAR_MODE": "protect"}, 4000000),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build-dir", default=os.environ.get("OSCAR_BUILD_DIR") or REPO / "build")
    args = ap.parse_args()
    build = Path(args.build_dir)
    prog, lib = build / "bench" / "programs" / "larson", build / "src" / "liboscar.so"
    if not prog.exists():
        raise SystemExit("scaling: %s missing (build with -DOSCAR_BUILD_BENCH=ON)" % prog)
    base = {k: v for k, v in os.environ.items() if not k.startswith("OSCAR_") and k != "LD_PRELOAD"}
    configs = []
    for name, settings, iters in CONFIGS:
        if settings:
            probe = subprocess.run(["true"], env=dict(base, LD_PRELOAD=str(lib), **settings),
                                   capture_output=True, text=True)
            if "oscar: warning: OSCAR_" in probe.stderr:
                print("skip: %s: %s" % (name, probe.stderr.strip().splitlines()[0]))
                continue
        configs.append((name, settings, iters))
    times = {}
    for _ in range(args.runs):
        for name, settings, iters in configs:
            env = dict(base)
            if settings is not None:
                env.update(settings, LD_PRELOAD=str(lib))
            for threads in (1, 2):
                t0 = time.perf_counter()
                subprocess.run([str(prog), str(iters), str(threads), "1000"], env=env,
                               stdout=subprocess.DEVNULL, check=True)
                times.setdefault((name, threads), []).append(time.perf_counter() - t0)
    print("| allocator | iterations per thread | 1 thread s | 2 threads s | speedup |")
    print("|---|---:|---:|---:|---:|")
    for name, _, iters in configs:
        t1, t2 = (statistics.median(times[(name, t)]) for t in (1, 2))
        print("| %s | %d | %.3f | %.3f | %.2f |" % (name, iters, t1, t2, 2 * t1 / t2))


if __name__ == "__main__":
    main()
