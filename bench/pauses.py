"""Stops of the world against the size of the live heap (issue 17): scanstress at several live
sizes under every allocator that reports its marks, Oscar's protect mode (its OSCAR_STATS_FILE
counters scan_rounds, scan_pause_us_median, scan_pause_us_max, scan_bytes,
scan_still_referenced) and MarkUs (its collector's log of each world-stopped mark, in whole
milliseconds). bench/run.py calls sweep() when its workloads include scanstress; the result
is pauses.csv, a table appended to results.md, and pause_vs_live.png.

The targets drawn on the plot: a worst stop of 10 ms with concurrent marking, and 50 ms per
100 MiB live without it.
"""

import csv
import os

import measure

# allocators whose marks are measured, when the run has them
PAUSE_ALLOCATORS = ("oscar-protect", "oscar-protect-stop", "oscar-protect-concurrent",
                    "oscar-protect-snapshot", "oscar-protect-1thread", "markus")
AVERAGE_NODE = 144  # bytes: scanstress's nodes are 32..256 B


def live_sizes(quick, smoke):
    if smoke:
        return [4, 8]
    return [50, 200] if quick else [25, 50, 100, 200]


def sweep(progs, ready, clean_env, timeout, rejected=None, quick=False, smoke=False, log=print):
    """One run per (allocator, live size): scanstress LIVE_MIB N, N = the live node count (every
    node replaced once on average). Returns a list of row dicts. `rejected`: {allocator name:
    status} of configurations the library refuses (bench/run.py's probe): recorded, not run."""
    rejected = rejected or {}
    program = os.path.join(progs, "scanstress")
    chosen = [a for a in ready if a.name in PAUSE_ALLOCATORS]
    rows = []
    if not os.path.exists(program) or not chosen:
        log("skip: pause sweep: %s" % ("scanstress is not built in %s" % progs
                                       if chosen else "none of %s in this run"
                                       % ", ".join(PAUSE_ALLOCATORS)))
        return rows
    for live in live_sizes(quick, smoke):
        count = live * 2**20 // AVERAGE_NODE
        argv = [program, str(live), str(count)]
        for a in chosen:
            if a.name in rejected:
                rows.append({"allocator": a.name, "live_mib": live, "status": rejected[a.name],
                             "time_s": 0.0, "mem_mib": 0.0})
                continue
            env = clean_env({})
            env.update(a.env)
            if a.preload:
                env["LD_PRELOAD"] = a.preload
            r = measure.run(argv, env, timeout, oscar_stats=a.is_oscar)
            row = {"allocator": a.name, "live_mib": live, "status": r.status,
                   "time_s": r.seconds, "mem_mib": r.peak_bytes / 2**20}
            if r.status != "ok":
                tail = r.stderr_tail.strip()
                row["note"] = tail.splitlines()[-1][:160] if tail else ""
            for key in ("scan_rounds", "scan_skipped", "scan_pause_us_median",
                        "scan_pause_us_max", "scan_bytes", "scan_us", "scan_still_referenced",
                        "peak_snapshot_copy_bytes"):
                if key in r.oscar:
                    row[key] = r.oscar[key]
            if row.get("scan_rounds") and row.get("scan_bytes"):
                row["scan_mib_per_round"] = row["scan_bytes"] / row["scan_rounds"] / 2**20
                if row.get("scan_us"):
                    # bytes read per second of marking (Oscar's scan_us: every kind of mark)
                    row["scan_gib_per_s"] = row["scan_bytes"] / 2**30 / (row["scan_us"] / 1e6)
                elif row.get("scan_pause_us_median"):
                    # MiB scanned per round over the median stop: the marking rate, as far as
                    # the counters tell it (exact for a stop-the-world mark)
                    row["scan_gib_per_s"] = (row["scan_mib_per_round"] / 1024
                                             / (row["scan_pause_us_median"] / 1e6))
            rows.append(row)
            log("pauses: %-14s %4d MiB live %-10s %6.2f s  marks %s  median %s ms  max %s ms"
                % (a.name, live, r.status, r.seconds, row.get("scan_rounds", "-"),
                   _ms(row.get("scan_pause_us_median")), _ms(row.get("scan_pause_us_max"))))
    return rows


