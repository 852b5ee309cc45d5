"""Servers under load: one run starts a server under the allocator being measured (LD_PRELOAD
and the allocator's settings, like every other workload), drives it from its own load tool
(not preloaded) for a fixed duration or request count, then shuts it down cleanly.

The figure is throughput, requests per second as the load tool reports it; memory is the
server's process tree (workers included) sampled with the same formula as every other
workload (measure.sample_tree), page faults are the server's (wait4, reaped workers included),
and Oscar's counters come from the server's OSCAR_STATS_FILE files (one per process).

Statuses: "ok"; the server's own exit ("crash: SIGSEGV", "exit 1") when it dies or does not
exit cleanly; "timeout" (the run took longer than --timeout); "no listen" (the server never
accepted a connection); "stop timeout" (it did not exit within STOP_TIMEOUT of the stop
signal); "load failed" (the load tool exited non-zero or printed no figure); "load errors"
(the load tool saw errors: wrong values, non-2xx responses, socket errors).

The servers' settings (ports, nginx with a master and 2 workers, memcached with 4 threads,
memaslap's 95% gets) follow tests/test_servers.py, their correctness tests.
"""

import dataclasses
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import measure

START_TIMEOUT = 15.0   # seconds for a server to accept its first connection
STOP_TIMEOUT = 15.0    # seconds for it to exit after its stop signal


class LoadError(Exception):
    """The load tool ran but reported errors."""


@dataclasses.dataclass
class Server:
    argv: list          # the server, under the allocator; "{port}" and "{dir}" are substituted
    load: list          # the load tool, not preloaded; same substitutions
    parse: object       # load tool's stdout + stderr -> (requests/s, summary); raises LoadError
    files: dict = dataclasses.field(default_factory=dict)  # path in {dir} -> text (substituted)
    stop_signal: int = signal.SIGTERM


def which(exe):
    """shutil.which, also looking in the sbin directories (nginx lives in /usr/sbin)."""
    if os.path.isabs(exe):
        return exe if os.path.exists(exe) else None
    found = shutil.which(exe)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
        if os.access(os.path.join(d, exe), os.X_OK):
            return os.path.join(d, exe)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reap(pid):
    """(status, rusage) if the process has exited (and is now reaped), else None."""
    try:
        got, status, usage = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return (status, usage) if got else None


