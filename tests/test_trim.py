"""malloc_trim returns what glibc's returns: 1 when memory was given back to the system, 0
when nothing was (issue 20, item 10)."""

import json

import pytest

from conftest import parse_values


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_malloc_trim_gives_back_freed_memory(runner, tmp_path, mode):
    """A program frees 4 MB of small and 8 MB of large objects, then trims twice. glibc says 1
    the first time; Oscar too (the kept pages of the freed large objects, and in fast mode the
    thread's retire queue, are given back), and 0 the second time, when nothing is left
    (glibc says 1 again: it advises its free chunks away on every call)."""
    glibc = runner.glibc("malloc_trim_release")
    assert glibc.returncode == 0, glibc.describe()
    assert parse_values(glibc.stdout)["first trim"] == 1, glibc.describe()
    stats = tmp_path / "stats.json"
    res = runner.oscar("malloc_trim_release",
                       env={"OSCAR_MODE": mode, "OSCAR_STATS_FILE": str(stats)})
    assert res.returncode == 0, res.describe()
    values = parse_values(res.stdout)
    kept = json.loads(stats.read_text())["large_kept"]
    # (Strict mode without guard markers keeps no freed pages: it gave them back at free, and
    # the trim has nothing left: 0.)
    assert values["first trim"] == (1 if kept or mode == "fast" else 0), (kept, res.describe())
    assert values["second trim"] == 0, res.describe()


def test_malloc_trim_in_protect_mode(runner):
    """Protect mode: malloc_trim runs a mark (the program dropped its pointers), then gives
    back the memory of the pages it emptied and of the free runs: 1; then nothing is left: 0."""
    res = runner.oscar("malloc_trim_release", env={"OSCAR_MODE": "protect"})
    assert res.returncode == 0, res.describe()
    values = parse_values(res.stdout)
    assert values["first trim"] == 1 and values["second trim"] == 0, res.describe()