def _ms(us):
    return "-" if us is None else "%.1f" % (us / 1000.0)


COLUMNS = ["allocator", "live_mib", "status", "time_s", "mem_mib", "scan_rounds", "scan_skipped",
           "scan_pause_us_median", "scan_pause_us_max", "scan_bytes", "scan_us", "scan_mib_per_round",
           "scan_gib_per_s", "scan_still_referenced", "peak_snapshot_copy_bytes", "note"]


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("%.6g" % r[k] if isinstance(r.get(k), float) else r.get(k, ""))
                        for k in COLUMNS})


def markdown(rows):
    lines = ["### Stops of the world against the live heap (scanstress, one run each)", "",
             "| allocator | live MiB | status | time s | peak MiB | marks | median stop ms "
             "| max stop ms | max ms per 100 MiB live | MiB scanned per mark | GiB/s "
             "| still referenced | snapshot copies MiB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        per100 = (r["scan_pause_us_max"] / 1000.0 / r["live_mib"] * 100
                  if r.get("scan_pause_us_max") is not None else None)
        copies = r.get("peak_snapshot_copy_bytes")
        lines.append("| %s | %d | %s | %.2f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["allocator"], r["live_mib"], r["status"], r["time_s"], r.get("mem_mib", 0.0),
            r.get("scan_rounds", ""), _blank_ms(r.get("scan_pause_us_median")),
            _blank_ms(r.get("scan_pause_us_max")), "" if per100 is None else "%.1f" % per100,
            "" if r.get("scan_mib_per_round") is None else "%.0f" % r["scan_mib_per_round"],
            "" if r.get("scan_gib_per_s") is None else "%.1f" % r["scan_gib_per_s"],
            r.get("scan_still_referenced", ""), "%.0f" % (copies / 2**20) if copies else ""))
    lines += ["", "Blank: the allocator reported no such figure (MarkUs logs its stops in "
              "whole milliseconds and no bytes scanned). GiB/s: MiB scanned per mark over the "
              "median stop. Peak MiB: the process tree's (a snapshot mark's child included). "
              "Snapshot copies: the most memory a snapshot mark's child held alone (the pages "
              "the program wrote while it read).", ""]
    return "\n".join(lines)


def _blank_ms(us):
    return "" if us is None else "%.1f" % (us / 1000.0)


def plot(rows, path):
    """pause_vs_live.png: max (solid) and median (dashed) stop against live MiB, per
    allocator, with the issue's two targets."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    lives = sorted({r["live_mib"] for r in rows}) or [1]
    top = max(lives)
    ax.plot([0, top], [0, top / 100.0 * 50], color="grey", linestyle=":",
            label="target without concurrent marking: 50 ms per 100 MiB")
    ax.axhline(10, color="grey", linestyle="-.", linewidth=0.8,
               label="target with concurrent marking: 10 ms")
    for name in sorted({r["allocator"] for r in rows}):
        mine = [r for r in rows if r["allocator"] == name and r.get("scan_pause_us_max") is not None]
        if not mine:
            continue
        xs = [r["live_mib"] for r in mine]
        line, = ax.plot(xs, [r["scan_pause_us_max"] / 1000.0 for r in mine], marker="o",
                        label="%s max" % name)
        med = [(r["live_mib"], r["scan_pause_us_median"] / 1000.0) for r in mine
               if r.get("scan_pause_us_median") is not None]
        if med:
            ax.plot([m[0] for m in med], [m[1] for m in med], marker="x", linestyle="--",
                    color=line.get_color(), label="%s median" % name)
    ax.set_xlabel("live heap, MiB (scanstress)")
    ax.set_ylabel("stop of the world, ms")
    ax.set_title("Pause against live heap")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

