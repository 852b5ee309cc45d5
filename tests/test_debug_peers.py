"""bench/debug_peers.py (issue 20, item 9; docs/debugging-peers.md) in smoke mode: it runs, and
its time table has a row per workload and a column per tool. The figures themselves are for the
docs, not asserted here (a shared machine's timings are not a test)."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, REPO

SCRIPT = REPO / "bench" / "debug_peers.py"
MICRO = ["churn", "lifetimes", "stl", "realloc", "bigobj"]
REAL = ["sqlite", "xz"]  # Debian's binaries: their cells say skip when not installed
WORKLOADS = MICRO + REAL


@pytest.fixture(scope="module")
def smoke(build, tmp_path_factory):
    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed (apt-get install valgrind)")
    build.require_lib()
    if not (BUILD / "bench" / "programs" / "churn").exists():
        pytest.skip("%s/bench/programs is not built (-DOSCAR_BUILD_BENCH=ON)" % BUILD)
    out = tmp_path_factory.mktemp("debug-peers")
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("OSCAR_")}
    env["OSCAR_BUILD_DIR"] = str(BUILD)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, out


def time_rows(text):
    """{workload: [cells]} from the '### Time' table."""
    section = text.split("### Time", 1)[1].split("###", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0] in WORKLOADS:
            rows[cells[0]] = cells[2:]
    return rows


def test_table_has_a_row_per_workload(smoke):
    proc, out = smoke
    for text in (proc.stdout, (out / "results.md").read_text()):
        rows = time_rows(text)
        assert sorted(rows) == sorted(WORKLOADS), text
        header = re.search(r"^\| workload \| args \| (.*) \|$", text, re.M).group(1).split(" | ")
        assert header[:2] == ["glibc", "oscar-strict"] and "valgrind" in header, header
        for name, cells in rows.items():
            assert len(cells) == len(header), (name, cells)
            if name in REAL and cells[0].startswith("skip"):
                continue
            assert cells[0].startswith("1.0x"), (name, cells)  # glibc is the baseline
            assert cells[header.index("valgrind")].endswith(" s)"), (name, cells)


def test_reports_name_the_bug(smoke):
    _, out = smoke
    reports = (out / "reports.md").read_text()
    assert "oscar: heap-use-after-free" in reports
    assert "Invalid read of size 4" in reports  # Valgrind's words
