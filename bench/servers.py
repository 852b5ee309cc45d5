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

This module is also the server harness of tests/test_servers.py (the servers' correctness
tests): ServerProcess (start, wait for the port, stop, kill, describe), run_tool, free_port,
which, the servers' and load tools' command lines and configurations. Change them here once.
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


def run_tool(argv, env, timeout, cwd=None):
    """A load tool (or client), not preloaded, in its own session: a CompletedProcess with
    text output; raises subprocess.TimeoutExpired."""
    return subprocess.run([str(a) for a in argv], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace", cwd=cwd,
                          timeout=timeout, start_new_session=True)


def _tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


class ServerProcess:
    """One server process, the one lifecycle both bench/run.py and tests/test_servers.py use:
    started in its own session (its workers share its process group) with stdout and stderr in
    files of workdir; wait_port() until it accepts connections; stop() with its stop signal,
    then the whole process group is killed. It is reaped with wait4, so `status` and `usage`
    (page faults of the server and its reaped workers) are there once it has exited."""

    def __init__(self, argv, env, workdir, name="server"):
        self.argv = [str(a) for a in argv]
        self.workdir, self.name = str(workdir), name
        self.out = os.path.join(self.workdir, name + ".stdout")
        self.err = os.path.join(self.workdir, name + ".stderr")
        self.status = self.usage = None
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.start = time.monotonic()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, env=env, cwd=self.workdir,
                                         start_new_session=True)
        self.pid = self.proc.pid

    def exited(self):
        """True once the server has exited (it is then reaped)."""
        if self.status is None:
            try:
                got, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if got:
                self.status, self.usage = status, usage
                self.proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        return self.status is not None

    @property
    def returncode(self):
        return None if self.status is None else os.waitstatus_to_exitcode(self.status)

    def wait_port(self, port, timeout=START_TIMEOUT):
        """"ok" once 127.0.0.1:port accepts a connection (nginx: the master listens, workers
        accept), "exited" if the server exited first, "no listen" after timeout seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exited():
                return "exited"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return "ok"
            except OSError:
                time.sleep(0.02)
        return "no listen"

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Send the stop signal and wait up to timeout for the server to exit; then kill its
        process group (workers left behind). True if it exited by itself."""
        if not self.exited():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + timeout
            while not self.exited() and time.monotonic() < deadline:
                time.sleep(0.02)
        by_itself = self.exited()
        self.kill()
        return by_itself

    def kill(self):
        """SIGKILL to the process group, and reap the server."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.status is None:
            try:
                _, self.status, self.usage = os.wait4(self.pid, 0)
                self.proc.returncode = os.waitstatus_to_exitcode(self.status)
            except ChildProcessError:
                pass

    def stderr_text(self):
        try:
            with open(self.err, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def describe(self, *logs):
        """The command, its exit status and the tails of its output and logs (for failures)."""
        text = "%s: %s\nreturncode %s\n" % (self.name, " ".join(self.argv), self.returncode)
        for path in (self.out, self.err) + tuple(str(l) for l in logs):
            if os.path.exists(path):
                text += "--- %s (tail):\n%s\n" % (os.path.basename(path), _tail(path, 3000))
        return text


def run(spec, env, load_env, timeout, oscar_stats=False):
    """Start spec's server with env, load it with load_env, stop it; a measure.RunResult with
    throughput set (None when the run failed)."""
    with tempfile.TemporaryDirectory(prefix="oscar-bench-server-") as tmp:
        env = measure.substitute_env(env, tmp)
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
        status_text, throughput, p99, summary, load_text = None, None, None, "", ""
        server = ServerProcess([subst(a) for a in spec.argv], env, workdir)
        start = server.start
        sampler = measure.TreeSampler(server.pid, start, timeout)
        try:
            # 1. Wait until it accepts connections.
            listening = server.wait_port(port, min(START_TIMEOUT, timeout))
            if listening == "exited":
                pass  # exited at start: its exit status says how
            elif listening != "ok":
                status_text = "timeout" if sampler.timed_out.is_set() else "no listen"
            else:
                # 2. The load, from a tool that is not preloaded.
                remaining = max(1.0, timeout - (time.monotonic() - start))
                try:
                    res = run_tool([subst(a) for a in spec.load], load_env, remaining, workdir)
                except subprocess.TimeoutExpired:
                    status_text = "timeout"
                else:
                    load_text = res.stdout + res.stderr
                    if server.exited():
                        pass  # the server died under load
                    elif res.returncode != 0:
                        status_text = "load failed"
                        load_text += "\n%s: exit %d" % (os.path.basename(spec.load[0]),
                                                        res.returncode)
                    else:
                        try:
                            throughput, summary, p99 = spec.parse(load_text)
                        except LoadError as exc:
                            status_text = "load errors"
                            load_text += "\n%s: %s" % (os.path.basename(spec.load[0]), exc)
        finally:
            # 3. Stop it cleanly, and wait for it (wait4 gives its faults).
            if not server.stop(spec.stop_signal) and status_text is None:
                status_text = "stop timeout"
            seconds = time.monotonic() - start
            sampler.stop()
        if sampler.timed_out.is_set():
            status_text = "timeout"
        elif status_text is None:
            status_text = measure.describe_status(server.status)
        err_head, err_tail = measure._head_and_tail(server.err)
        if oscar_stats and status_text == "ok":
            status_text = measure.rejected_setting(err_head + err_tail) or status_text
        if status_text != "ok":
            throughput = p99 = None
        if load_text and status_text.startswith("load"):
            err_tail += "\n" + load_text.strip()[-1500:]
        usage = server.usage
        return measure.RunResult(
            status=status_text, seconds=seconds, peak_bytes=sampler.peak[0],
            rss_bytes=sampler.peak[1],
            faults=(usage.ru_minflt + usage.ru_majflt) if usage else 0,
            stdout_sha=hashlib.sha256(summary.encode()).hexdigest(),
            stdout_head=load_text[:4096], stderr_tail=err_tail,
            oscar=measure.collect_counters(tmp, oscar_stats),
            throughput=throughput, p99_ms=p99)


# ---- the load tools' reports -----------------------------------------------------------------
# Each parser: the load tool's stdout + stderr -> (requests/s, summary compared with glibc's,
# p99 latency in ms or None); raises LoadError.

def parse_redis_benchmark(text):
    """redis-benchmark --csv: one "TEST","rps","avg_latency_ms",...,"p99_latency_ms",... line
    per test, each test the same request count, so the throughput of the whole run is
    tests / sum(1/rps); the p99 is the highest of the tests' p99s (the slowest command)."""
    header = re.search(r'^"test","rps",(.*)$', text, re.M)
    columns = [c.strip('"') for c in header.group(1).split(",")] if header else []
    rps, p99s = {}, []
    for m in re.finditer(r'^"([^"]+)","([\d.]+)"((?:,"[\d.]+")*)', text, re.M):
        rps[m.group(1)] = float(m.group(2))
        rest = [float(v.strip('"')) for v in m.group(3).split(",")[1:]]
        if "p99_latency_ms" in columns and len(rest) == len(columns):
            p99s.append(rest[columns.index("p99_latency_ms")])
    bad = re.search(r"^.*\b(error|ERR)\b.*$", text, re.M | re.I)
    if bad:
        raise LoadError(bad.group(0).strip()[:160])
    if not rps or min(rps.values()) <= 0:
        raise LoadError("no requests-per-second figures in its output")
    return (len(rps) / sum(1.0 / v for v in rps.values()), "tests " + ",".join(sorted(rps)),
            max(p99s) if p99s else None)


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
    return (ops / secs if secs > 0 else tps), "memaslap ok", None


