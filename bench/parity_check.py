#!/usr/bin/env python3
"""fio-parity.sh's comparison: median of the repetitions, ours vs fio, 10% bounds."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import figures, load  # noqa: E402

tmp, workload, name, direction, reps = sys.argv[1:6]
side = {}
per_rep = {}
for who in ("fio", "ours"):
    runs = [load(os.path.join(tmp, f"{who}-{workload}-{rep}.json"))[0] for rep in range(1, int(reps) + 1)]
    fs = [figures(r, name, direction) for r in runs]
    per_rep[who] = fs
    side[who] = {k: statistics.median(f[k] for f in fs) for k in ("iops", "lat_ms")}
r_iops = side["ours"]["iops"] / side["fio"]["iops"]
r_lat = side["ours"]["lat_ms"] / side["fio"]["lat_ms"]
for who in ("fio", "ours"):
    s = side[who]
    extra = ("", "") if who == "fio" else (f"{r_iops:.3f}", f"{r_lat:.3f}")
    print(f"{workload:<10} {who:<8} {s['iops']:12.0f} {s['lat_ms']:12.4f} {extra[0]:>12} {extra[1]:>12}")
within = [o["iops"] / f["iops"] for o, f in zip(per_rep["ours"], per_rep["fio"])]
print(f"{workload:<10} ours/fio IOPS within each repetition: "
      f"{', '.join(f'{x:.3f}' for x in within)} (median {statistics.median(within):.3f})")
ok = abs(r_iops - 1) <= 0.10 and abs(r_lat - 1) <= 0.10
print(f"{workload:<10} {'PASS' if ok else 'FAIL'}: IOPS and mean latency within 10% of fio's")
sys.exit(0 if ok else 1)
