"""SQLite's own test suite, built from Debian's sources with `oscar cc` (issue 21's proof on real
code; docs/shadow-stacks.md, "Proof on real code").

testfixture (SQLite's Tcl test harness) is built three times from `apt-get source sqlite3` by
bench/shadowstack/build-sqlite-testfixture.sh: plainly, with `oscar cc --mode=check` and with
`--mode=overwrite`; a list of the suite's test files runs under each, and the instrumented
builds must fail exactly the tests the plain build fails (none, on this machine) and run as many.
Long (each build takes 5-12 minutes on a loaded two-core machine), so never in CI: skipped
unless OSCAR_PSS_SQLITE_SRC names the source folder:

    OSCAR_PSS_SQLITE_SRC=$PWD/sqlite3-3.40.1 OSCAR_PSS_SQLITE_WORK=/tmp/pss-sqlite \
        python3 -m pytest tests/test_shadowstack_sqlite.py -q -p no:cacheprovider

OSCAR_PSS_SQLITE_WORK (default: a folder next to the sources) keeps the builds: a build whose
testfixture is there is reused. OSCAR_PSS_SQLITE_TESTS="a.test b.test" runs other files.
"""

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build").resolve()
DRIVER = BUILD / "shadowstack" / "oscar-cc"
SCRIPT = REPO / "bench" / "shadowstack" / "build-sqlite-testfixture.sh"
SRC = os.environ.get("OSCAR_PSS_SQLITE_SRC")

# Core SQL, the B-tree, pager, WAL and journal, savepoints, triggers, views, CTEs, window
# functions, JSON, FTS3/4/5, R-tree, ALTER, ATTACH, VACUUM, collations, printf, dates, the
# session extension, threads, and SQLite's own malloc-failure and I/O-error injection (every
# failure path unwinds through instrumented frames). Left out for time: trans, trans2, wal3,
# rtree2 (40-110 s each here); attach stops early when run as root. About 70 s with two jobs.
TESTS = """
select1 select2 select3 select4 select5 select6 select7 select8 select9 selectA selectB
insert insert2 insert3 insert4 update delete delete2 where where2 where3 where7 whereA
join join2 join3 join5 subquery subquery2 expr func func2 func3 index index2 index3 table
view trigger1 trigger2 trigger3 trigger4 trigger5 with1 with2 window1 window2 window3
json101 json102 upsert1 orderby1 limit distinct collate1 collate2 like like2 printf date
alter alter2 attach2 analyze vacuum vacuum2 autoinc savepoint wal wal2 pager1 journal1 lock lock2 misc1 misc2 misc3 misc5 fts3aa fts3ab fts3ac fts3ad fts4aa
fts3expr fts3query fkey1 fkey2 types types2 blob e_select e_insert e_update e_delete
thread1 thread2 mallocA malloc3 ioerr2 incrblob incrblob2 bigrow
""".split()
EXT_TESTS = {"rtree1": "ext/rtree/rtree1.test",
             "fts5aa": "ext/fts5/test/fts5aa.test", "fts5ab": "ext/fts5/test/fts5ab.test",
             "session1": "ext/session/session1.test"}

pytestmark = [
    pytest.mark.skipif(not SRC, reason="set OSCAR_PSS_SQLITE_SRC to `apt-get source sqlite3`'s "
                       "folder (long: three testfixture builds; docs/shadow-stacks.md)"),
    pytest.mark.skipif(not shutil.which("tclsh"), reason="tcl-dev is not installed"),
]


def _work():
    return Path(os.environ.get("OSCAR_PSS_SQLITE_WORK") or
                Path(SRC).resolve().parent / "oscar-pss-testfixture")


def _testfixture(how):
    """testfixture built plainly or with oscar cc in mode `how` (reused if there)."""
    folder = _work() / how
    fixture = folder / "testfixture"
    if fixture.exists():
        return fixture
    if not DRIVER.exists():
        pytest.skip("oscar cc is not built (%s)" % DRIVER)
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(SRC, folder, symlinks=True)
    cc = "gcc" if how == "plain" else "%s --mode=%s -- gcc" % (DRIVER, how)
    proc = subprocess.run(["sh", str(SCRIPT), str(folder), cc])
    assert proc.returncode == 0 and fixture.exists(), "build failed: see %s/build.log" % folder
    return fixture


RESULT = re.compile(r"^(\d+) errors out of (\d+) tests", re.M)


def _run_one(fixture, test):
    """(errors, tests, failed test names, exit status) of one test file, in a fresh folder."""
    path = Path(fixture).parent / EXT_TESTS.get(test, "test/%s.test" % test)
    with tempfile.TemporaryDirectory(prefix="pss-sqlite-") as cwd:
        proc = subprocess.run([str(fixture), str(path)], cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace",
                              timeout=1200)
    m = RESULT.search(proc.stdout)
    failed = set()
    for line in proc.stdout.splitlines():
        if line.startswith("!Failures on these tests:"):
            failed = set(line.split(":", 1)[1].split())
    if m is None:
        return (None, None, {"(no summary: %s)" % proc.stdout[-300:]}, proc.returncode)
    return (int(m.group(1)), int(m.group(2)), failed, proc.returncode)


def _run_all(fixture, tests):
    with ThreadPoolExecutor(max_workers=int(os.environ.get("OSCAR_PSS_SQLITE_JOBS") or 2)) as ex:
        return dict(zip(tests, ex.map(lambda t: _run_one(fixture, t), tests)))


@pytest.fixture(scope="module")
def plain_results():
    tests = os.environ.get("OSCAR_PSS_SQLITE_TESTS", "").split() or TESTS + list(EXT_TESTS)
    return tests, _run_all(_testfixture("plain"), tests)


@pytest.mark.parametrize("how", ["check", "overwrite"])
def test_sqlite_suite_same_results_as_plain(plain_results, how):
    tests, plain = plain_results
    ours = _run_all(_testfixture(how), tests)
    total = sum(r[1] or 0 for r in ours.values())
    summary = "%s: %d files, %d tests, %d errors (plain: %d tests, %d errors)" % (
        how, len(tests), total, sum(r[0] or 0 for r in ours.values()),
        sum(r[1] or 0 for r in plain.values()), sum(r[0] or 0 for r in plain.values()))
    print(summary)
    differ = {t: (plain[t], ours[t]) for t in tests
              if (ours[t][0], ours[t][2], ours[t][3]) != (plain[t][0], plain[t][2], plain[t][3])}
    assert not differ, (summary, differ)
    assert total > 0
