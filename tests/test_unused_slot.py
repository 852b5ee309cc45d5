"""Issue 17, item 10: a free of a slot address that was never handed out is an invalid free
in every mode (fast mode used to accept it; the slot, handed out later, then gave a false
double free). The packed page's owner notes how many of its slots it has handed out
(canon_note_taken)."""

import re
import signal

import pytest

from conftest import assert_report, hexaddr, parse_values


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
@pytest.mark.parametrize("k", [1, 10, 86])
def test_free_of_unused_slot(runner, mode, k):
    res = runner.oscar("free_unused_slot", str(k), env={"OSCAR_MODE": mode})
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGABRT,
                  re.escape("oscar: invalid-free on address %s (never allocated)"
                            % hexaddr(v["never"])))
