"""The README's quick start (issue 20, item 1): its first command, `build/cli/oscar run
build/examples/uaf_demo`, prints the report the README shows, line for line, up to addresses,
thread ids and where the checkout lives (the sample's /home/you/oscar). A `    ...` line of the
sample stands for the frames the reader's machine may add or lack (libc's, which have a name and
a file only with its debug symbols)."""

import re
import signal
from pathlib import Path

from conftest import BUILD, CLI, REPO

SAMPLE_HOME = "/home/you/oscar"


def readme_sample():
    """The block after 'dangling read dies with:' in README.md, as lines."""
    text = (REPO / "README.md").read_text()
    m = re.search(r"dangling read dies with:\n\n```\n(.*?)\n```", text, re.S)
    assert m, "README.md has no sample report after 'dangling read dies with:'"
    return m.group(1).splitlines()


def normalize(line, home):
    line = line.replace(home, "HOME")
    line = re.sub(r"0x[0-9a-f]+", "0xX", line)
    return re.sub(r"thread \d+", "thread N", line)


def test_readme_quick_start_report(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "run", BUILD / "examples" / "uaf_demo"])
    assert res.returncode == -signal.SIGSEGV, res.describe()
    got = res.stdout.splitlines() + res.stderr.splitlines()
    want = readme_sample()
    assert want[-1] == "Segmentation fault"  # (the shell's line, not the program's)
    i = 0
    for line in want[:-1]:
        if line == "    ...":
            while i < len(got) and got[i].startswith("    #"):
                i += 1
            continue
        assert i < len(got), "the report ends before the README's %r\n%s" % (line, res.describe())
        assert normalize(got[i], str(REPO)) == normalize(line, SAMPLE_HOME), (
            "README line %r, printed %r\n%s" % (line, got[i], res.describe()))
        i += 1
    assert i == len(got), "lines after the README's sample: %r" % got[i:]
