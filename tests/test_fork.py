"""fork(): isolation is covered in test_correctness (fork_isolation, fork_with_threads); here a
use after free inside the child is caught in the child while the parent carries on."""

import re
import signal

import pytest

from conftest import location_line, parse_values


def test_child_uaf_caught_in_child(runner):
    res = runner.oscar("fork_child_uaf")
    assert res.returncode == 0, "the parent must survive\n" + res.describe()
    assert "NOT REACHED in child" not in res.stdout, res.describe()
    assert "child killed by signal %d\n" % signal.SIGSEGV in res.stdout, res.describe()
    assert 'parent still reads "shared before fork"' in res.stdout, res.describe()
    v = parse_values(res.stdout)
    lines = res.stderr.splitlines()
    first = "oscar: heap-use-after-free on address 0x%x (READ)" % (v["ptr"] + 7)
    assert first in lines, "the child did not report its use after free\n" + res.describe()
    i = lines.index(first)
    assert i + 1 < len(lines) and re.fullmatch(location_line(v["ptr"] + 7, v["ptr"], 200), lines[i + 1]), \
        res.describe()


def test_child_uaf_not_caught_under_glibc(runner):
    res = runner.glibc("fork_child_uaf")
    assert res.returncode == 0 and "child exited 0" in res.stdout, res.describe()


@pytest.mark.parametrize("how", ["", "attrmask"])
@pytest.mark.parametrize("guards", ["0", "1"])
def test_fork_never_parks_a_free_between_entry_and_revocation(runner, guards, how):
    """A fork that parked a freeing thread after its page's entry said "revoked" but before the
    revoking call left that page, in the child, mapped onto the parent's heap (73-80 children of
    100 with the window widened by OSCAR_TEST_REVOKE_SPIN_US). The thread now parks only once the
    call returned (os/nopark.h). Without guard markers (the mmap path) and with them; and a
    thread made with every signal blocked (attrmask), parked by the second park signal, which
    waited for no stretch's end at first."""
    env = {"OSCAR_GUARDS": guards, "OSCAR_TEST_REVOKE_SPIN_US": "50"}
    res = runner.oscar("fork_revoke_window", "100", *([how] if how else []), env=env, timeout=120)
    assert res.returncode == 0, res.describe()
    v = parse_values(res.stdout)
    assert v.get("forks") == 100 and v.get("bad") == 0, res.describe()
    assert v["shared"] == 0, "children saw the parent's heap\n" + res.describe()
