"""The Debian package: `cpack -G DEB` in a fresh build directory configured for /usr gives a
.deb with liboscar.so, the `oscar` command, oscar.h, the pkg-config file and the manual page
oscar(1), generated from the options table; the command in the package finds the package's
library. Skips, with the reason, where cmake/cpack or dpkg-deb is missing.

OSCAR_TEST_APT_INSTALL=1 (as root) also installs the .deb with apt, runs `oscar run` from
/usr/bin and opens `man oscar`, then removes the package."""

import gzip
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, run_process, _clean_env

OPTIONS_DEF = REPO / "src" / "base" / "options.def"
PREFIX = "/usr"
# A program that allocates (so that --stats prints) and shows what it preloads.
PRINT_PRELOAD = [sys.executable, "-c", "import os; print(os.environ['LD_PRELOAD'])"]


def need(tool, package):
    path = shutil.which(tool)
    if not path:
        pytest.skip("%s is not installed (Debian package %s)" % (tool, package))
    return path


def sh(argv, cwd=None, timeout=1200):
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)
    assert proc.returncode == 0, "$ %s\n%s" % (" ".join(map(str, argv)), proc.stdout[-6000:])
    return proc.stdout


def option_rows():
    rows = re.findall(r'OSCAR_OPTION\(\s*\w+,\s*"(OSCAR_\w+)",\s*(\w+),[^"]*?(NULL|"[^"]*"),',
                      OPTIONS_DEF.read_text())
    assert rows, "no rows in %s" % OPTIONS_DEF
    count = len(re.findall(r"^\s*OSCAR_OPTION\(", OPTIONS_DEF.read_text(), re.M))
    assert len(rows) == count, "%d of the %d rows of %s parsed here" % (len(rows), count, OPTIONS_DEF)
    return [(env, kind, None if ch == "NULL" else ch.strip('"').split("|")) for env, kind, ch in rows]


