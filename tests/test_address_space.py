"""Freed addresses are never reused, and Oscar never clobbers the program's own mappings."""

from conftest import MAPPING_LIMIT_WARNING, SLOW_TIMEOUT, assert_clean_run


def test_never_reuses_freed_addresses(runner):
    res = runner.oscar("never_reuse_addresses", timeout=SLOW_TIMEOUT)
    assert_clean_run(res, allowed_warnings=[MAPPING_LIMIT_WARNING])
    assert res.stdout == "OK\n", res.describe()


def test_never_reuse_check_is_meaningful_under_glibc(runner):
    """glibc reuses freed chunks at once, so the program must notice it there."""
    res = runner.glibc("never_reuse_addresses", timeout=SLOW_TIMEOUT)
    assert res.returncode == 1 and "REUSED" in res.stdout, res.describe()


def test_never_clobbers_program_mappings(runner):
    expected = runner.glibc("never_clobber_mappings", timeout=SLOW_TIMEOUT)
    assert expected.stdout == "OK\n", expected.describe()
    res = runner.oscar("never_clobber_mappings", timeout=SLOW_TIMEOUT)
    assert_clean_run(res)
    assert res.stdout == "OK\n", res.describe()
