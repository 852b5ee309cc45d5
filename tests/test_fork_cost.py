"""fork's copy of the canonical heap (issue 18, item 4): every live byte reaches the child,
the grandchild (a copy of a copy) and a _Fork child, holes between stretches of data
included, and their writes stay theirs. (The cost: bench/fork/run.py, docs/process-shapes.md.)"""

import pytest

from conftest import assert_same_output


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_fork_copy_whole(runner, mode):
    expected = runner.glibc("fork_cost_copy")
    assert expected.stdout.endswith("OK\n"), expected.describe()
    res = runner.oscar("fork_cost_copy", env={"OSCAR_MODE": mode}, timeout=120)
    assert_same_output(res, expected)
