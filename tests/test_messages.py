"""Every line Oscar prints about the program comes from one table, src/base/messages.def:
the README's and docs/interfaces.md's message tables are generated from it, and no file of
src/ spells out a message of its own."""
import re
import subprocess
import sys

from conftest import REPO


def test_docs_show_the_messages_table_as_it_is():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "messages.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout


def test_every_message_comes_from_the_table():
    table = (REPO / "src" / "base" / "messages.def").read_text()
    assert table.count("MESSAGE(") >= 15
    offenders = []
    for path in (REPO / "src").rglob("*"):
        if path.suffix not in (".c", ".h") or not path.is_file() or path.name == "messages.c":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith(("/*", "*", "//")):
                continue
            if re.search(r'"oscar: [a-z]', line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, ("messages spelled out outside src/base/messages.def (use msg_start):\n"
                           + "\n".join(offenders))


def test_a_report_starts_with_its_table_text():
    """msg_start is what reports print: the table's text for a double free is the report's."""
    table = (REPO / "src" / "base" / "messages.def").read_text()
    m = re.search(r'MESSAGE\(DOUBLE_FREE, REPORT, "([^"]+)"', table)
    assert m and m.group(1) == "double-free on address "
