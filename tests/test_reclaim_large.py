"""Chunks of large objects are reclaimed (and their addresses recycled) once every object in
them is freed. Objects of 2100-4000 bytes are large (OSCAR_SMALL_MAX is 2048) and carved one
after another from 256 KiB slabs whose mappings merge into one: a freed one is revoked by a
guard marker (PK_LARGE_GUARDED) and only long dead stretches became PROT_NONE, so no chunk of
them ever read as dead, none was reclaimed, and with a 1 GiB region malloc returned NULL once
the region was used up (at ~262,000 allocations) although almost nothing was live.
tests/programs/reclaim_large_fifo.c.

Not fixed: a fix that made such chunks PROT_NONE from the sweep (e621351) let
tests/programs/reclaim_threads crash with SIGSEGV and no report (3 runs in 40, 7 in 40 in the
debug build, against 0 in 40 before it), so it was taken back and this reproducer waits."""
import json

import pytest

from conftest import assert_clean_run

USED_UP = (r"oscar: warning: the shadow address space is used up \(1 GiB\): addresses of "
           r"objects freed long ago are handed out again once a scan finds no pointer into "
           r"them; raise OSCAR_VA_GIB \(up to 65536\)")

# 290,000 one-page objects: past the 262,144 pages of a 1 GiB region (NULL came at ~262,060).
N = "290000"


# (Five runs, ~8 s: fifo4k and random in fast mode behave as in strict mode.)
@pytest.mark.xfail(strict=False, reason="known defect, not fixed: chunks of carved large "
                   "objects revoked by guard markers are never reclaimed (see the docstring)")
@pytest.mark.parametrize("shape,mode,args", [
    # 21,000 live objects of 2100-4000 bytes, oldest freed first
    ("fifo", "strict", ["21000"]),
    ("fifo", "fast", ["21000"]),
    # the same, exactly a page each
    ("fifo4k", "strict", ["21000", "4096"]),
    # replaced at random, 64 MiB live
    ("random", "strict", []),
    # a ring of 64; a 1 MiB object live, allocated while a second thread exists
    ("thread", "fast", []),
])
def test_chunks_of_large_objects_are_reclaimed(runner, tmp_path, shape, mode, args):
    """malloc never returns NULL, chunks are reclaimed and their addresses handed out again
    (through the proof: scan/recycle.c), and every object keeps its bytes."""
    out = tmp_path / "stats.json"
    prog_shape = "fifo" if shape == "fifo4k" else shape
    res = runner.oscar("reclaim_large_fifo", prog_shape, N, *args,
                       env={"OSCAR_MODE": mode, "OSCAR_VA_GIB": "1",
                            "OSCAR_STATS_FILE": str(out)}, timeout=60)
    assert "malloc returned NULL" not in res.stdout, res.describe()
    assert_clean_run(res, allowed_warnings=[USED_UP])
    assert res.stdout.endswith("OK\n"), res.describe()
    stats = json.loads(out.read_text())
    assert stats["chunks_reclaimed"] > 0, (stats, res.describe())
    assert stats["chunks_recycled"] > 0, (stats, res.describe())
