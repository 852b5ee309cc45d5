"""Turning the measured cells into results.csv, results.md and the PNG plots."""

import csv
import math
import os

COLUMNS = ["workload", "allocator", "status", "runs", "time_s", "time_ratio", "mem_mib",
           "mem_ratio", "rss_mib", "faults", "allocations", "syscalls_per_1k_allocs",
           "peak_mappings_per_1k_allocs", "peak_canonical_mib", "note",
           # servers (bench/servers.py): requests/s and its ratio to glibc (higher is better);
           # their rows leave time_ratio empty, since the load tool fixes the run time
           "throughput", "throughput_ratio", "p99_ms", "p99_ratio",
           # where syscalls_per_1k_allocs comes from for the other allocators (strace)
           "syscalls_source",
           # stops of the world (Oscar's protect mode counters, MarkUs's log)
           "scan_rounds", "scan_skipped", "scan_pause_us_median", "scan_pause_us_max",
           "scan_bytes", "scan_mib_per_round", "scan_gib_per_s", "scan_still_referenced",
           "peak_quarantined_bytes"]


def server_workloads(rows_list, workloads):
    """The workloads measured by throughput (kind "server"), in the given order."""
    kinds = {r["workload"] for r in rows_list if r.get("kind") == "server"}
    return [w for w in workloads if w in kinds]


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _fmt_csv(row.get(k)) for k in COLUMNS})


