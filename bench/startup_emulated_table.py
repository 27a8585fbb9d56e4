#!/usr/bin/env python3
"""Table of bench/startup-emulated.sh's CSV: per scheduler and background, the start-up's
seconds (median and range over rounds), its ratio to the same round's start-up alone (0r0w),
the background's MB/s during the start-up, the emulator's lateness and the host's load.
A start-up stopped at the cap (">CAP") counts as CAP: its figures are lower bounds (">=").

usage: startup_emulated_table.py RESULTS.csv [--json OUT.json]
"""
import argparse
import csv
import json
import statistics

from lib.stats import est, fmt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--json")
    a = ap.parse_args()
    runs = {}
    order = []
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            t = r["startup_s"].strip()
            capped = t.startswith(">")
            r["t"] = float(t.lstrip(">"))
            r["capped"] = capped
            runs[(r["round"], r["sched"], r["bg"])] = r
            if (r["sched"], r["bg"]) not in order:
                order.append((r["sched"], r["bg"]))
    order.sort(key=lambda k: k[0])
    print("| scheduler | background | start-up (s) | / alone (same round) | background MB/s | "
          "late median / p99 / max (us) | load |")
    print("|---|---|---:|---:|---:|---|---|")
    rows = []
    for s, bg in order:
        rs = [r for (rd, ss, b), r in runs.items() if ss == s and b == bg]
        t = [r["t"] for r in rs]
        capped = sum(r["capped"] for r in rs)
        ratio = []
        for r in rs:
            alone = runs.get((r["round"], s, "0r0w"))
            if alone and not alone["capped"]:
                ratio.append(r["t"] / alone["t"])
        med = [float(r["late_med_us"]) for r in rs if r["late_med_us"]]
        p99 = [float(r["late_p99_us"]) for r in rs if r["late_p99_us"]]
        mx = [float(r["late_max_us"]) for r in rs if r["late_max_us"]]
        late = "-"
        if med:
            late = f"{statistics.median(med):.0f} / {statistics.median(p99):.0f} / {max(mx):.0f}"
        ge = ">=" if capped else ""
        mb = est([float(r["bg_MBps"]) for r in rs])
        load = est([float(r["load1"]) for r in rs])
        print(f"| {s} | {bg} | {fmt(est(t), ge)} | "
              f"{'-' if bg == '0r0w' else fmt(est(ratio), ge)} | "
              f"{'-' if bg == '0r0w' else fmt(mb, d=1)} | {late} | {fmt(load, d=1)} |")
        rows.append({"sched": s, "background": bg, "startup_s": est(t), "capped_runs": capped,
                     "ratio_to_alone": est(ratio) if bg != "0r0w" else None,
                     "background_MBps": mb, "load1": load,
                     "late_us": {"median_of_medians": statistics.median(med) if med else None,
                                 "median_of_p99": statistics.median(p99) if p99 else None,
                                 "max": max(mx) if mx else None}})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"experiment": "startup-emulated", "rows": rows}, f, indent=1)
        print(f"\njson: {a.json}")


if __name__ == "__main__":
    main()
