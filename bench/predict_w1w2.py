#!/usr/bin/env python3
"""The table of bench/predict-w1w2.sh: the executor's medians (min-max) over the rounds beside
the simulator's prediction on the calibrated spec, for W1 and W2 under each scheduler.

Whether a cell can be judged at +-30% at all: the rounds' median has a standard error of
about 1.2533 sd / sqrt(n) (sd of the rounds' log figures, n rounds); a cell is "decidable"
when its 95% interval, +-1.96 standard errors, lies within +-30%, i.e. when the rounds pin the
device's median down to the tolerance the prediction is judged by. "rounds for +-30%" is the n
that would (with this sd); a cell needing more rounds than were run cannot tell a right
prediction from a wrong one."""
import glob
import json
import math
import os
import statistics
import sys

TOLERANCE = 0.30

SCHEDS = ["none", "mq-deadline", "kyber", "latency-guard"]


def job(run, name):
    return next(j for j in run["jobs"] if j["jobname"] == name)


def figures(run):
    return (job(run, "reader")["read"]["iops"], job(run, "writer")["write"]["bw_bytes"] / 1e6)


def decidable(xs):
    """"yes" or "no" (see the module doc), with the rounds +-30% would take."""
    logs = [math.log(x) for x in xs if x > 0]
    sd = statistics.stdev(logs) if len(logs) > 1 else float("nan")
    need = (1.96 * 1.2533 * sd / math.log(1 + TOLERANCE)) ** 2
    return f"{'yes' if need <= len(xs) else 'no'} ({max(need, 1):,.0f})"


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
                          f"{err:+.0f}%", decidable(xs)]
            cells.append(str(len(real)))
            rows.append(cells)
    head = ["workload", "scheduler", "reader IOPS measured", "predicted", "error",
            "decidable (rounds for +-30%)", "writer MB/s measured", "predicted", "error",
            "decidable (rounds for +-30%)", "rounds"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
