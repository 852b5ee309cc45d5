"""Attack suite (docs/attacks.md): published heap exploitation primitives that depend on use
after free, double free or invalid free, one program each (tests/programs/attack_*.c, *.cc).

Every program prints `victim 0x...` (the object the first bad operation touches: the freed
object, or the pointer wrongly freed), performs the attack and prints
"ATTACK SUCCEEDED: <goal>" exactly when the attacker's goal is reached, "attack failed: ..."
otherwise. Each attack is run three times:
  - under glibc: the attack must succeed (a broken attack cannot pass silently);
  - under Oscar strict mode: the goal is never reached, the program dies at the first bad
    operation with the exact report kind;
  - under Oscar fast mode: the goal is never reached; the program dies with a report, or, for
    the attacks fast mode stops without a report (docs/attacks.md says why), exits normally
    with "attack failed" and no report.
"""

import re
import signal

import pytest

from conftest import HEX, TESTS, REPO, assert_report, parse_values, report_lines

FAST = {"OSCAR_MODE": "fast"}
SUCCESS = "ATTACK SUCCEEDED"
FAILED = "attack failed"

# Report kinds: what the first bad operation must produce.
UAF_READ = "uaf-read"            # heap-use-after-free (READ) on the freed victim
UAF_WRITE = "uaf-write"          # heap-use-after-free (WRITE) on the freed victim
POISON_READ = "poison-read"      # fast mode: a pointer read from the poisoned victim was followed
POISON_WRITE = "poison-write"    # fast mode: ... and written through
DOUBLE_FREE = "double-free"
INTERIOR = "invalid-free-interior"
FOREIGN = "invalid-free-foreign"  # not allocated by oscar (the stack)
NOT_REPORTED = None              # fast mode: stopped (goal not reached), no report

# name: (strict mode report, fast mode report)
ATTACKS = {
    # allocator-metadata attacks (how2heap, glibc 2.36)
    "attack_tcache_poisoning": (UAF_READ, NOT_REPORTED),
    "attack_tcache_key_bypass": (UAF_WRITE, DOUBLE_FREE),
    "attack_fastbin_dup": (DOUBLE_FREE, DOUBLE_FREE),
    "attack_fastbin_dup_into_stack": (DOUBLE_FREE, DOUBLE_FREE),
    "attack_fastbin_dup_consolidate": (DOUBLE_FREE, DOUBLE_FREE),
    "attack_fastbin_reverse_into_tcache": (UAF_WRITE, NOT_REPORTED),
    "attack_house_of_botcake": (DOUBLE_FREE, DOUBLE_FREE),
    "attack_tcache_house_of_spirit": (FOREIGN, FOREIGN),
    "attack_large_bin_attack": (UAF_WRITE, NOT_REPORTED),
    "attack_realloc_zero_double_free": (DOUBLE_FREE, DOUBLE_FREE),
    "attack_interior_free_overlap": (INTERIOR, INTERIOR),
    # application-object attacks (refill a freed object with attacker data)
    "attack_type_confusion": (UAF_READ, NOT_REPORTED),
    "attack_info_leak_secret": (UAF_READ, NOT_REPORTED),
    "attack_dangling_callback": (UAF_READ, POISON_READ),
    "attack_fnptr_table": (UAF_READ, POISON_READ),
    "attack_realloc_moved": (UAF_READ, POISON_READ),
    "attack_refcount_underflow": (UAF_READ, POISON_READ),
    "attack_list_unlink": (UAF_READ, POISON_WRITE),
    "attack_hash_table_stale": (UAF_READ, POISON_READ),
    "attack_callback_registry": (UAF_READ, POISON_READ),
    "attack_heap_spray": (UAF_READ, POISON_READ),
    "attack_cxx_vtable_hijack": (UAF_READ, POISON_READ),
    "attack_cxx_vector_invalidation": (UAF_READ, POISON_READ),
}

NAMES = sorted(ATTACKS)


