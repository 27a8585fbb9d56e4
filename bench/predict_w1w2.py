#!/usr/bin/env python3
"""The table of bench/predict-w1w2.sh: the executor's medians (min-max) over the rounds beside
the simulator's prediction on the calibrated spec, for W1 and W2 under each scheduler."""
import glob
import json
import os
import statistics
import sys

SCHEDS = ["none", "mq-deadline", "kyber", "latency-guard"]


def job(run, name):
    return next(j for j in run["jobs"] if j["jobname"] == name)


def figures(run):
    return (job(run, "reader")["read"]["iops"], job(run, "writer")["write"]["bw_bytes"] / 1e6)


def main(out):
    rows = []
    for w in ["w1", "w2"]:
        sim = json.load(open(os.path.join(out, f"{w}-sim.json")))["runs"]
        for i, s in enumerate(SCHEDS):
            real = [figures(json.load(open(p)))
                    for p in sorted(glob.glob(os.path.join(out, f"{w}-{s}-r*.json")))]
            if not real:
                continue
            pr, pw = figures(sim[i])
            cells = [w.upper(), s]
            for k, pred in [(0, pr), (1, pw)]:
                xs = [r[k] for r in real]
                med = statistics.median(xs)
                err = (pred / med - 1) * 100 if med > 0 else float("nan")
                cells += [f"{med:,.0f} ({min(xs):,.0f}-{max(xs):,.0f})", f"{pred:,.0f}",
                          f"{err:+.0f}%"]
            cells.append(str(len(real)))
            rows.append(cells)
    head = ["workload", "scheduler", "reader IOPS measured", "predicted", "error",
            "writer MB/s measured", "predicted", "error", "rounds"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
