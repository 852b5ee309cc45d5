"""Chunks of large objects are reclaimed (and their addresses recycled) once every object in
them is freed. Objects of 2100-4000 bytes are large (OSCAR_SMALL_MAX is 2048) and carved one
after another from 256 KiB slabs whose mappings merge into one: a freed one is revoked by a
guard marker (PK_LARGE_GUARDED) and only long dead stretches became PROT_NONE (a free looks at
64 objects each way, and a stretch inside a slab's mapping waits for 2 MiB), so no chunk of
them ever read as dead, none was reclaimed, and with a 1 GiB region malloc returned NULL once
the region was used up (at ~262,000 allocations) although almost nothing was live.
tests/programs/reclaim_large_fifo.c.

The sweep now makes such a chunk PROT_NONE itself (large_retire_chunk). A first try at that
(e621351) made the whole chunk PROT_NONE, also a freed object of over 64 KiB whose pages were
being moved into the keep at that moment (PK_LARGE_FREED while they move): the keep got
PROT_NONE pages and handed them to the next large object, whose first access died with
SIGSEGV and no report (reclaim_threads: 3 runs in 40, 7 in the debug build). Now a freed large
object's entry carries LARGE_FREEING while its free still works on its pages (the move,
the guard, a fast-mode retire queue), and the sweep and the frees' dead stretches make
PROT_NONE only settled guarded objects, whole (heap/large.h); never a PK_LARGE_FREED one again,
whose pages past its first chunk may be a new object's once that chunk was recycled (the
program of the last test found that in a build whose frees made no dead stretches)."""
import json
import re

import pytest

from conftest import assert_clean_run

USED_UP = (r"oscar: warning: the shadow address space is used up \(1 GiB\): addresses of "
           r"objects freed long ago are handed out again once a scan finds no pointer into "
           r"them; raise OSCAR_VA_GIB \(up to 65536\)")

# 290,000 one-page objects: past the 262,144 pages of a 1 GiB region (NULL came at ~262,060).
N = "290000"


# (Five runs, ~8 s: fifo4k and random in fast mode behave as in strict mode.)
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


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_fork_never_lands_inside_oscars_walk_of_the_loaders_list(runner, mode):
    """A fork whose stop parked a thread inside Oscar's dl_iterate_phdr (its stack capture's
    look at the loader's list) left the loader's lock held in the child, which glibc does not
    reset: the child's next capture waited for ever, and the parent in waitpid (CI: one hang
    of the test below in 120 s). OSCAR_TEST_REVOKE_SPIN_US makes the walk last: it hung by
    the second run before, now the stop waits until the walk is over."""
    res = runner.oscar("reclaim_threads", "2000", "12", "large",
                       env={"OSCAR_MODE": mode, "OSCAR_VA_GIB": "1",
                            "OSCAR_TEST_REVOKE_SPIN_US": "200"}, timeout=60)
    assert_clean_run(res, allowed_warnings=[USED_UP])
    assert res.stdout.endswith("OK\n"), res.describe()


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_chunks_retired_while_threads_free_large_objects(runner, mode):
    """Four threads churn large objects, carved (2-32 KiB) and kept (64-132 KiB, moved through
    the keep), some freed by another thread, while the main thread forks: the sweep retires
    chunks of guarded objects all along and never one whose free is still under way (e621351's
    sweep did, in about one run in three of this: SIGSEGV, no report). Every object keeps
    its bytes."""
    res = runner.oscar("reclaim_threads", "20000", "12", "large",
                       env={"OSCAR_MODE": mode, "OSCAR_VA_GIB": "1", "OSCAR_STATS": "1"},
                       timeout=120)
    assert_clean_run(res, allowed_warnings=[USED_UP])
    assert res.stdout.endswith("OK\n"), res.describe()
    recycled = re.search(r"oscar-stats: chunks_recycled (\d+)", res.stderr)
    assert recycled and int(recycled.group(1)) > 0, res.describe()
