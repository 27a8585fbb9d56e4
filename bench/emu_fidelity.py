#!/usr/bin/env python3
"""Compare emulated runs with the simulator's (bench/emu-fidelity.sh).

usage: emu_fidelity.py SIM.json EMU1.json [EMU2.json ...]

Each file is `elevator sim|run JOB --output-format json` output (one run or {"runs": [...]}),
with the same job file and schedulers. For every scheduler and job: the simulator's mean
completion latency and throughput, the emulated ones (median and range over the emulated
files), and the ratio emulated / simulated (median, range); then the emulation's lateness
(median of the runs' median, p99 and max). A ratio outside 0.95-1.05 is marked with *.
"""
import json
import statistics
import sys


def runs(path):
    with open(path) as f:
        doc = json.load(f)
    rs = doc["runs"] if "runs" in doc else [doc]
    out = {}
    for r in rs:
        sched = r["elevator"]["scheduler"]
        jobs = {}
        for j in r["jobs"]:
            for d in ("read", "write"):
                x = j[d]
                if x["total_ios"] == 0:
                    continue
                jobs[(j["jobname"], d)] = (x["clat_ns"]["mean"] / 1e6, x["bw_bytes"] / 1e6)
        out[sched] = (jobs, r["elevator"].get("emulation"))
    return out


def fmt(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"


def main():
    sim = runs(sys.argv[1])
    emus = [runs(p) for p in sys.argv[2:]]
    print("| scheduler | job | sim mean lat (ms) | emulated (ms) | ratio | sim MB/s | emulated MB/s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for sched, (jobs, _) in sim.items():
        for key, (lat, bw) in sorted(jobs.items()):
            el = [e[sched][0][key][0] for e in emus if sched in e and key in e[sched][0]]
            eb = [e[sched][0][key][1] for e in emus if sched in e and key in e[sched][0]]
            if not el:
                continue
            rl = [x / lat for x in el] if lat else [float("nan")]
            rb = [x / bw for x in eb] if bw else [float("nan")]
            ml, mb = statistics.median(rl), statistics.median(rb)
            worst = max(worst, abs(ml - 1), abs(mb - 1))
            mark = lambda m: "" if abs(m - 1) <= 0.05 else " *"
            print(f"| {sched} | {key[0]} {key[1]} | {lat:.2f} | {fmt(el)} | {fmt(rl)}{mark(ml)} "
                  f"| {bw:.2f} | {fmt(eb)} | {fmt(rb)}{mark(mb)} |")
    print()
    print("| scheduler | completions | late median (us) | late p99 (us) | late max (us) | verdicts |")
    print("|---|---:|---:|---:|---:|---|")
    for sched in sim:
        em = [e[sched][1] for e in emus if sched in e and e[sched][1]]
        if not em:
            continue
        med = [x["late_median_ns"] / 1e3 for x in em]
        p99 = [x["late_p99_ns"] / 1e3 for x in em]
        mx = [x["late_max_ns"] / 1e3 for x in em]
        n = [x["completions"] for x in em]
        v = ",".join(x["verdict"] for x in em)
        print(f"| {sched} | {statistics.median(n):.0f} | {fmt(med)} | {fmt(p99)} | {fmt(mx)} | {v} |")
    print()
    print(f"largest deviation of a median ratio from 1: {worst * 100:.1f}%")


if __name__ == "__main__":
    main()
