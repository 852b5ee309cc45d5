"""src/ keeps its layer rule (src/README.md): no include points up, no include cycle, no
function declared in one layer and defined in a higher one. tools/layers.py does the reading."""
import subprocess
import sys

from conftest import REPO


def test_layer_rule_holds():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "layers.py")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    assert "arrows up: 0" in proc.stdout
    assert "include cycles between files: 0" in proc.stdout


def test_checker_catches_an_arrow_up(tmp_path):
    """The checker is not vacuous: a copy of src/ with one upward include fails it."""
    import shutil
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "src", copy / "src")
    shutil.copytree(REPO / "tools", copy / "tools")
    region = copy / "src" / "mem" / "region.c"
    region.write_text('#include "export/fork.h"\n' + region.read_text())
    proc = subprocess.run([sys.executable, str(copy / "tools" / "layers.py")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 1
    assert "src/mem/region.c -> src/export/fork.h" in proc.stdout
