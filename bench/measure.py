"""Running one command once and measuring it: wall time, peak memory, page faults, and
Oscar's own counters.

Memory, the same formula for every allocator (docs/benchmarks.md, "Memory"):
    sum over the process tree of  Pss_Anon + VmPTE + VMAs * VMA_BYTES
  + each distinct memfd open in the tree, counted once: its resident size (st_blocks * 512)
Oscar's shadows map the same memfd pages at many addresses; RSS (and Pss_Shmem) counts each
such page once per mapping, which is exactly the double counting the Oscar paper warns about.
The memfd's own allocated size counts each page once. Its peak is the largest sum seen by a
sampler thread that reads /proc every SAMPLE_SECONDS while the command runs.
"""

import dataclasses
import glob
import hashlib
import json
import os
import re
import statistics
import signal
import subprocess
import tempfile
import threading
import time

SAMPLE_SECONDS = 0.01
# sizeof(struct vm_area_struct) plus its maple-tree slot on x86-64 kernels, rounded: the
# kernel memory each mapping costs. Oscar's extra mappings are part of its overhead.
VMA_BYTES = 200


@dataclasses.dataclass
class RunResult:
    status: str                 # "ok", "crash: SIGSEGV", "exit 1", "timeout"
    seconds: float
    peak_bytes: int             # the formula above
    rss_bytes: int              # naive peak RSS (sum of VmHWM), for comparison only
    faults: int                 # minor + major page faults of the tree (reaped children included)
    stdout_sha: str
    stdout_head: str
    stderr_tail: str
    oscar: dict                 # Oscar counters summed over the tree's processes, or {}
    throughput: float = None    # servers only: requests per second the load tool measured
    p99_ms: float = None        # servers only: 99th percentile latency the load tool measured


def _read_kv(path):
    """'Key:   123 kB' lines -> {Key: bytes}."""
    values = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    values[key] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return values


def _children(pid):
    kids = []
    for path in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(path) as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return kids


def _tree(root):
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(_children(pid))
    return pids


def sample_tree(root):
    """(memory by the formula above, naive VmHWM sum) of the process tree rooted at `root`."""
    total = hwm = 0
    memfds = {}
    for pid in _tree(root):
        total += _read_kv("/proc/%d/smaps_rollup" % pid).get("Pss_Anon", 0)
        status = _read_kv("/proc/%d/status" % pid)
        total += status.get("VmPTE", 0)
        hwm += status.get("VmHWM", 0)  # peak RSS of the current image: counts aliases again
        try:
            with open("/proc/%d/maps" % pid, "rb") as f:
                total += f.read().count(b"\n") * VMA_BYTES
        except OSError:
            pass
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            fds = []
        for fd in fds:
            path = "/proc/%d/fd/%s" % (pid, fd)
            try:
                if os.readlink(path).startswith("/memfd:"):
                    st = os.stat(path)
                    memfds[(st.st_dev, st.st_ino)] = st.st_blocks * 512
            except OSError:
                pass
    return total + sum(memfds.values()), hwm


def _per_process(key):
    """Counters that describe one process (high-water marks, the longest or median stop of
    the world): merged over a process tree by taking the maximum, not the sum."""
    return key.startswith("peak_") or key.endswith("_max") or key.endswith("_median")


def _oscar_counters(stats_dir):
    """Sum the per-process JSON files (one per pid: fork and exec each start a file); the
    per-process figures (_per_process) take the maximum instead."""
    merged = {}
    for path in glob.glob(os.path.join(stats_dir, "oscar-*.json")):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        for key, val in data.items():
            if not isinstance(val, (int, float)) or isinstance(val, bool):
                continue
            if _per_process(key):
                merged[key] = max(merged.get(key, 0), val)
            else:
                merged[key] = merged.get(key, 0) + val
    return merged


MARKUS_PAUSE = re.compile(rb"World-stopped marking took (\d+) msecs")


def _markus_counters(stats_dir):
    """MarkUs (the Boehm collector) logs each stop of the world in milliseconds when
    GC_PRINT_STATS is set (allocators.MARKUS_LOG): the same names as Oscar's scan counters."""
    pauses = []
    for path in glob.glob(os.path.join(stats_dir, "markus-gc*.log")):
        try:
            with open(path, "rb") as f:
                pauses += [int(m.group(1)) * 1000 for m in MARKUS_PAUSE.finditer(f.read())]
        except OSError:
            pass
    if not pauses:
        return {}
    return {"scan_rounds": len(pauses), "scan_pause_us_max": max(pauses),
            "scan_pause_us_median": statistics.median(pauses)}


# Oscar's own warnings that a setting was not taken (src/base/options.c): a cell run with a
# mode the library does not know yet would otherwise measure the default mode under its name.
REJECTED_SETTING = re.compile(r"^oscar: warning: (OSCAR_\w+(?:=\S*)? is (?:invalid|not an oscar setting))",
                              re.M)


def rejected_setting(stderr_text):
    """'rejected: OSCAR_MODE=protect is invalid' if Oscar refused one of its settings."""
    m = REJECTED_SETTING.search(stderr_text)
    return "rejected: " + m.group(1) if m else None


