#!/usr/bin/env python3
"""Read fio-format JSON reports (fio's own or `elevator run --output-format json`) and print
the figures the bench scripts compare. Used by fio-parity.sh."""
import json
import sys


def load(path):
    with open(path) as f:
        text = f.read()
    # fio may print notices before its JSON.
    v = json.loads(text[text.index("{"):])
    return v["runs"] if "runs" in v else [v]


def job(run, name):
    for j in run["jobs"]:
        if j["jobname"] == name:
            return j
    raise SystemExit(f"no job named {name!r} in the report")


def figures(run, name, direction):
    d = job(run, name)[direction]
    return {
        "iops": d["iops"],
        "mb_s": d["bw_bytes"] / 1e6,
        "lat_ms": d["lat_ns"]["mean"] / 1e6,
    }


if __name__ == "__main__":
    # summarize.py REPORT JOB DIRECTION -> "iops mb_s lat_ms" per run (one line each)
    for run in load(sys.argv[1]):
        f = figures(run, sys.argv[2], sys.argv[3])
        sched = run.get("elevator", {}).get("scheduler", "fio")
        print(sched, f"{f['iops']:.1f}", f"{f['mb_s']:.1f}", f"{f['lat_ms']:.4f}")
