"""Strict and fast mode's address recycling, proven (issue 17, item 9): once the shadow region
is used up, a window of old addresses is handed out again only after a stop of the world has
shown that no pointer into it is left (scan/recycle.c). tests/programs/recycle_dangling.c
keeps a pointer to a freed object in one place only, churns through a 1 GiB region several
times, and checks that no new object ever covers the pointer's page; once the pointer is
dropped, its addresses are handed out again (they are not lost for good)."""
import re

import pytest

from conftest import assert_clean_run, parse_values

# 300,000 one-page objects use the 1 GiB region (262,144 pages) up once, and the victim's
# window is the first the region hands out again (before the proof, at ~240,000); after the
# drop it comes back within a pass or two (~170,000-200,000 objects).
HELD, AFTER = "300000", "600000"

USED_UP = (r"oscar: warning: the shadow address space is used up \(1 GiB\): addresses of "
           r"objects freed long ago are handed out again once a scan finds no pointer into "
           r"them; raise OSCAR_VA_GIB \(up to 65536\)")


def _run(runner, mode, where):
    res = runner.oscar("recycle_dangling", where, HELD, AFTER,
                       env={"OSCAR_MODE": mode, "OSCAR_VA_GIB": "1", "OSCAR_STATS": "1"},
                       timeout=60)
    stat = lambda name: int(re.search(r"oscar-stats: %s (\d+)" % name, res.stderr).group(1))
    return res, stat


@pytest.mark.parametrize("mode", ["strict", "fast"])
@pytest.mark.parametrize("where", ["global", "stack", "heap", "thread", "register", "tls",
                                   "mmap", "pastend", "altstack"])
def test_recycling_skips_pointed_to_addresses(runner, mode, where):
    """Issue 17's root kinds: (a) a global, (b) main's stack (an interior pointer), (e) a live
    heap object, (c) the stack of a thread asleep in read(2), (d) r12 of a thread spinning in
    a loop, (f) main's __thread variable, (g) an anonymous mapping of the program's own, (h) a
    one-past-the-end pointer (in a global), (i) a local of a signal
    handler blocked in read(2) on an alternate signal stack: the page is never handed out
    while the pointer is held; the window is kept by a proof (counted), and comes back once it
    is dropped."""
    res, stat = _run(runner, mode, where)
    assert_clean_run(res, allowed_warnings=[USED_UP])
    assert res.stdout.endswith("OK\n"), res.describe()
    v = parse_values(res.stdout)
    assert v["held_hits"] == 0 and v.get("reused_after", 0) > 0, res.describe()
    assert stat("recycle_marks") > 0 and stat("recycle_chunks_kept") > 0, res.describe()
    assert stat("chunks_recycled") > 0, res.describe()


AS_LOWERED = (r"oscar: warning: RLIMIT_AS was lowered to \d+ MiB: the heap's unused address "
              r"space is given back; addresses of freed objects are handed out again once the "
              r"rest is used up")


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_recycling_reads_a_mapping_where_metadata_was(runner, mode):
    """The program lowers its RLIMIT_AS and forks: Oscar gives back the unused tops of its
    region and of their metadata (the page table, the stack records). The program maps its
    own memory in the hole the metadata left (where the kernel itself hands out the next
    mapping) and keeps the only pointer there. That hole stayed in the table of Oscar's
    metadata, which a proof does not read: the page was handed out again while the pointer was
    held (held_hits 1, every run). os_unmap now takes the range out of the table."""
    res, stat = _run(runner, mode, "mmap_lowered")
    assert_clean_run(res, allowed_warnings=[USED_UP, AS_LOWERED])
    assert "meta_hole 1\n" in res.stdout, res.describe()
    assert res.stdout.endswith("OK\n"), res.describe()
    v = parse_values(res.stdout)
    assert v["held_hits"] == 0 and v.get("reused_after", 0) > 0, res.describe()
    assert stat("recycle_marks") > 0 and stat("recycle_chunks_kept") > 0, res.describe()


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_recycling_without_pointer_reuses_addresses(runner, mode):
    """The control: nothing holds the pointer, so its page is handed out again (the check
    above is meaningful) and the proof keeps little or nothing."""
    res, stat = _run(runner, mode, "none")
    assert_clean_run(res, allowed_warnings=[USED_UP])
    assert res.stdout.endswith("OK\n"), res.describe()
    v = parse_values(res.stdout)
    assert v["held_hits"] >= 1, res.describe()
    assert stat("recycle_marks") > 0 and stat("chunks_recycled") > 0, res.describe()


@pytest.mark.parametrize("mode", ["strict", "fast"])
@pytest.mark.parametrize("where", ["heap_swapped", "large_swapped"])
def test_recycling_reads_swapped_out_pages(runner, mode, where):
    """The only pointer lies in a live small object (the canonical heap's memfd) or a live
    large object (private memory) whose page the program pushes out to swap (MADV_PAGEOUT)
    again and again: the proof reads swapped-out pages (SEEK_DATA for the memfd, pagemap's
    swap bit for private memory), never only those mincore calls resident. Skipped where no
    page could be pushed out (no swap)."""
    res, stat = _run(runner, mode, where)
    assert_clean_run(res, allowed_warnings=[USED_UP])
    v = parse_values(res.stdout)
    if not v.get("swapped_out"):
        pytest.skip("no page could be pushed out to swap (swap is off)")
    assert res.stdout.endswith("OK\n"), res.describe()
    assert v["held_hits"] == 0 and v.get("reused_after", 0) > 0, res.describe()
    assert stat("recycle_marks") > 0 and stat("recycle_chunks_kept") > 0, res.describe()