def victim_of(res):
    v = parse_values(res.stdout)
    assert "victim" in v, "the program did not print its victim\n" + res.describe()
    return "0x%x" % v["victim"]


def assert_oscar_report(res, kind):
    """The program died at its first bad operation with a report of this kind."""
    victim = victim_of(res)
    inside_victim = r"%s is located \d+ bytes inside of \d+-byte region \[%s,%s\)" % (
        HEX, re.escape(victim), HEX)
    if kind in (UAF_READ, UAF_WRITE):
        access = "READ" if kind == UAF_READ else "WRITE"
        assert_report(res, signal.SIGSEGV,
                      r"oscar: heap-use-after-free on address %s \(%s\)" % (HEX, access),
                      inside_victim, not_reached=SUCCESS)
    elif kind in (POISON_READ, POISON_WRITE):
        access = "READ" if kind == POISON_READ else "WRITE"
        assert_report(res, signal.SIGSEGV,
                      r"oscar: heap-use-after-free on address %s \(%s\)" % (HEX, access),
                      r"the address is oscar's poison: .*", not_reached=SUCCESS)
    elif kind == DOUBLE_FREE:
        assert_report(res, signal.SIGABRT, r"oscar: double-free on address %s" % re.escape(victim),
                      inside_victim, not_reached=SUCCESS)
    elif kind == INTERIOR:
        assert_report(res, signal.SIGABRT,
                      r"oscar: invalid-free on address %s \(interior pointer\)" % re.escape(victim),
                      not_reached=SUCCESS)
    elif kind == FOREIGN:
        assert_report(res, signal.SIGABRT,
                      r"oscar: invalid-free on address %s \(not allocated by oscar\)"
                      % re.escape(victim), not_reached=SUCCESS)
    else:
        raise AssertionError("unknown kind %r" % kind)
    # It died at the bug itself, not later.
    assert FAILED not in res.stdout, "the program went on after the bad operation\n" + res.describe()


def test_the_suite_is_complete():
    """Every attack program is in the table (none is skipped silently), there are at least
    20, each names its published source, and docs/attacks.md lists each."""
    progs = TESTS / "programs"
    found = sorted(p.stem for p in list(progs.glob("attack_*.c")) + list(progs.glob("attack_*.cc")))
    assert found == NAMES
    assert len(NAMES) >= 20
    doc = (REPO / "docs" / "attacks.md").read_text()
    for name in NAMES:
        src = next(progs.glob(name + ".c*")).read_text()
        assert "Published" in src.split("\n\n")[0] or "Published" in src[:1200], name
        assert "`%s`" % name in doc, "docs/attacks.md does not list " + name


@pytest.mark.parametrize("name", NAMES)
def test_attack_succeeds_under_glibc(runner, name):
    res = runner.glibc(name)
    assert SUCCESS in res.stdout, "the attack does not work under glibc\n" + res.describe()
    assert res.returncode == 0, res.describe()


@pytest.mark.parametrize("name", NAMES)
def test_attack_stopped_and_reported_strict(runner, name):
    res = runner.oscar(name)
    assert SUCCESS not in res.stdout, "the attack succeeded under oscar\n" + res.describe()
    assert_oscar_report(res, ATTACKS[name][0])


@pytest.mark.parametrize("name", NAMES)
def test_attack_stopped_fast(runner, name):
    res = runner.oscar(name, env=FAST)
    assert SUCCESS not in res.stdout, "the attack succeeded under fast mode\n" + res.describe()
    kind = ATTACKS[name][1]
    if kind is NOT_REPORTED:
        # Stopped without a report (docs/attacks.md, "Not reported in fast mode"): the
        # dangling accesses only touched the freed, poisoned slot of a page that still holds
        # live objects; nothing the attacker planted was reachable.
        assert res.returncode == 0, res.describe()
        assert FAILED in res.stdout, res.describe()
        assert not report_lines(res), "unexpected report\n" + res.describe()
    else:
        assert_oscar_report(res, kind)