def _fmt_csv(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return "%.6g" % v
    return v


def _cell(row, key, digits=2):
    if row is None:
        return "skip"
    if row["status"] != "ok":
        return row["status"]
    v = row.get(key)
    if v is None:
        return "-"
    return "%.*f" % (digits, v)


def _geo_row(rows, allocators, workloads, key):
    out = []
    for a in allocators:
        vals = [rows[(w, a)][key] for w in workloads
                if (w, a) in rows and rows[(w, a)]["status"] == "ok" and rows[(w, a)].get(key)]
        g = geomean(vals)
        if g is None:
            out.append("-")
        elif len(vals) < len(workloads):
            out.append("%.2f (%d/%d)" % (g, len(vals), len(workloads)))
        else:
            out.append("%.2f" % g)
    return out


def markdown(rows_list, allocators, workloads, meta):
    rows = {(r["workload"], r["allocator"]): r for r in rows_list}
    served = server_workloads(rows_list, workloads)
    timed = [w for w in workloads if w not in served]
    lines = []
    for title, key, base_key, base_label, table_workloads in [
            ("Run time, ratio to glibc (lower is better)", "time_ratio", "time_s", "glibc s",
             timed),
            ("Throughput, ratio to glibc (higher is better)", "throughput_ratio", "throughput",
             "glibc req/s", served),
            ("Peak memory, ratio to glibc (formula in docs/benchmarks.md)", "mem_ratio",
             "mem_mib", "glibc MiB", workloads)]:
        if not table_workloads:
            continue
        workloads_here = table_workloads
        digits = 0 if base_key == "throughput" else 3
        lines.append("### " + title)
        lines.append("")
        lines.append("| workload | %s | %s |" % (base_label, " | ".join(allocators)))
        lines.append("|---|---:|%s" % ("---:|" * len(allocators)))
        for w in workloads_here:
            base = rows.get((w, "glibc"))
            cells = [_cell(rows.get((w, a)), key) for a in allocators]
            lines.append("| %s | %s | %s |" % (w, _cell(base, base_key, digits), " | ".join(cells)))
        lines.append("| **geomean** | | %s |"
                     % " | ".join(_geo_row(rows, allocators, workloads_here, key)))
        lines.append("")
    p99 = [w for w in served if any(rows.get((w, a), {}).get("p99_ms") is not None
                                    for a in allocators)]
    if p99:
        lines.append("### Servers: p99 latency, ratio to glibc (lower is better)")
        lines.append("")
        lines.append("| workload | glibc p99 ms | %s |" % " | ".join(allocators))
        lines.append("|---|---:|%s" % ("---:|" * len(allocators)))
        for w in p99:
            lines.append("| %s | %s | %s |" % (w, _cell(rows.get((w, "glibc")), "p99_ms", 2),
                                               " | ".join(_cell(rows.get((w, a)), "p99_ratio")
                                                          for a in allocators)))
        lines.append("")
    peers = [a for a in allocators
             if any(rows.get((w, a), {}).get("syscalls_source") for w in workloads)]
    if peers:
        counted = [a for a in allocators if any(rows.get((w, a), {}).get("syscalls_per_1k_allocs")
                                                is not None for w in workloads)]
        lines.append("### System calls per 1000 allocations")
        lines.append("")
        lines.append("Oscar: its own counter (every system call it makes). The others: the "
                     "memory-management calls (strace's %memory class: mmap, munmap, mremap, "
                     "mprotect, madvise, brk, ...) of one more, untimed run, program start "
                     "included, over the allocations the program (or an Oscar cell of the "
                     "same workload) counted.")
        lines.append("")
        lines.append("| workload | %s |" % " | ".join(counted))
        lines.append("|---|%s" % ("---:|" * len(counted)))
        for w in timed:
            lines.append("| %s | %s |" % (w, " | ".join(
                _cell(rows.get((w, a)), "syscalls_per_1k_allocs", 2) for a in counted)))
        lines.append("")
    scanned = [a for a in allocators if any(rows.get((w, a), {}).get("scan_rounds")
                                            for w in workloads)]
    if scanned:
        lines.append("### Stops of the world (marks): count, median and max ms, MiB scanned per "
                     "mark, GiB marked per second of marking")
        lines.append("")
        lines.append("| workload | %s |" % " | ".join(scanned))
        lines.append("|---|%s" % ("---:|" * len(scanned)))
        for w in workloads:
            cells = []
            for a in scanned:
                r = rows.get((w, a))
                if r is None or r["status"] != "ok" or r.get("scan_rounds") is None:
                    cells.append(_cell(r, "scan_rounds", 0) if r is None or r["status"] != "ok"
                                 else "")
                    continue
                if not r["scan_rounds"]:
                    cells.append("0 marks")
                    continue
                ms = lambda k: ("%.1f" % (r[k] / 1000.0)) if r.get(k) is not None else ""  # noqa: E731
                mib = ("%.0f" % r["scan_mib_per_round"]) if r.get("scan_mib_per_round") else ""
                rate = ("%.1f" % r["scan_gib_per_s"]) if r.get("scan_gib_per_s") else ""
                cells.append("%d / %s / %s / %s / %s" % (r["scan_rounds"],
                                                         ms("scan_pause_us_median"),
                                                         ms("scan_pause_us_max"), mib, rate))
            lines.append("| %s | %s |" % (w, " | ".join(cells)))
        lines.append("")
    oscars = [a for a in allocators if any(rows.get((w, a), {}).get("syscalls_per_1k_allocs")
                                           is not None and not rows[(w, a)].get("syscalls_source")
                                           for w in workloads)]
    if oscars:
        lines.append("### Oscar: system calls and peak kernel mappings per 1000 allocations")
        lines.append("")
        lines.append("| workload | %s |" % " | ".join(
            "%s syscalls | %s mappings" % (a, a) for a in oscars))
        lines.append("|---|%s" % ("---:|" * (2 * len(oscars))))
        for w in workloads:
            cells = []
            for a in oscars:
                r = rows.get((w, a))
                cells += [_cell(r, "syscalls_per_1k_allocs", 0),
                          _cell(r, "peak_mappings_per_1k_allocs", 0)]
            lines.append("| %s | %s |" % (w, " | ".join(cells)))
        lines.append("")
    lines.append("### Page faults (minor + major), median")
    lines.append("")
    lines.append("| workload | %s |" % " | ".join(allocators))
    lines.append("|---|%s" % ("---:|" * len(allocators)))
    for w in workloads:
        lines.append("| %s | %s |" % (w, " | ".join(_cell(rows.get((w, a)), "faults", 0)
                                                    for a in allocators)))
    lines.append("")
    lines.append(meta)
    return "\n".join(lines) + "\n"


def plots(rows_list, allocators, workloads, out_dir):
    """time_ratio.png and memory_ratio.png (and throughput_ratio.png when servers ran): one
    group of bars per workload (and the geomean), one bar per allocator, log scale because the
    ratios span 1x to 1000x."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = {(r["workload"], r["allocator"]): r for r in rows_list}
    others = [a for a in allocators if a != "glibc"]
    served = server_workloads(rows_list, workloads)
    written = []
    for key, fname, title, plot_workloads in [
            ("time_ratio", "time_ratio.png", "Run time / glibc",
             [w for w in workloads if w not in served]),
            ("throughput_ratio", "throughput_ratio.png", "Throughput / glibc (higher is better)",
             served),
            ("mem_ratio", "memory_ratio.png", "Peak memory / glibc", list(workloads))]:
        if key == "throughput_ratio" and not served:
            continue
        workloads_here = plot_workloads
        groups = list(workloads_here) + ["geomean"]
        fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(groups) + 2), 5))
        width = 0.8 / max(1, len(others))
        for i, a in enumerate(others):
            vals = []
            for w in workloads_here:
                r = rows.get((w, a))
                vals.append(r[key] if r and r["status"] == "ok" and r.get(key) else float("nan"))
            g = geomean([v for v in vals if not math.isnan(v)])
            vals.append(g if g else float("nan"))
            xs = [j + (i - (len(others) - 1) / 2) * width for j in range(len(groups))]
            ax.bar(xs, vals, width, label=a)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=30, ha="right")
        ax.set_ylabel(title + " (log scale; missing bar = skipped or failed)")
        ax.set_title(title)
        ax.legend(fontsize="small", ncol=2)
        fig.tight_layout()
        path = os.path.join(out_dir, fname)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