def _tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run(spec, env, load_env, timeout, oscar_stats=False):
    """Start spec's server with env, load it with load_env, stop it; a measure.RunResult with
    throughput set (None when the run failed)."""
    with tempfile.TemporaryDirectory(prefix="oscar-bench-server-") as tmp:
        env = dict(env)
        if oscar_stats:
            env["OSCAR_STATS_FILE"] = os.path.join(tmp, "oscar-%p.json")
        workdir = os.path.join(tmp, "server")
        os.mkdir(workdir)
        port = free_port()

        def subst(x):
            return str(x).format(port=port, dir=workdir)

        for rel, text in spec.files.items():
            path = os.path.join(workdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(subst(text))
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        status_text, throughput, summary, load_text = None, None, "", ""
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen([subst(a) for a in spec.argv], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, env=env, cwd=workdir,
                                    start_new_session=True)
            sampler = measure.TreeSampler(proc.pid, start, timeout)
            reaped = None
            try:
                # 1. Wait until it accepts connections (nginx: the master listens, workers accept).
                deadline = start + min(START_TIMEOUT, timeout)
                ready = False
                while not ready and time.monotonic() < deadline:
                    reaped = _reap(proc.pid)
                    if reaped:
                        break
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=1):
                            ready = True
                    except OSError:
                        time.sleep(0.02)
                if reaped:
                    pass  # exited at start: its exit status says how
                elif not ready:
                    status_text = "timeout" if sampler.timed_out.is_set() else "no listen"
                else:
                    # 2. The load, from a tool that is not preloaded.
                    remaining = max(1.0, timeout - (time.monotonic() - start))
                    try:
                        res = subprocess.run([subst(a) for a in spec.load], env=load_env,
                                             stdin=subprocess.DEVNULL, capture_output=True,
                                             text=True, errors="replace", cwd=workdir,
                                             timeout=remaining, start_new_session=True)
                    except subprocess.TimeoutExpired:
                        status_text = "timeout"
                    else:
                        load_text = res.stdout + res.stderr
                        reaped = _reap(proc.pid)
                        if reaped:
                            pass  # the server died under load
                        elif res.returncode != 0:
                            status_text = "load failed"
                            load_text += "\n%s: exit %d" % (os.path.basename(spec.load[0]),
                                                            res.returncode)
                        else:
                            try:
                                throughput, summary = spec.parse(load_text)
                            except LoadError as exc:
                                status_text = "load errors"
                                load_text += "\n%s: %s" % (os.path.basename(spec.load[0]), exc)
            finally:
                # 3. Stop it cleanly, and wait for it (and reap it: wait4 gives its faults).
                if not reaped:
                    try:
                        os.kill(proc.pid, spec.stop_signal)
                    except ProcessLookupError:
                        pass
                    stop_deadline = time.monotonic() + STOP_TIMEOUT
                    while not reaped and time.monotonic() < stop_deadline:
                        reaped = _reap(proc.pid)
                        if not reaped:
                            time.sleep(0.02)
                    if not reaped:
                        if status_text is None:
                            status_text = "stop timeout"
                        try:
                            os.killpg(proc.pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                        _, status, usage = os.wait4(proc.pid, 0)
                        reaped = (status, usage)
                seconds = time.monotonic() - start
                status, usage = reaped
                proc.returncode = os.waitstatus_to_exitcode(status)  # we reaped it, not Popen
                sampler.stop()
                try:  # workers left behind
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if sampler.timed_out.is_set():
            status_text = "timeout"
        elif status_text is None:
            status_text = measure.describe_status(status)
        if status_text != "ok":
            throughput = None
        err_tail = _tail(err_path)
        if load_text and status_text.startswith("load"):
            err_tail += "\n" + load_text.strip()[-1500:]
        return measure.RunResult(
            status=status_text, seconds=seconds, peak_bytes=sampler.peak[0],
            rss_bytes=sampler.peak[1], faults=usage.ru_minflt + usage.ru_majflt,
            stdout_sha=hashlib.sha256(summary.encode()).hexdigest(),
            stdout_head=load_text[:4096], stderr_tail=err_tail,
            oscar=measure._oscar_counters(tmp) if oscar_stats else {},
            throughput=throughput)


# ---- the load tools' reports -----------------------------------------------------------------

def parse_redis_benchmark(text):
    """redis-benchmark --csv: one "TEST","rps",... line per test, each test the same request
    count, so the throughput of the whole run is tests / sum(1/rps)."""
    rps = {m.group(1): float(m.group(2))
           for m in re.finditer(r'^"([^"]+)","([\d.]+)"', text, re.M)}
    bad = re.search(r"^.*\b(error|ERR)\b.*$", text, re.M | re.I)
    if bad:
        raise LoadError(bad.group(0).strip()[:160])
    if not rps or min(rps.values()) <= 0:
        raise LoadError("no requests-per-second figures in its output")
    return len(rps) / sum(1.0 / v for v in rps.values()), "tests " + ",".join(sorted(rps))


def parse_memaslap(text):
    """memcaslap: "Run time: 5.0s Ops: 122377 TPS: 61182 ..." (the last such line is the
    whole run); verify_failed counts values that came back wrong."""
    runs = re.findall(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", text)
    if not runs:
        raise LoadError("no 'Run time: ... Ops: ... TPS:' line in its output")
    failed = [l.strip() for l in text.splitlines()
              if re.search(r"(verify_failed|failed|error)\S*\s*:?\s*[1-9]", l, re.I)]
    if failed:
        raise LoadError("; ".join(failed)[:160])
    secs, ops, tps = float(runs[-1][0]), int(runs[-1][1]), float(runs[-1][2])
    if ops == 0:
        raise LoadError("no operations completed")
    return (ops / secs if secs > 0 else tps), "memaslap ok"


def parse_wrk(text):
    """wrk: "Requests/sec: 12345.67"; non-2xx responses and socket errors are load errors."""
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    for pattern in (r"Non-2xx or 3xx responses: \d+", r"Socket errors: [^\n]*"):
        bad = re.search(pattern, text)
        if bad:
            raise LoadError(bad.group(0))
    if not m or float(m.group(1)) <= 0:
        raise LoadError("no 'Requests/sec:' line in its output")
    return float(m.group(1)), "wrk ok"


# ---- the servers -----------------------------------------------------------------------------

def redis(requests):
    """redis-server, redis-benchmark: `requests` requests for each of 7 commands, 20 clients,
    random keys out of 100,000, 64-byte values."""
    return Server(
        argv=[which("redis-server"), "--port", "{port}", "--bind", "127.0.0.1", "--dir", "{dir}",
              "--save", "", "--appendonly", "no", "--daemonize", "no",
              "--logfile", "{dir}/redis.log", "--protected-mode", "no"],
        load=[which("redis-benchmark"), "-h", "127.0.0.1", "-p", "{port}", "-n", str(requests),
              "-r", "100000", "-c", "20", "-d", "64", "-t", "set,get,incr,lpush,rpop,sadd,hset",
              "--csv"],
        parse=parse_redis_benchmark, stop_signal=signal.SIGTERM)


# memaslap's configuration: keys of 16-64 B, values of 32-2048 B, 5% sets and 95% gets
# (the Oscar paper's memcached workload is mostly gets with a few percent sets).
MEMASLAP_CONFIG = """\
key
16 64 1
value
32 2048 1
cmd
0 0.05
1 0.95
"""


def memcached(seconds):
    """memcached with 4 threads, 64 MiB; memcaslap for `seconds` s, 2 threads, 32 connections,
    10% of the gets verified."""
    return Server(
        argv=[which("memcached"), "-l", "127.0.0.1", "-p", "{port}", "-U", "0", "-t", "4",
              "-m", "64", "-c", "1024", "-u", "root"],
        load=[which("memcaslap"), "-s", "127.0.0.1:{port}", "-T", "2", "-c", "32",
              "-t", "%ds" % seconds, "-F", "{dir}/memaslap.cfg", "-v", "0.1"],
        parse=parse_memaslap, files={"memaslap.cfg": MEMASLAP_CONFIG.replace("{", "{{")},
        stop_signal=signal.SIGTERM)


NGINX_CONF = """\
user root;
daemon off;
master_process on;
worker_processes 2;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/www;
    }}
}}
"""

NGINX_PAGE = "".join("<p>line %d of the page nginx serves to wrk</p>\n" % i for i in range(50))


def nginx(seconds):
    """nginx, a master and 2 workers, serving a 2.3 KiB static page; wrk for `seconds` s,
    2 threads, 16 keep-alive connections. Stopped with SIGQUIT (graceful)."""
    return Server(
        argv=[which("nginx"), "-p", "{dir}", "-c", "{dir}/nginx.conf", "-e", "{dir}/error.log"],
        load=[which("wrk"), "-t", "2", "-c", "16", "-d", "%ds" % seconds,
              "http://127.0.0.1:{port}/index.html"],
        parse=parse_wrk, files={"nginx.conf": NGINX_CONF, "www/index.html": NGINX_PAGE},
        stop_signal=signal.SIGQUIT)
