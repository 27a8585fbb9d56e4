#!/usr/bin/env python3
"""Summarize bench/morton-real.sh's CSV: per configuration, the median and range over rounds
of the reader alone, beside the writer, their ratio (taken within each round) and the writer's
MB/s; a Markdown table on standard output."""
import csv
import statistics
import sys
from collections import defaultdict


def num(x):
    return float(x.lstrip(">"))


def cell(vals, fmt):
    vals = sorted(vals)
    med = statistics.median(vals)
    return f"{fmt.format(med)} ({fmt.format(vals[0])}-{fmt.format(vals[-1])})"


def main(path):
    rows = defaultdict(list)
    order = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["config"] not in rows:
                order.append(r["config"])
            rows[r["config"]].append(r)
    noop = rows.get("ours:noop")
    noop_w = statistics.median(num(r["writer_MBps"]) for r in noop) if noop else None
    print("| configuration | reader alone (s) | reader beside writer (s) | beside / alone "
          "| writer MB/s | writer / ours:noop |")
    print("|---|---:|---:|---:|---:|---:|")
    for c in sorted(order, key=lambda c: (not c.startswith("ours"), order.index(c))):
        rs = rows[c]
        alone = [num(r["alone_s"]) for r in rs]
        beside = [num(r["beside_s"]) for r in rs]
        ratio = [num(r["beside_s"]) / num(r["alone_s"]) for r in rs]
        w = [num(r["writer_MBps"]) for r in rs]
        rel = f"{statistics.median(w) / noop_w:.2f}" if noop_w else "-"
        capped = any(r["beside_s"].startswith(">") or r["alone_s"].startswith(">") for r in rs)
        print(f"| {c}{' (capped)' if capped else ''} | {cell(alone, '{:.1f}')} | "
              f"{cell(beside, '{:.1f}')} | {cell(ratio, '{:.2f}')} | {cell(w, '{:.0f}')} | {rel} |")
    print(f"\n{len(next(iter(rows.values())))} rounds; medians with (min-max).")


if __name__ == "__main__":
    main(sys.argv[1])
