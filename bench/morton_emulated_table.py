#!/usr/bin/env python3
"""Table of bench/morton-emulated.sh's CSV: per scheduler, medians and ranges over rounds of
the compile alone, beside the writer, their ratio (within a round), the writer's MB/s, the
emulator's lateness and the host's load; beside Morton's 2003 figures (2.5.59-mm5
announcement: the compile took 538 s under the 2.4 elevator, 400 s under deadline and 70 s
under anticipatory beside the writer, 48 s alone).

A compile stopped at the cap is written ">CAP:DONE" (DONE objects made by then). Its time is
a lower bound (">="); with --objects N the table also gives the time it would have taken had
it gone on at the rate it went, CAP * N / DONE, marked "~" (an estimate: a compile's rate
is not constant, its first objects read more headers).

usage: morton_emulated_table.py RESULTS.csv [--objects N] [--json OUT.json] [--meta TEXT]
"""
import argparse
import csv
import json
import statistics

from lib.stats import est, fmt

MORTON = {"noop": ("538 s (2.4 elevator), 11.2x", 538.0, 11.2),
          "deadline": ("400 s, 8.3x", 400.0, 8.3), "deadline-2.5": ("400 s, 8.3x", 400.0, 8.3),
          "anticipatory": ("70 s, 1.46x", 70.0, 1.46)}


def parse(s, objects):
    """(seconds, capped, estimated seconds) of one CSV cell."""
    s = s.strip()
    if not s:
        return float("nan"), False, float("nan")
    if s.startswith(">"):
        cap, _, done = s[1:].partition(":")
        cap = float(cap)
        est = float("nan")
        if objects and done and int(done) > 0:
            est = cap * objects / int(done)
        return cap, True, est
    return float(s), False, float(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--objects", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--meta", default="")
    a = ap.parse_args()
    rows = {}
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["sched"], []).append(r)
    print("| scheduler | compile alone (s) | beside dd (s) | beside / alone | at its rate (~s, ~ratio) "
          "| dd MB/s | late median / p99 / max (us) | load | Morton 2003 |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    out = []
    for s, rs in rows.items():
        alone, beside, ratio, best, bratio, mb, med, p99, mx, load = ([] for _ in range(10))
        capped = 0
        for r in rs:
            al, ca, _ = parse(r["alone_s"], a.objects)
            b, cb, be = parse(r["beside_s"], a.objects)
            capped += cb or ca
            alone.append(al)
            beside.append(b)
            ratio.append(b / al)
            best.append(be)
            bratio.append(be / al)
            mb.append(float(r["writer_MBps"]))
            if r.get("load1"):
                load.append(float(r["load1"]))
            for k, dst in (("late_med_us", med), ("late_p99_us", p99), ("late_max_us", mx)):
                for w in ("alone_", "beside_"):
                    if r[w + k]:
                        dst.append(float(r[w + k]))
        late = "-"
        if med:
            late = f"{statistics.median(med):.0f} / {statistics.median(p99):.0f} / {max(mx):.0f}"
        ge = ">=" if capped else ""
        rate = "-"
        if capped:
            rate = f"~{fmt(est(best), d=1)}, ~{fmt(est(bratio), d=2)}"
        m = MORTON.get(s)
        print(f"| {s} | {fmt(est(alone), d=1)} | {fmt(est(beside), ge, 1)} | "
              f"**{fmt(est(ratio), ge, 2)}** | {rate} | {fmt(est(mb), d=1)} | {late} | "
              f"{fmt(est(load), d=1)} | {m[0] if m else ''} |")
        out.append({
            "sched": s, "rounds": len(rs), "capped_runs": capped,
            "alone_s": est(alone), "beside_s": est(beside), "ratio": est(ratio),
            "beside_s_at_rate": est(best), "ratio_at_rate": est(bratio),
            "writer_MBps": est(mb), "load1": est(load),
            "late_us": {"median_of_medians": statistics.median(med) if med else None,
                        "median_of_p99": statistics.median(p99) if p99 else None,
                        "max": max(mx) if mx else None},
            "morton_2003": {"beside_s": m[1], "ratio": m[2]} if m else None,
        })
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"experiment": "morton-emulated", "meta": a.meta, "morton_alone_s": 48.0,
                       "rows": out}, f, indent=1)
        print(f"json: {a.json}")


if __name__ == "__main__":
    main()
