"""Issue 20, item 5: an access just below an object, where nothing was ever allocated, is a
heap-buffer-overflow to the left of that object (AddressSanitizer's words and distance), with
the object's allocation stack; not a use after free, not a wild access."""

import re
import signal

import pytest

from conftest import assert_report, parse_values, hexaddr


@pytest.mark.parametrize("mode", ["strict", "fast"])
@pytest.mark.parametrize("size,below", [(100, 1), (100, 16), (100000, 1), (2000000, 64)])
def test_access_below_object(runner, mode, size, below):
    res = runner.oscar("access_below_object", str(size), str(below), env={"OSCAR_MODE": mode})
    v = parse_values(res.stdout)
    addr = v["ptr"] - below
    region = size if mode == "strict" or size > 4096 else r"\d+"  # (fast: the slot's size)
    report = assert_report(
        res, signal.SIGSEGV,
        re.escape("oscar: heap-buffer-overflow on address %s (READ)" % hexaddr(addr)),
        r"%s is located %d bytes to the left of %s-byte region \[%s,0x[0-9a-f]+\)"
        % (re.escape(hexaddr(addr)), below, region, re.escape(hexaddr(v["ptr"]))))
    if mode == "strict" or size > 4096:  # (fast mode keeps no stacks for packed objects)
        assert any(l.startswith("allocated by thread") for l in report), res.describe()
