"""memcached's slab allocator on the custom-allocator API (examples/memcached/, the paper's
case; docs/custom-allocators.md, "memcached").

Builds Debian 12's memcached with examples/memcached/oscar-slabs.patch once (build.sh, cached
in <build>/memcached-oscar; the first build takes ~30 s) and checks that values round-trip
through the patched server under Oscar, where every item is a view of its slab chunk, and in
pass-through mode, and that the server prints no `oscar:` line. Skips (with the reason) when
the memcached source (`apt-get source memcached`: needs a deb-src line for bookworm) or the
build dependencies (gcc, make, pkg-config, libevent-dev) are unavailable.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import BUILD, LIB, REPO

EXAMPLE = REPO / "examples" / "memcached"
WORK = BUILD / "memcached-oscar"
NKEYS = 4000


@pytest.fixture(scope="module")
def patched(build):
    if not build.lib_ok:
        pytest.fail("liboscar.so was not built\n" + build.log[-3000:])
    missing = [t for t in ("apt-get", "gcc", "make", "pkg-config", "patch", "dpkg-source")
               if shutil.which(t) is None]
    if missing:
        pytest.skip("build tools missing: %s (Debian packages gcc make pkg-config patch dpkg-dev)"
                    % ", ".join(missing))
    if subprocess.run(["pkg-config", "--exists", "libevent"]).returncode != 0:
        pytest.skip("libevent-dev is not installed (needed to build memcached)")
    res = subprocess.run([str(EXAMPLE / "build.sh"), str(WORK)], capture_output=True, text=True,
                         env=dict(os.environ, OSCAR_BUILD_DIR=str(BUILD)), timeout=600)
    if res.returncode == 2:
        last = ([l for l in res.stderr.splitlines() if l.strip()] or [""])[-1].strip()
        pytest.skip("memcached source unavailable (apt-get source memcached; add "
                    "'deb-src http://deb.debian.org/debian bookworm main'): " + last)
    assert res.returncode == 0, "build.sh failed\n" + res.stderr[-4000:]
    binary = res.stdout.strip().splitlines()[-1]
    assert os.access(binary, os.X_OK), binary
    return binary


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, oscar, tmp_path):
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OSCAR_", "LD_PRELOAD"))}
        if oscar:
            env["LD_PRELOAD"] = str(LIB)
        argv = [binary, "-p", str(self.port), "-U", "0", "-l", "127.0.0.1", "-m", "256", "-t", "2"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        self.log = tmp_path / ("server-%s.log" % ("oscar" if oscar else "plain"))
        self.proc = subprocess.Popen(argv, env=env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise AssertionError("memcached did not start:\n" + self.log.read_text())
                time.sleep(0.05)

    def mappings(self):
        with open("/proc/%d/maps" % self.proc.pid) as f:
            return sum(1 for _ in f)

    def client(self, nkeys, prefix):
        return subprocess.run([sys.executable, str(EXAMPLE / "mcclient.py"), str(self.port), str(nkeys),
                               "--prefix", prefix], capture_output=True, text=True, timeout=120)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.log.read_text()


@pytest.fixture
def server(patched, tmp_path):
    started = []

    def start(oscar):
        s = Server(patched, oscar, tmp_path)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def assert_no_oscar_lines(output):
    lines = [l for l in output.splitlines() if "oscar:" in l]
    assert not lines, "the server printed oscar lines:\n" + output[-4000:]


def test_values_round_trip_with_items_as_views(server):
    srv = server(oscar=True)
    before = srv.mappings()
    res = srv.client(NKEYS, "a")
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr
    # The stats line the patch adds: Oscar is active and no item went out without a view.
    assert "oscar_views=yes oscar_unprotected_items=0" in res.stdout, res.stdout
    # Every live item is a view, i.e. a kernel mapping of its own (~0.8 * NKEYS stay live).
    assert srv.mappings() - before > NKEYS // 2, (before, srv.mappings())
    # A second client generation overwrites and deletes keys of the first (revokes views).
    res = srv.client(NKEYS, "a")
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr
    assert_no_oscar_lines(srv.stop())


def test_values_round_trip_in_pass_through(server):
    srv = server(oscar=False)
    res = srv.client(NKEYS, "p")
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr
    assert "oscar_views=no oscar_unprotected_items=0" in res.stdout, res.stdout
    assert_no_oscar_lines(srv.stop())


@pytest.mark.skipif(shutil.which("memcaslap") is None,
                    reason="memcaslap is not installed (Debian package libmemcached-tools)")
def test_concurrent_load_with_verification_under_oscar(server):
    srv = server(oscar=True)
    cfg = srv.log.parent / "memcaslap.cfg"
    cfg.write_text("key\n16 64 1\nvalue\n64 1024 1\ncmd\n0 0.1\n1 0.9\n")
    load = subprocess.run(["memcaslap", "-s", "127.0.0.1:%d" % srv.port, "-T", "1", "-c", "16", "-w", "1k",
                           "-t", "4s", "-v", "0.1", "-F", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert load.returncode == 0, load.stdout + load.stderr
    out = load.stdout + load.stderr
    assert re.search(r"TPS: [1-9]", out), out
    # memcaslap compared a tenth of the values it read with what it had written.
    assert re.search(r"^verify_failed: 0$", out, re.M), out
    assert re.search(r"^verify_misses: 0$", out, re.M), out
    res = srv.client(2000, "l")
    assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr
    assert_no_oscar_lines(srv.stop())