def substitute_env(env, stats_dir):
    """{statsdir} in a setting's value becomes the run's private directory."""
    return {k: v.replace("{statsdir}", stats_dir) if isinstance(v, str) else v
            for k, v in env.items()}


def collect_counters(stats_dir, oscar_stats):
    counters = _oscar_counters(stats_dir) if oscar_stats else {}
    counters.update(_markus_counters(stats_dir))
    return counters


def _head_and_tail(path, n=2000):
    with open(path, "rb") as f:
        head = f.read(4096)
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - n))
        tail = f.read()
    return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace")


def count_syscalls(argv, env, preload, timeout, stdin=None, cwd=None):
    """Memory-management system calls (strace's %memory class: mmap, munmap, mremap,
    mprotect, madvise, brk, ...) the command and its threads and children make, for allocators
    that keep no counter of their own; None when strace is missing or the run failed. The
    preload is given to the traced program only (strace -E), never to strace itself."""
    import shutil
    if not shutil.which("strace"):
        return None
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    with tempfile.TemporaryDirectory(prefix="oscar-bench-strace-") as tmp:
        env = substitute_env(env, tmp)
        out = os.path.join(tmp, "strace.txt")
        cmd = ["strace", "-f", "-c", "-U", "calls,name", "-e", "trace=%memory", "-o", out]
        if preload:
            cmd += ["-E", "LD_PRELOAD=" + preload]
        try:
            with open(stdin or os.devnull, "rb") as inp:
                proc = subprocess.run(cmd + ["--"] + list(argv), stdin=inp,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env, cwd=cwd, timeout=timeout, start_new_session=True)
        except (subprocess.TimeoutExpired, OSError):
            return None
        if proc.returncode != 0:
            return None
        try:
            with open(out) as f:
                text = f.read()
        except OSError:
            return None
    m = re.search(r"^\s*(\d+)\s+total\s*$", text, re.M)
    return int(m.group(1)) if m else None


class TreeSampler:
    """A thread that samples the process tree rooted at `pid` (sample_tree) until stop(),
    keeping the peaks in peak = [formula, VmHWM sum]; it kills the tree's process group once
    `timeout` seconds have passed since `start` and sets timed_out."""

    def __init__(self, pid, start, timeout):
        self.pid, self.start, self.timeout = pid, start, timeout
        self.peak = [0, 0]
        self.timed_out = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        interval = 0.001  # ramp up to SAMPLE_SECONDS: short runs still get samples
        while not self.done.is_set():
            t0 = time.monotonic()
            mem, hwm = sample_tree(self.pid)
            self.peak[0], self.peak[1] = max(self.peak[0], mem), max(self.peak[1], hwm)
            cost = time.monotonic() - t0
            if t0 - self.start > self.timeout:
                self.timed_out.set()
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return
            # Reading /proc of a process with 60k mappings takes milliseconds and holds
            # its mmap lock: back off so the measurement does not become the workload.
            self.done.wait(max(interval, 4 * cost))
            interval = min(SAMPLE_SECONDS, interval * 2)

    def stop(self):
        self.done.set()
        self.thread.join()


def describe_status(status):
    if os.WIFSIGNALED(status):
        try:
            return "crash: " + signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            return "crash: signal %d" % os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    return "ok" if code == 0 else "exit %d" % code


def run(argv, env, timeout, stdin=None, cwd=None, oscar_stats=False, digest=None):
    """Run argv once (no shell) in its own session and measure it. stdout_sha hashes the
    whole stdout, or digest(stdout bytes) when given (for programs that print timings)."""
    with tempfile.TemporaryDirectory(prefix="oscar-bench-") as tmp:
        env = substitute_env(env, tmp)
        if oscar_stats:
            env["OSCAR_STATS_FILE"] = os.path.join(tmp, "oscar-%p.json")
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        with open(out_path, "wb") as out, open(err_path, "wb") as err, \
                open(stdin or os.devnull, "rb") as inp:
            start = time.monotonic()
            proc = subprocess.Popen(argv, stdin=inp, stdout=out, stderr=err, env=env, cwd=cwd,
                                    start_new_session=True)
            sampler = TreeSampler(proc.pid, start, timeout)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.monotonic() - start
            proc.returncode = os.waitstatus_to_exitcode(status)  # we reaped it, not Popen
            sampler.stop()
            try:  # anything the command left running in its session
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        sha = hashlib.sha256()
        with open(out_path, "rb") as f:
            head = f.read(4096)
            if digest:
                sha.update(digest(head + f.read()))
            else:
                sha.update(head)
                for block in iter(lambda: f.read(1 << 20), b""):
                    sha.update(block)
        err_head, err_tail = _head_and_tail(err_path)
        status_text = "timeout" if sampler.timed_out.is_set() else describe_status(status)
        if oscar_stats and status_text == "ok":
            status_text = rejected_setting(err_head + err_tail) or status_text
        return RunResult(status=status_text, seconds=seconds, peak_bytes=sampler.peak[0],
                         rss_bytes=sampler.peak[1],
                         faults=usage.ru_minflt + usage.ru_majflt,
                         stdout_sha=sha.hexdigest(),
                         stdout_head=head.decode("utf-8", "replace"),
                         stderr_tail=err_tail,
                         oscar=collect_counters(tmp, oscar_stats))
