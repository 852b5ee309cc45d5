"""OSCAR_* settings (bad values warn once and fall back) and the statistics outputs."""

import json
import re

import pytest

from conftest import LIB, assert_clean_run, assert_same_output, documented_counters


@pytest.mark.parametrize("name,value", [
    ("OSCAR_RUN_PAGES", "banana"),
    ("OSCAR_RUN_PAGES", "12abc"),
    ("OSCAR_RUN_PAGES", "-1"),
    ("OSCAR_RUN_PAGES", "99999999999999999999999"),
    ("OSCAR_STATS", "perhaps"),
])
def test_bad_setting_warns_once_and_runs(runner, name, value):
    expected = runner.glibc("api_realloc")
    res = runner.oscar("api_realloc", env={name: value})
    lines = res.oscar_lines()
    prefix = "oscar: warning: %s=%s is invalid" % (name, value)
    assert len(lines) == 1 and lines[0].startswith(prefix), (
        "expected exactly one line starting %r\n%s" % (prefix, res.describe()))
    assert re.fullmatch(re.escape(prefix) + r" \(.+\); using default \S+", lines[0]), res.describe()
    assert res.returncode == 0 and res.stdout == expected.stdout, res.describe()


@pytest.mark.parametrize("env", [{"OSCAR_RUN_PAGES": "1"}, {"OSCAR_RUN_PAGES": "16"}, {"OSCAR_STATS": "0"}])
def test_valid_setting_is_silent(runner, env):
    expected = runner.glibc("api_realloc")
    assert_same_output(runner.oscar("api_realloc", env=env), expected)


def parse_stats(stderr):
    stats = {}
    for line in stderr.splitlines():
        if line.startswith("oscar-stats:"):
            m = re.fullmatch(r"oscar-stats: ([a-z_]+) (\d+)", line)
            assert m, "malformed stats line %r" % line
            stats[m.group(1)] = int(m.group(2))
    return stats


def test_stats_on_stderr(runner):
    res = runner.oscar("stats_1000_mallocs", env={"OSCAR_STATS": "1"})
    assert_clean_run(res)
    stats = parse_stats(res.stderr)
    assert stats.get("allocations", 0) >= 1000, res.describe()
    assert stats.get("frees", 0) >= 1000, res.describe()


def test_stats_list_every_documented_counter(runner):
    res = runner.oscar("stats_1000_mallocs", env={"OSCAR_STATS": "1"})
    stats = parse_stats(res.stderr)
    missing = [c for c in documented_counters() if c not in stats]
    assert not missing, "counters documented in docs/interfaces.md but not printed: %s" % missing


def test_stats_off_by_default(runner):
    res = runner.oscar("stats_1000_mallocs")
    assert_clean_run(res)
    assert "oscar-stats" not in res.stderr, res.describe()


def test_stats_file_json(runner, tmp_path):
    pattern = tmp_path / "stats-%p.json"
    res = runner.oscar("stats_1000_mallocs", env={"OSCAR_STATS_FILE": str(pattern)})
    assert_clean_run(res)
    assert "oscar-stats" not in res.stderr, "OSCAR_STATS_FILE alone must not print to stderr"
    path = tmp_path / ("stats-%d.json" % res.pid)
    assert path.exists(), "expected %s; directory has %s" % (path, sorted(p.name for p in tmp_path.iterdir()))
    data = json.loads(path.read_text())
    assert isinstance(data, dict), data
    missing = [c for c in documented_counters() if c not in data]
    assert not missing, "counters missing from the JSON: %s" % missing
    assert all(isinstance(v, int) for v in data.values()), data
    assert data["allocations"] >= 1000 and data["frees"] >= 1000, data


@pytest.mark.parametrize("mode", ["strict", "protect"])
@pytest.mark.parametrize("path,errno", [("/dev/full", 28), ("/nonexistent/stats.json", 2)])
def test_stats_file_that_cannot_be_written_is_said(runner, mode, path, errno):
    """A statistics file on a full disk (/dev/full) was opened, its write failed, and nothing
    was said; one that cannot be created was said without why. Both say the errno now, and the
    program runs as under glibc."""
    res = runner.oscar("stats_1000_mallocs", env={"OSCAR_MODE": mode, "OSCAR_STATS_FILE": path})
    assert res.returncode == 0, res.describe()
    assert res.oscar_lines() == ["oscar: warning: cannot write OSCAR_STATS_FILE %s: errno %d"
                                 % (path, errno)], res.describe()
    assert res.stdout == runner.glibc("stats_1000_mallocs").stdout


def test_misspelt_setting_warns(runner):
    """A name that looks like a setting but is not one is reported, never silently ignored."""
    expected = runner.glibc("api_realloc")
    res = runner.oscar("api_realloc", env={"OSCAR_STAT": "1"})
    assert res.oscar_lines() == [
        "oscar: warning: OSCAR_STAT is not an oscar setting (ignored; `oscar --help` lists them)"
    ], res.describe()
    assert res.returncode == 0 and res.stdout == expected.stdout, res.describe()


def test_string_settings_survive_a_process_title(runner, tmp_path):
    """redis and nginx overwrite the environment's memory to set their process title; the
    statistics file named by OSCAR_STATS_FILE must still be written at exit."""
    import json
    out = tmp_path / "stats.json"
    res = runner.oscar("overwrite_environ", env={"OSCAR_STATS_FILE": str(out)})
    assert res.returncode == 0 and "environment overwritten" in res.stdout, res.describe()
    assert not res.oscar_lines(), res.describe()
    assert json.loads(out.read_text())["allocations"] >= 1


def test_every_counter_is_documented():
    """docs/interfaces.md's counter list names every row of src/base/stats.def."""
    import re
    from conftest import REPO, documented_counters
    table = (REPO / "src" / "base" / "stats.def").read_text()
    names = re.findall(r'^STAT\(\w+, "([a-z_0-9]+)"\)', table, re.M)
    assert len(names) > 40
    missing = sorted(set(names) - set(documented_counters()))
    assert not missing, f"counters missing from docs/interfaces.md: {missing}"
