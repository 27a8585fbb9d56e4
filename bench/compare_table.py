#!/usr/bin/env python3
"""kernel-compare.sh's table: one row per (workload, system, scheduler)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import figures, load  # noqa: E402

tmp, kernel = sys.argv[1], sys.argv[2].split()
jobs = sys.argv[3:]
print()
hdr = ("workload", "system", "scheduler", "reader IOPS", "reader ms", "writer MB/s",
       "reader x none", "writer % none", "dominated by")
print(f"{hdr[0]:<9} {hdr[1]:<8} {hdr[2]:<14} {hdr[3]:>11} {hdr[4]:>9} {hdr[5]:>11} "
      f"{hdr[6]:>13} {hdr[7]:>13}  {hdr[8]}")
failed = False
for job in jobs:
    w = os.path.basename(job)[:-4]
    rows = []
    for k in kernel:
        run = load(os.path.join(tmp, f"{w}-kernel-{k}.json"))[0]
        rows.append(("kernel", k, figures(run, "reader", "read"), figures(run, "writer", "write")))
    for run in load(os.path.join(tmp, f"{w}-ours.json")):
        name = run["elevator"]["scheduler"]
        rows.append(("elevator", name, figures(run, "reader", "read"),
                     figures(run, "writer", "write")))
    base_r, base_w = rows[0][2]["iops"], rows[0][3]["mb_s"]
    alone = figures(load(os.path.join(tmp, f"{w}-alone.json"))[0], "reader", "read")
    print(f"{w:<9} {'kernel':<8} {'reader alone':<14} {alone['iops']:11.0f} "
          f"{alone['lat_ms']:9.3f} {'-':>11} {alone['iops'] / base_r:13.1f} {'-':>13}")
    for system, name, r, wr in rows:
        dom = [k for (s, k, kr, kw) in rows if s == "kernel" and system == "elevator"
               and kr["iops"] >= r["iops"] and kw["mb_s"] >= wr["mb_s"]]
        print(f"{w:<9} {system:<8} {name:<14} {r['iops']:11.0f} {r['lat_ms']:9.3f} "
              f"{wr['mb_s']:11.0f} {r['iops'] / base_r:13.1f} {100 * wr['mb_s'] / base_w:12.0f}%  "
              f"{', '.join(dom) if dom else '-'}")
        if system == "elevator" and name == "latency-guard":
            ok = r["iops"] >= 10 * base_r and wr["mb_s"] >= 0.6 * base_w and not dom
            print(f"{'':<9} goal (reader >= 10x kernel none, writer >= 60%, undominated): "
                  f"{'met' if ok else 'NOT met'}")
            failed |= not ok
    print()
sys.exit(1 if failed else 0)
