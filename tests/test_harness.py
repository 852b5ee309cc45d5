"""The test harness itself: a run under Oscar that did not load it fails the test."""

import shutil

import pytest

from conftest import LIB


def test_a_library_the_loader_cannot_preload_fails_the_run(runner, tmp_path):
    """The loader ignores a preload it cannot load ("file too short": liboscar.so relinked
    while the suite ran) and the program runs on glibc's malloc: a soundness test then saw
    glibc reuse a freed object and reported it as Oscar's fault, and a test that compares
    with glibc passed without Oscar."""
    broken = tmp_path / "liboscar.so"
    with open(LIB, "rb") as src, open(broken, "wb") as dst:
        dst.write(src.read(100))
    with pytest.raises(pytest.fail.Exception, match="liboscar.so was not loaded"):
        runner.raw([runner.program("api_malloc_calloc")], env={"LD_PRELOAD": str(broken)})
    whole = tmp_path / "whole" / "liboscar.so"
    whole.parent.mkdir()
    shutil.copy(LIB, whole)
    res = runner.raw([runner.program("api_malloc_calloc")], env={"LD_PRELOAD": str(whole)})
    assert res.returncode == 0, res.describe()