WRK_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def parse_wrk(text):
    """wrk: "Requests/sec: 12345.67" and, with --latency, " 99%  3.21ms"; non-2xx responses
    and socket errors are load errors."""
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    for pattern in (r"Non-2xx or 3xx responses: \d+", r"Socket errors: [^\n]*"):
        bad = re.search(pattern, text)
        if bad:
            raise LoadError(bad.group(0))
    if not m or float(m.group(1)) <= 0:
        raise LoadError("no 'Requests/sec:' line in its output")
    p99 = re.search(r"^\s*99(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
    return (float(m.group(1)), "wrk ok",
            float(p99.group(1)) * WRK_UNITS[p99.group(2)] if p99 else None)


# ---- the servers' command lines (also tests/test_servers.py's) ------------------------------

def redis_server_argv(port, workdir, logfile, *extra):
    """redis-server on 127.0.0.1:port, no persistence unless `extra` asks, in the foreground."""
    return [which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
            "--dir", str(workdir), "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--logfile", str(logfile), "--protected-mode", "no"] + [str(e) for e in extra]


def memcached_argv(port):
    """memcached on 127.0.0.1:port (TCP only), 4 threads, 64 MiB, 1024 connections."""
    return [which("memcached"), "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "4",
            "-m", "64", "-c", "1024", "-u", "root"]


def memaslap_argv(port, seconds, config):
    """memcaslap: 2 threads, 32 connections, `seconds` s, 10% of the gets verified."""
    return [which("memcaslap"), "-s", "127.0.0.1:%s" % port, "-T", "2", "-c", "32",
            "-t", "%ss" % seconds, "-F", str(config), "-v", "0.1"]


def nginx_argv(workdir, conf, log):
    return [which("nginx"), "-p", str(workdir), "-c", str(conf), "-e", str(log)]


def wrk_argv(url, seconds, latency=True):
    """wrk: 2 threads, 16 keep-alive connections, `seconds` s (--latency: percentiles)."""
    return ([which("wrk"), "-t", "2", "-c", "16", "-d", "%ss" % seconds]
            + (["--latency"] if latency else []) + [url])


# ---- the servers -----------------------------------------------------------------------------

def redis(requests):
    """redis-server, redis-benchmark: `requests` requests for each of 7 commands, 20 clients,
    random keys out of 100,000, 64-byte values."""
    return Server(
        argv=redis_server_argv("{port}", "{dir}", "{dir}/redis.log"),
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
        argv=memcached_argv("{port}"),
        load=memaslap_argv("{port}", seconds, "{dir}/memaslap.cfg"),
        parse=parse_memaslap, files={"memaslap.cfg": MEMASLAP_CONFIG.replace("{", "{{")},
        stop_signal=signal.SIGTERM)


# nginx with a master and 2 workers, in the foreground, everything under {dir}; a gzip
# location for tests/test_servers.py. Format with dir= and port=.
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
        location /gz/ {{ gzip on; gzip_types text/plain application/octet-stream; gzip_min_length 1; }}
    }}
}}
"""

NGINX_PAGE = "".join("<p>line %d of the page nginx serves to wrk</p>\n" % i for i in range(50))


def nginx(seconds):
    """nginx, a master and 2 workers, serving a 2.3 KiB static page; wrk for `seconds` s,
    2 threads, 16 keep-alive connections. Stopped with SIGQUIT (graceful)."""
    return Server(
        argv=nginx_argv("{dir}", "{dir}/nginx.conf", "{dir}/error.log"),
        load=wrk_argv("http://127.0.0.1:{port}/index.html", seconds),
        parse=parse_wrk, files={"nginx.conf": NGINX_CONF, "www/index.html": NGINX_PAGE},
        stop_signal=signal.SIGQUIT)