def flag(env):
    return "--" + env[len("OSCAR_"):].lower().replace("_", "-")


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """Configure, build and package in a temporary build directory (no tests, no benchmarks)."""
    cmake = need("cmake", "cmake")
    cpack = need("cpack", "cmake")
    need("dpkg-deb", "dpkg")
    build = tmp_path_factory.mktemp("deb-build")
    sh([cmake, "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        "-DCMAKE_INSTALL_PREFIX=" + PREFIX, "-DOSCAR_BUILD_TESTS=OFF", "-DOSCAR_BUILD_BENCH=OFF"])
    sh([cmake, "--build", build, "-j2"])
    sh([cpack, "-G", "DEB"], cwd=build)
    debs = sorted(build.glob("oscar_*.deb"))
    assert len(debs) == 1, "cpack made %s" % debs
    root = tmp_path_factory.mktemp("deb-root")
    sh(["dpkg-deb", "-x", debs[0], root])
    return debs[0], root


def contents(path):
    """Paths in the .deb (dpkg-deb -c), without the leading '.'."""
    out = sh(["dpkg-deb", "-c", path])
    return [line.split()[-1].lstrip(".") if " -> " not in line else line.split()[-3].lstrip(".")
            for line in out.splitlines()]


def test_deb_holds_library_command_header_pkgconfig_and_manpage(deb):
    path, _ = deb
    assert re.fullmatch(r"oscar_\d+\.\d+\.\d+_\w+\.deb", path.name), path.name
    files = contents(path)
    wanted = {
        "library": r"/usr/lib/(\w+-linux-gnu/)?liboscar\.so",
        "command": r"/usr/bin/oscar",
        "header": r"/usr/include/oscar\.h",
        "pkg-config file": r"/usr/lib/(\w+-linux-gnu/)?pkgconfig/oscar\.pc",
        "API library": r"/usr/lib/(\w+-linux-gnu/)?liboscar_api\.a",
        "manual page": r"/usr/share/man/man1/oscar\.1\.gz",
    }
    for what, pattern in wanted.items():
        assert any(re.fullmatch(pattern, f) for f in files), (
            "no %s (%s) in %s:\n%s" % (what, pattern, path.name, "\n".join(files)))
    # Nothing from the build tree or the tests.
    assert all(f.startswith("/usr/") or f == "/" for f in files), "\n".join(files)


def test_deb_control_fields(deb):
    path, _ = deb
    fields = dict(re.findall(r"^(\w[\w-]*): (.*)$", sh(["dpkg-deb", "-f", path]), re.M))
    version = re.search(r"project\(oscar VERSION (\S+)", (REPO / "CMakeLists.txt").read_text())
    assert fields.get("Package") == "oscar", fields
    assert fields.get("Version") == version.group(1), fields
    assert fields.get("Maintainer") and fields.get("Description"), fields
    assert "libc6" in fields.get("Depends", ""), fields


def test_packaged_command_finds_the_packaged_library(deb, tmp_path):
    """The command's built-in library path is where the package puts the library, and from the
    unpacked tree it finds the library next to it (../lib/...)."""
    path, root = deb
    lib = next(f for f in contents(path) if f.endswith("/liboscar.so"))
    cli = root / "usr" / "bin" / "oscar"
    assert lib.encode() in cli.read_bytes(), (
        "oscar does not look for the library at %s, where the package installs it" % lib)
    res = run_process([cli, "run", "--stats", "--"] + PRINT_PRELOAD,
                      env=_clean_env(None))
    assert res.returncode == 0, res.describe()
    assert res.stdout.strip() == os.path.realpath(root) + lib, res.describe()
    assert "oscar-stats: allocations" in res.stderr, "python did not run under oscar\n" + res.describe()


def manpage_text(source, tmp_path):
    """oscar(1) rendered as plain text by man or groff; None when neither is installed."""
    page = tmp_path / "oscar.1"
    page.write_text(source)
    env = dict(_clean_env(None), MANWIDTH="250", LC_ALL="C", MAN_KEEP_FORMATTING="0")
    if shutil.which("man"):
        res = run_process(["man", "-l", page], env=env)
        assert res.returncode == 0 and not res.stderr.strip(), res.describe()
        return re.sub(r".\x08", "", res.stdout)
    if shutil.which("groff"):
        res = run_process(["groff", "-man", "-Tascii", "-ww", "-rLL=250n", "-P-cbou", page],
                          env=env)
        assert res.returncode == 0 and not res.stderr.strip(), res.describe()
        return res.stdout
    return None


def plain_source(source):
    """The page's troff source as rough text (where neither man nor groff is installed)."""
    lines = []
    for line in source.splitlines():
        if line.startswith('.\\"'):
            continue
        m = re.match(r'\.SH "?(.*?)"?$', line)
        if m:
            lines.append(m.group(1))
            continue
        line = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-").replace("\\&", "")
        lines.append(re.sub(r"^\.\w+\s*", "", line))
    return "\n".join(lines).replace("\\e", "\\")


def manpage_source(deb):
    _, root = deb
    return gzip.decompress((root / "usr/share/man/man1/oscar.1.gz").read_bytes()).decode()


def test_manpage_renders_without_warnings(deb, tmp_path):
    if manpage_text(manpage_source(deb), tmp_path) is None:
        pytest.skip("neither man (man-db) nor groff is installed: the page is not rendered")


def test_manpage_is_generated_from_the_options_table(deb, tmp_path):
    source = manpage_source(deb)
    text = manpage_text(source, tmp_path) or plain_source(source)
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "MODES", "ENVIRONMENT",
                    "MESSAGES", "EXIT STATUS", "EXAMPLES", "FILES"):
        assert re.search(r"^%s$" % section, text, re.M), "no section %s\n%s" % (section, text)
    for env, kind, choices in option_rows():
        assert flag(env) in text, "the manual page lacks %s (%s)" % (flag(env), env)
        assert env in text, "the manual page lacks %s" % env
        if kind == "BOOL":
            assert "--no-" + flag(env)[2:] in text, env
        if choices:
            assert "%s=%s" % (flag(env), "|".join(choices)) in text, env
        modes = text[text.index("\nMODES"):text.index("\nENVIRONMENT")]
        for choice in choices if env == "OSCAR_MODE" else ():
            assert re.search(r"\b%s\b" % re.escape(choice), modes), (
                "MODES does not name %s\n%s" % (choice, modes))
    # The first lines of the reports, from docs/interfaces.md.
    for kind in ("heap-use-after-free", "double-free", "invalid-free", "wild-access"):
        assert "oscar: %s on address 0xADDR" % kind in text, kind
    assert "/usr/lib" in text.split("\nFILES")[1], "FILES does not name the installed library"
    # Every command `oscar --help` lists, and the frame format reports print (file:line).
    synopsis = text[text.index("\nSYNOPSIS"):text.index("\nDESCRIPTION")]
    for command in ("run", "options", "symbolize", "cc"):
        assert "oscar %s" % command in synopsis, "SYNOPSIS lacks oscar %s\n%s" % (command, synopsis)
    assert "#N 0xPC in FUNCTION FILE:LINE (MODULE+0xOFFSET)" in text, "no frame format"
    examples = text[text.index("\nEXAMPLES"):text.index("\nFILES")]
    assert re.search(r"#0 0x[0-9a-f]+ in \w+ \S+\.c:\d+ \(", examples), examples


@pytest.mark.skipif(os.environ.get("OSCAR_TEST_APT_INSTALL") != "1",
                    reason="installs the .deb system-wide: set OSCAR_TEST_APT_INSTALL=1 (root)")
def test_apt_install_then_run_and_man(deb, tmp_path):
    path, _ = deb
    apt = need("apt-get", "apt")
    if os.geteuid() != 0:
        pytest.skip("apt-get install needs root")
    if subprocess.run(["dpkg", "-s", "oscar"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        pytest.skip("a package named oscar is already installed; not replacing it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    proc = subprocess.run([apt, "install", "-y", str(path)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.returncode == 0, proc.stdout
        res = run_process(["/usr/bin/oscar", "run", "--stats", "--"] + PRINT_PRELOAD,
                          env=_clean_env(None), cwd=tmp_path)
        assert res.returncode == 0, res.describe()
        assert re.fullmatch(r"/usr/lib/(\w+-linux-gnu/)?liboscar\.so\n", res.stdout), res.describe()
        assert "oscar-stats: allocations" in res.stderr, res.describe()
        if shutil.which("man"):
            page = run_process(["man", "oscar"], env=dict(_clean_env(None), MANWIDTH="100"))
            assert page.returncode == 0 and "oscar run" in page.stdout, page.describe()
    finally:
        subprocess.run([apt, "remove", "-y", "oscar"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
