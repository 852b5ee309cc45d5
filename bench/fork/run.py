#!/usr/bin/env python3
"""Fork benchmark (issue 4): fork a process holding 10 MB, 100 MB and 1 GB of live small
(1000-byte) objects, under glibc and under Oscar, and report the median time fork() takes to
return in the parent, the time until the child runs, and Oscar's heap copy rate.

    python3 bench/fork/run.py [--sizes 10,100,1000] [--repeats 5]

Prints a Markdown table. Needs the build (bench/fork/fork_time, src/liboscar.so)."""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build")
PROGRAM = BUILD / "bench" / "fork" / "fork_time"
LIB = BUILD / "src" / "liboscar.so"


def measure(mb, repeats, preload):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSCAR_") and k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = str(preload)
    out = subprocess.run([str(PROGRAM), str(mb), str(repeats)], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit("fork_time %s MB failed (%s): %s%s" % (mb, out.returncode, out.stdout, out.stderr))
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("fork ")]
    parent = statistics.median(float(r[1]) for r in rows)
    child = statistics.median(float(r[2]) for r in rows)
    return parent, child


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100,1000", help="MB of live objects, comma-separated")
    ap.add_argument("--repeats", type=int, default=5, help="forks per size (the median is shown)")
    args = ap.parse_args()
    for path in (PROGRAM, LIB):
        if not path.exists():
            sys.exit("missing %s: build first (cmake --build build)" % path)
    print("| live objects | glibc fork (ms) | glibc child ready (ms) | oscar fork (ms) "
          "| oscar child ready (ms) | oscar heap copy rate (GB/s) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for mb in (int(s) for s in args.sizes.split(",")):
        g_parent, g_child = measure(mb, args.repeats, None)
        o_parent, o_child = measure(mb, args.repeats, LIB)
        rate = mb / 1000 / (o_child / 1000)
        print("| %d MB | %.2f | %.2f | %.2f | %.2f | %.2f |"
              % (mb, g_parent, g_child, o_parent, o_child, rate), flush=True)


if __name__ == "__main__":
    main()
