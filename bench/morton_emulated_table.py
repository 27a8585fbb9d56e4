#!/usr/bin/env python3
"""Table of bench/morton-emulated.sh's CSV: per scheduler, medians and ranges over rounds of
the compile alone, beside the writer, their ratio (within a round), the writer's MB/s and the
emulator's lateness; beside Morton's 2003 figures (2.5.59-mm5 announcement: the compile
took 538 s under the 2.4 elevator, 400 s under deadline and 70 s under anticipatory beside
the writer, 48 s alone).

usage: morton_emulated_table.py RESULTS.csv
"""
import csv
import statistics
import sys

MORTON = {"noop": "538 s (2.4 elevator), 11.2x", "deadline": "400 s, 8.3x",
          "anticipatory": "70 s, 1.46x"}


def num(s):
    s = s.strip()
    if s.startswith(">"):
        return float(s[1:]), True
    return (float(s), False) if s else (float("nan"), False)


def rng(v, capped=False, d=1):
    if not v:
        return "-"
    m = statistics.median(v)
    return f"{'>=' if capped else ''}{m:.{d}f} ({min(v):.{d}f}-{max(v):.{d}f})"


def main():
    rows = {}
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["sched"], []).append(r)
    print("| scheduler | compile alone (s) | beside dd (s) | beside / alone | dd MB/s | "
          "late median / p99 / max (us) | Morton 2003 |")
    print("|---|---:|---:|---:|---:|---|---|")
    for s, rs in rows.items():
        alone, beside, ratio, mb, med, p99, mx = [], [], [], [], [], [], []
        capped = False
        for r in rs:
            a, ca = num(r["alone_s"])
            b, cb = num(r["beside_s"])
            capped |= cb or ca
            alone.append(a)
            beside.append(b)
            ratio.append(b / a)
            mb.append(float(r["writer_MBps"]))
            for k, dst in (("late_med_us", med), ("late_p99_us", p99), ("late_max_us", mx)):
                for w in ("alone_", "beside_"):
                    if r[w + k]:
                        dst.append(float(r[w + k]))
        late = "-"
        if med:
            late = f"{statistics.median(med):.0f} / {statistics.median(p99):.0f} / {max(mx):.0f}"
        print(f"| {s} | {rng(alone)} | {rng(beside, capped)} | {rng(ratio, capped, 2)} | "
              f"{rng(mb)} | {late} | {MORTON.get(s, '')} |")


if __name__ == "__main__":
    main()
