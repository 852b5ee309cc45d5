"""Issue 20, item 5: an access just below an object, where nothing was ever allocated, is a
heap-buffer-overflow to the left of that object (AddressSanitizer's words and distance), with
the object's allocation stack; not a use after free, not a wild access. In protect mode (plain
memory, no guard pages between objects) only the heap's edges fault: below its first page (the
process's first allocation, here); that is labelled the same way, not left to a bare SIGSEGV."""

import re
import signal

import pytest

from conftest import assert_report, parse_values, hexaddr

NO_STACKS_PROTECT = ("(protect mode keeps allocation and free stacks only for sampled objects: "
                     "OSCAR_SAMPLE_RATE)")


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
@pytest.mark.parametrize("size,below", [(100, 1), (100, 16), (100000, 1), (2000000, 64)])
def test_access_below_object(runner, mode, size, below):
    # (Protect mode: the heap's first object, not a sampled one at the end of a page of its own,
    # whose bytes below it are that page's: OSCAR_SAMPLE_FIRST=0.)
    res = runner.oscar("access_below_object", str(size), str(below),
                       env={"OSCAR_MODE": mode, "OSCAR_SAMPLE_FIRST": "0"})
    v = parse_values(res.stdout)
    addr = v["ptr"] - below
    region = size if mode != "fast" or size > 4096 else r"\d+"  # (fast: the slot's size)
    report = assert_report(
        res, signal.SIGSEGV,
        re.escape("oscar: heap-buffer-overflow on address %s (READ)" % hexaddr(addr)),
        r"%s is located %d bytes to the left of %s-byte region \[%s,0x[0-9a-f]+\)"
        % (re.escape(hexaddr(addr)), below, region, re.escape(hexaddr(v["ptr"]))))
    assert re.match(r"    #0 0x[0-9a-f]+ in main ", report[3]), res.describe()
    if mode == "protect":
        assert report[-1] == NO_STACKS_PROTECT, res.describe()
    elif mode == "strict" or size > 4096:  # (fast mode keeps no stacks for packed objects)
        assert any(l.startswith("allocated by thread") for l in report), res.describe()


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_access_right_after_large_object(runner, mode):
    """The first byte after a large object whose end is a page boundary is 0 bytes to the right
    of it. (Not protect mode: its heap maps pages ahead of the last object, which an overflow
    reads without a fault.)"""
    size = 131072
    res = runner.oscar("access_below_object", str(size), str(-size), env={"OSCAR_MODE": mode})
    v = parse_values(res.stdout)
    addr = v["ptr"] + size
    assert_report(
        res, signal.SIGSEGV,
        re.escape("oscar: heap-buffer-overflow on address %s (READ)" % hexaddr(addr)),
        re.escape("%s is located 0 bytes to the right of %d-byte region [%s,%s)"
                  % (hexaddr(addr), size, hexaddr(v["ptr"]), hexaddr(addr))))
