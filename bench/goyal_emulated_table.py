#!/usr/bin/env python3
"""Helper of bench/goyal-emulated.sh: the simulator's scenario for n readers in /b, the
simulator's JSON reduced to group bytes, and the closing table (B's share of the bandwidth,
per scheduler and n: the emulated runs' median and range over rounds, the simulator's over
seeds 1-3 in Goyal's placement and in the emulation's, and Goyal's published share from
shared/targets/io-controller-2009.csv, read where it lies).

usage: goyal_emulated_table.py --scenario goyal|emulated N DRIVE RUNTIME_S
       goyal_emulated_table.py --sim-json OUT.json          (prints "A_BYTES,B_BYTES")
       goyal_emulated_table.py --table RESULTS.csv SIM.csv [--json OUT.json]
"""
import argparse
import csv
import json
import os
import statistics

from lib.stats import est, fmt

# Goyal's setups and the scheduler that stands for each here.
SETUP = {"cfq-flat": "vanilla-cfq", "cfq": "io-controller+cfq"}
TARGETS = os.path.join(os.environ.get("ELEVATOR_SHARED", "/work/shared"), "targets",
                       "io-controller-2009.csv")


def scenario(place, n, drive, runtime_s):
    """The io-controller scenario's text for n readers in /b. `goyal`: files of 1/40 of the
    drive side by side from its start (`elevator reproduce io-controller`); `emulated`: files
    of 1/100 side by side from 60% of the drive on, where the mount's Layout puts files of
    8 MiB and more, in the order the bench starts the readers."""
    size, base = (0.025, 0.0) if place == "goyal" else (0.01, 0.6)
    s = (f'name = "goyal-emulated-{place}-n{n}"\n'
         f'description = "16 sequential readers in /a against {n} in /b, equal weights"\n'
         f'drive = "{drive}"\nseed = 1\n\n[[group]]\npath = "/a"\n\n[[group]]\npath = "/b"\n')
    jobs = [("a", i) for i in range(16)] + [("b", i) for i in range(n)]
    for slot, (g, i) in enumerate(jobs):
        s += (f'\n[[job]]\nname = "{g}{i}"\ngroup = "/{g}"\nkind = "fio"\nrw = "read"\n'
              f'bs = 4096\noffset_frac = {base + slot * size:.6f}\nsize_frac = {size}\n'
              f'time_based = true\nruntime_ms = {int(runtime_s) * 1000}\n')
    return s


def sim_bytes(path):
    d = json.load(open(path))
    jobs = d["runs"][0]["jobs"]
    a = sum(j["read"]["bytes"] for j in jobs if j["group"] == "/a")
    b = sum(j["read"]["bytes"] for j in jobs if j["group"] == "/b")
    return a, b


def published():
    out = {}
    try:
        with open(TARGETS) as f:
            rows = [l for l in f if not l.startswith("#")]
    except OSError:
        return out
    for r in csv.DictReader(rows):
        a, b = float(r["a_agg_bw"]), float(r["b_agg_bw"])
        out[(r["setup"], int(r["n"]))] = {"b_share": b / (a + b), "total_KBps": a + b}
    return out


def table(results, simcsv, json_out):
    emu = {}
    with open(results) as f:
        for r in csv.DictReader(f):
            a = [int(x) for x in r["a_bytes"].split()]
            b = [int(x) for x in r["b_bytes"].split()]
            t = float(r["elapsed_s"])
            e = emu.setdefault((r["sched"], int(r["n"])), {"share": [], "total": [], "a_min": [],
                                                          "a_max": [], "late": [], "p99": [],
                                                          "max": [], "load": []})
            e["share"].append(sum(b) / (sum(a) + sum(b)))
            e["total"].append((sum(a) + sum(b)) / 1024 / t)
            e["a_min"].append(min(a) / 1024 / t)
            e["a_max"].append(max(a) / 1024 / t)
            for k, c in (("late", "late_med_us"), ("p99", "late_p99_us"), ("max", "late_max_us")):
                if r[c]:
                    e[k].append(float(r[c]))
            e["load"].append(float(r["load1"]))
    sim = {}
    with open(simcsv) as f:
        for r in csv.DictReader(f):
            a, b = int(r["a_bytes"]), int(r["b_bytes"])
            sim.setdefault((r["placement"], r["sched"], int(r["n"])), []).append(b / (a + b))
    pub = published()
    print("B's share of the bandwidth (B's bytes / all bytes) with 16 readers in /a, n in /b:\n")
    print("| scheduler | n | emulated, real dd | emulated KB/s (A+B) | A reader min-max KB/s | "
          "sim, Goyal's placement | sim, emulated placement | Goyal 2009 | "
          "late median / p99 / max (us) | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    rows = []
    for (s, n) in sorted(emu, key=lambda k: (k[0], k[1])):
        e = emu[(s, n)]
        p = pub.get((SETUP.get(s, ""), n))
        sg, se = est(sim.get(("goyal", s, n), [])), est(sim.get(("emulated", s, n), []))
        late = "-"
        if e["late"]:
            late = (f"{statistics.median(e['late']):.0f} / {statistics.median(e['p99']):.0f} / "
                    f"{max(e['max']):.0f}")
        print(f"| {s} | {n} | **{fmt(est(e['share']))}** | {fmt(est(e['total']), d=0)} | "
              f"{statistics.median(e['a_min']):.0f}-{statistics.median(e['a_max']):.0f} | "
              f"{fmt(sg)} | {fmt(se)} | "
              f"{'-' if p is None else format(p['b_share'], '.2f') + ' (' + SETUP[s] + ')'} | "
              f"{late} | {fmt(est(e['load']), d=1)} |")
        rows.append({"sched": s, "n": n, "b_share": est(e["share"]),
                     "total_KBps": est(e["total"]), "a_reader_min_KBps": est(e["a_min"]),
                     "a_reader_max_KBps": est(e["a_max"]),
                     "sim_b_share_goyal_placement": sg, "sim_b_share_emulated_placement": se,
                     "goyal_2009": p and {**p, "setup": SETUP[s]},
                     "late_us": {"median_of_medians": statistics.median(e["late"])
                                 if e["late"] else None,
                                 "median_of_p99": statistics.median(e["p99"]) if e["p99"] else None,
                                 "max": max(e["max"]) if e["max"] else None},
                     "load1": est(e["load"])})
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"experiment": "goyal-emulated", "rows": rows}, f, indent=1)
        print(f"\njson: {json_out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", nargs=4, metavar=("PLACE", "N", "DRIVE", "RUNTIME_S"))
    ap.add_argument("--sim-json")
    ap.add_argument("--table", nargs=2, metavar=("RESULTS", "SIM"))
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.scenario:
        place, n, drive, rt = a.scenario
        print(scenario(place, int(n), drive, float(rt)), end="")
    elif a.sim_json:
        print("%d,%d" % sim_bytes(a.sim_json))
    elif a.table:
        table(a.table[0], a.table[1], a.json)
    else:
        ap.error("one of --scenario, --sim-json, --table")


if __name__ == "__main__":
    main()
