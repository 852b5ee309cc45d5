"""fork's copy of the canonical heap (issue 18, item 4): made after fork in pieces by the
parent and the child at once; every live byte reaches the child, grandchild and _Fork child,
and their writes stay theirs. (The cost itself: bench/fork/run.py, docs/process-shapes.md.)"""

import pytest

from conftest import assert_same_output


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_fork_copy_in_pieces(runner, mode):
    expected = runner.glibc("fork_cost_copy")
    assert expected.stdout.endswith("OK\n"), expected.describe()
    res = runner.oscar("fork_cost_copy", env={"OSCAR_MODE": mode}, timeout=120)
    assert_same_output(res, expected)
