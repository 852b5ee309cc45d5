"""The benchmark harness (bench/run.py, docs/benchmarks.md) in smoke mode: glibc and Oscar on
the microbenchmarks and one real program. Checks the outputs are there and well-formed, not
the numbers themselves (those are for docs/benchmarks.md)."""

import csv
import os
import subprocess
import sys

import pytest

from conftest import BUILD, REPO

RUN = REPO / "bench" / "run.py"
MICRO = ["larson", "prodcons", "lifetimes", "realloc", "stl", "bigobj"]
REAL = "sqlite"  # the quickest real program; skipped (and the test with it) if not installed
ALLOCATORS = ["glibc", "oscar"]


def run_bench(*args, timeout=600):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("OSCAR_")}
    env["OSCAR_BUILD_DIR"] = str(BUILD)
    proc = subprocess.run([sys.executable, str(RUN)] + list(args), capture_output=True,
                          text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, "bench/run.py failed:\n%s\n%s" % (proc.stdout[-4000:],
                                                                  proc.stderr[-4000:])
    return proc


@pytest.fixture(scope="module")
def smoke(build, tmp_path_factory):
    build.require_lib()
    out = tmp_path_factory.mktemp("bench")
    proc = run_bench("--smoke", "--allocators", ",".join(ALLOCATORS),
                     "--workloads", ",".join(MICRO + [REAL]), "--out", str(out))
    return out, proc


def test_csv_has_every_cell(smoke):
    out, proc = smoke
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    cells = {(r["workload"], r["allocator"]): r for r in rows}
    workloads = MICRO + ([REAL] if "skip: %s:" % REAL not in proc.stdout else [])
    for w in workloads:
        for a in ALLOCATORS:
            row = cells.get((w, a))
            assert row is not None, "no row for %s under %s\n%s" % (w, a, proc.stdout)
            assert row["status"] == "ok", row
            assert float(row["time_s"]) > 0, row
            # a run of a few milliseconds may end before the 1 ms sampler's first look
            assert float(row["mem_mib"]) >= 0, row
        assert float(cells[(w, "glibc")]["time_ratio"]) == 1.0
        assert float(cells[(w, "glibc")]["mem_ratio"]) == 1.0
        oscar = cells[(w, "oscar")]
        assert float(oscar["time_ratio"]) > 0
        assert oscar["syscalls_per_1k_allocs"] != "", oscar
        assert float(oscar["syscalls_per_1k_allocs"]) > 0, oscar
        assert oscar["peak_mappings_per_1k_allocs"] != "", oscar


def test_markdown_table(smoke):
    out, _ = smoke
    text = (out / "results.md").read_text()
    header = [l for l in text.splitlines() if l.startswith("| workload |")]
    assert header, text
    assert all(a in header[0] for a in ALLOCATORS), header[0]
    for w in MICRO:
        assert "| %s |" % w in text, text
    assert "| **geomean** |" in text
    assert "Machine:" in text


def test_plots_are_png(smoke):
    out, _ = smoke
    for name in ("time_ratio.png", "memory_ratio.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert len(data) > 1000, name


def test_bogus_allocator_is_skipped(build, tmp_path):
    proc = run_bench("--smoke", "--allocators", "glibc", "--allocator", "x=/nonexistent.so",
                     "--workloads", "realloc", "--out", str(tmp_path), timeout=120)
    assert any(l.startswith("skip: x: ") and "/nonexistent.so" in l
               for l in proc.stdout.splitlines()), proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    with open(tmp_path / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["allocator"] for r in rows} == {"glibc"}
