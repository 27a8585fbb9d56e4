#!/usr/bin/env bash
# Wall time of a sweep (4 antic_expire values x 5 seeds on Morton's scenario) on every core
# and on one thread, interleaved round by round; prints each run, then medians and ranges.
# Usage: bench/sweep-scaling.sh [ROUNDS]   (default 5; needs a release build)
# On a shared, loaded machine set PREFIX to run ahead of the other work, e.g.
# PREFIX="nice -n -19" or PREFIX="chrt -f 50" (root): otherwise the CPUs are the other
# processes' and one thread is as fast as two.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/elevator
read -r -a prefix <<< "${PREFIX:-}"
rounds=${1:-5}
args=(sim anticipatory --sched anticipatory --sweep anticipatory.antic_expire=0,2,4,8
      --sweep seed=1..5 --metric compile.seconds --json -)
date -u; uptime; nproc
run() { # $1: RAYON_NUM_THREADS ("" = every core); prints seconds
  local t0 t1
  t0=$(date +%s.%N)
  if [ -n "$1" ]; then RAYON_NUM_THREADS=$1 "${prefix[@]}" "$bin" "${args[@]}" > "/tmp/sweep-$1.json" 2>/dev/null
  else "${prefix[@]}" "$bin" "${args[@]}" > /tmp/sweep-all.json 2>/dev/null; fi
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
all=(); one=()
for r in $(seq "$rounds"); do
  a=$(run ""); o=$(run 1)
  all+=("$a"); one+=("$o")
  echo "round $r: all cores ${a} s, one thread ${o} s ($(cut -d' ' -f1-3 /proc/loadavg))"
done
cmp /tmp/sweep-all.json /tmp/sweep-1.json && echo "results identical"
stats() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "median %.2f s (%.2f-%.2f)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "all cores:  $(stats "${all[@]}")"
echo "one thread: $(stats "${one[@]}")"
uptime
