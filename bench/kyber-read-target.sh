#!/bin/sh
# kyber's read target swept on the simulated 980 PRO: bench/jobs/kyber-read-target.fio (a QD1
# 4 KiB random reader on CPU 1 beside a QD128 4 KiB random writer on CPU 2, the study's host
# model), write_lat_nsec 10 ms, seeds 1-5. Prints one row per target: the reader's mean, p50,
# p90 and p99 latency and the writer's IOPS, median and range over the seeds (a spec file works
# as DRIVE). The target `none` runs the scheduler none instead, for the row without kyber.
# The default drive is the 980 PRO with its write side stated for the study's
# sustained random writes (samsung-980pro-1tb-fig11c: 186 K writes/s, as the study's drives
# took them); the built-in samsung-980pro-1tb's write side is not fitted and takes 21 K/s
# (docs/ssd-model.md, "kyber's read target"). With DEPTH_TRACE=MS set, each run also writes a
# blktrace (about 1 GB a run at the drive's write rate, and minutes to read) and prints the
# writes in the drive per MS milliseconds from the start, and the table gets their mean over
# the measured window (bench/kyber_write_depth.py): the write domain's tokens in use, as the
# writer keeps 128 writes allocated and kyber dispatches as many as its write depth allows.
#   bench/kyber-read-target.sh [DRIVE] [SEEDS] [TARGETS_NS...]
set -eu
drive=${1:-samsung-980pro-1tb-fig11c}
seeds=${2:-5}
shift 2 2>/dev/null || shift $#
targets=${*:-"50000 100000 250000 500000 1000000 2000000 5000000 10000000 none"}
bin=${ELEVATOR:-target/release/elevator}
here=$(dirname "$0")
out=$(mktemp -d)
for t in $targets; do
  for s in $(seq 1 "$seeds"); do
    if [ "$t" = none ]; then
      set -- --sched none
    else
      set -- --sched kyber --set kyber.read_lat_nsec="$t" --set kyber.write_lat_nsec=10000000
    fi
    if [ -n "${DEPTH_TRACE:-}" ]; then
      set -- "$@" --blktrace-out "$out/$t-$s"
    fi
    "$bin" sim bench/jobs/kyber-read-target.fio --drive "$drive" --host icpe24-10core "$@" \
      --seed "$s" --json "$out/$t-$s.json" > /dev/null
    if [ -n "${DEPTH_TRACE:-}" ]; then
      trace=$(ls "$out/$t-$s"/*.blktrace.0)
      python3 "$here/kyber_write_depth.py" "$trace" 20000 10000 > "$out/$t-$s.depth"
      echo "target $t seed $s: writes in the drive per ${DEPTH_TRACE} ms (mean, most)"
      python3 "$here/kyber_write_depth.py" "$trace" 0 0 "$DEPTH_TRACE"
      rm -r "${out:?}/$t-$s"
    fi
  done
done
python3 - "$out" "$drive" $targets <<'PY'
import json, sys, glob, statistics as st
out, drive, targets = sys.argv[1], sys.argv[2], sys.argv[3:]

def cell(xs, fmt):
    m = st.median(xs)
    if min(xs) == max(xs):
        return fmt.format(m)
    return (fmt + " (" + fmt + "-" + fmt + ")").format(m, min(xs), max(xs))

def pct(d, q):
    for k in ("clat_ns", "lat_ns"):
        p = d.get(k, {}).get("percentile")
        if p:
            return p[f"{q:.6f}"] / 1e3
    return float("nan")

print(f"drive {drive}, median (range) over the seeds:")
print("| read_lat_nsec | seeds | reader mean us | p50 us | p90 us | p99 us | writer IOPS "
      "| writes in drive |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in targets:
    rl, r50, r90, r99, wi, dep = [], [], [], [], [], []
    files = sorted(glob.glob(f"{out}/{t}-*.json"))
    for f in files:
        d = json.load(open(f))
        d = d[0] if isinstance(d, list) else d
        for j in d["jobs"]:
            if j["jobname"] == "reader":
                rl.append(j["read"]["lat_ns"]["mean"] / 1e3)
                r50.append(pct(j["read"], 50))
                r90.append(pct(j["read"], 90))
                r99.append(pct(j["read"], 99))
            if j["jobname"] == "writer":
                wi.append(j["write"]["iops"])
        try:
            dep.append(float(open(f[:-5] + ".depth").read().split()[0]))
        except FileNotFoundError:
            pass
    if t == "none":
        name = "none (scheduler)"
    else:
        t = int(t)
        name = f"{t // 1000000} ms" if t >= 1000000 else f"{t // 1000} us"
    print(f"| {name} | {len(files)} | {cell(rl, '{:,.1f}')} | {cell(r50, '{:,.0f}')} | "
          f"{cell(r90, '{:,.0f}')} | {cell(r99, '{:,.0f}')} | {cell(wi, '{:,.0f}')} | "
          f"{cell(dep, '{:,.1f}') if dep else '-'} |")
PY
rm -r "$out"
