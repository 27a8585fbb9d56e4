#!/bin/sh
# kyber's read target swept on the simulated 980 PRO: bench/jobs/kyber-read-target.fio (a QD1
# 4 KiB random reader on CPU 1 beside a QD128 4 KiB random writer on CPU 2, the study's host
# model), write_lat_nsec 10 ms, seeds 1-5. Prints one line per target: the reader's mean
# latency and the writer's IOPS, mean and range over the seeds, and the write domain's final
# state is left to --blktrace-out if wanted. The default drive is the 980 PRO with its write
# side stated for the study's sustained random writes (samsung-980pro-1tb-fig11c: 186 K
# writes/s, as the study's drives took them); the built-in samsung-980pro-1tb's write side is
# not fitted and takes 21 K/s (docs/ssd-model.md, "kyber's read target").
#   bench/kyber-read-target.sh [DRIVE] [SEEDS] [TARGETS_NS...]
set -eu
drive=${1:-samsung-980pro-1tb-fig11c}
seeds=${2:-5}
shift 2 2>/dev/null || shift $#
targets=${*:-"50000 100000 250000 500000 1000000 2000000 10000000"}
bin=${ELEVATOR:-target/release/elevator}
out=$(mktemp -d)
for t in $targets; do
  for s in $(seq 1 "$seeds"); do
    "$bin" sim bench/jobs/kyber-read-target.fio --drive "$drive" --host icpe24-10core \
      --sched kyber --set kyber.read_lat_nsec="$t" --set kyber.write_lat_nsec=10000000 \
      --seed "$s" --json "$out/$t-$s.json" > /dev/null
  done
done
python3 - "$out" "$drive" $targets <<'PY'
import json, sys, glob, statistics as st
out, drive, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
print(f"drive {drive}: read_lat_nsec | reader mean us (range) | writer IOPS (range)")
for t in targets:
    rl, wi = [], []
    for f in sorted(glob.glob(f"{out}/{t}-*.json")):
        d = json.load(open(f))
        d = d[0] if isinstance(d, list) else d
        for j in d["jobs"]:
            if j["jobname"] == "reader":
                rl.append(j["read"]["lat_ns"]["mean"] / 1e3)
            if j["jobname"] == "writer":
                wi.append(j["write"]["iops"])
    print(f"{int(t)//1000:>6} us | {st.mean(rl):8.1f} ({min(rl):.1f}-{max(rl):.1f}) | "
          f"{st.mean(wi):9.0f} ({min(wi):.0f}-{max(wi):.0f})")
PY
rm -r "$out"
