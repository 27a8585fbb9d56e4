#!/usr/bin/env bash
# io.cost's model line: `elevator calibrate --iocost` against the kernel tree's own
# tools/cgroup/iocost_coef_gen.py, on the same loop device (direct I/O over a file), in
# interleaved rounds. Prints each round's six coefficients and wall time, then the medians and
# our median over the kernel tool's, per coefficient (docs/iocost.md has the table).
#
#   sudo bench/iocost-coef.sh COEF_GEN.py [ROUNDS] [SECONDS_PER_POINT]
#
# COEF_GEN.py: the kernel tree's tools/cgroup/iocost_coef_gen.py (not shipped here: take it
# from the kernel source you follow; it needs fio, pv, findmnt and dd). It writes over the
# whole device, so this script makes its own loop device over a 2 GiB file
# ($IOCOST_IMG, default /var/tmp/iocost-loop.img) unless LOOP=/dev/loopN names one that may
# be overwritten. Each tool measures six points of SECONDS_PER_POINT (default 10) each; ours
# runs the io.cost.qos sweep too unless SWEEP=none (the sweep's drive: SWEEP, default
# samsung-980pro-1tb). The script runs fio with the device's scheduler at `none` and
# `nomerges` at 1 and restores them after; ours runs under the same two settings unless
# MATCH_QUEUE=0 (the kernel still queues and may merge what we submit below our block layer).
# Both submit through Linux native AIO, one io_submit per I/O (the script's fio: libaio;
# calibrate --iocost: elevator_real::AioBackend); docs/iocost.md ("The engine") shows why
# io_uring measures a loop device faster.
set -euo pipefail

COEF_GEN=${1:?usage: bench/iocost-coef.sh COEF_GEN.py [ROUNDS] [SECONDS_PER_POINT]}
ROUNDS=${2:-3}
SECS=${3:-10}
SWEEP=${SWEEP:-samsung-980pro-1tb}
IMG=${IOCOST_IMG:-/var/tmp/iocost-loop.img}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${ELEVATOR:-$ROOT/target/release/elevator}
OUT=${OUT:-/tmp/iocost-coef}
mkdir -p "$OUT"

[ -x "$BIN" ] || { echo "build first: cargo build --release -p elevator" >&2; exit 1; }
if [ -z "${LOOP:-}" ]; then
    [ -f "$IMG" ] || dd if=/dev/zero of="$IMG" bs=16M count=128 oflag=direct status=none
    LOOP=$(losetup --direct-io=on --show -f "$IMG")
    trap 'losetup -d "$LOOP"' EXIT
fi
echo "# $(date -u +%FT%TZ) device $LOOP ($(cat /sys/block/$(basename "$LOOP")/loop/backing_file)), dio=$(cat /sys/block/$(basename "$LOOP")/loop/dio), $ROUNDS rounds, $SECS s a point"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

MATCH_QUEUE=${MATCH_QUEUE:-1}
# Seconds to rest (after a sync) before each tool: the loop device's writes land on a file of
# the VM's own disk, whose write speed swings after a minute of writing. Without the rest
# (2026-11-29 17:06 UTC) the tool that ran second measured random writes at a sixth and a
# quarter of the first's in two rounds of three; with 30 s (17:13 UTC) the script's own
# random-write figures spread over 9,338-11,233 instead of 2,758-10,023. COOL=0 for none.
COOL=${COOL:-30}
QDIR=/sys/block/$(basename "$LOOP")/queue
queue_as_script() {
    SAVED_SCHED=$(sed 's/.*\[\(.*\)\].*/\1/' "$QDIR/scheduler")
    SAVED_NOMERGES=$(cat "$QDIR/nomerges")
    echo none > "$QDIR/scheduler"
    echo 1 > "$QDIR/nomerges"
}
queue_restore() {
    echo "$SAVED_SCHED" > "$QDIR/scheduler"
    echo "$SAVED_NOMERGES" > "$QDIR/nomerges"
}
echo "# queue: scheduler $(cat "$QDIR/scheduler"), nomerges $(cat "$QDIR/nomerges"); ours under none/nomerges=1: $MATCH_QUEUE"

for r in $(seq 1 "$ROUNDS"); do
    # Alternate which tool goes first.
    if [ $((r % 2)) -eq 1 ]; then order="kernel ours"; else order="ours kernel"; fi
    for who in $order; do
        sync
        sleep "$COOL"
        start=$(date +%s.%N)
        if [ "$who" = kernel ]; then
            python3 "$COEF_GEN" --testdev "$LOOP" --duration "$SECS" --quiet \
                | tail -1 > "$OUT/kernel-$r.txt"
        else
            [ "$MATCH_QUEUE" = 1 ] && queue_as_script
            "$BIN" calibrate --target "$LOOP" --iocost --allow-overwrite \
                --duration $((SECS * 6)) --drive "$SWEEP" --json "$OUT/ours-$r.json" \
                > "$OUT/ours-$r.txt" 2> "$OUT/ours-$r.log"
            [ "$MATCH_QUEUE" = 1 ] && queue_restore
        fi
        end=$(date +%s.%N)
        echo "$who $r $(echo "$end - $start" | bc) s load $(cut -d' ' -f1 /proc/loadavg): $(grep -o 'rbps=.*wrandiops=[0-9]*' "$OUT/$who-$r.txt" | head -1)"
    done
done | tee "$OUT/rounds.txt"

python3 - "$OUT/rounds.txt" <<'EOF'
import re, statistics, sys
rows = {"kernel": [], "ours": []}
wall = {"kernel": [], "ours": []}
rounds = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+) (\d+) ([\d.]+) s load [\d.]+: (.*)", line)
    if not m:
        continue
    who, rnd, secs, fields = m.groups()
    vals = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
    rows[who].append(vals)
    rounds.setdefault(rnd, {})[who] = vals
    wall[who].append(float(secs))
keys = ["rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops"]
print(f"| coefficient | iocost_coef_gen.py (median, range) | calibrate --iocost (median, range) | ours / kernel |")
print("|---|---|---|---|")
for k in keys:
    kv = [r[k] for r in rows["kernel"] if k in r]
    ov = [r[k] for r in rows["ours"] if k in r]
    if not kv or not ov:
        continue
    km, om = statistics.median(kv), statistics.median(ov)
    print(f"| {k} | {km:.0f} ({min(kv)}-{max(kv)}) | {om:.0f} ({min(ov)}-{max(ov)}) | {om / km:.2f} |")
print()
print("ours / kernel within each round:")
for rnd in sorted(rounds, key=int):
    both = rounds[rnd]
    if "kernel" in both and "ours" in both:
        print(f"round {rnd}: " + " ".join(f"{k} {both['ours'][k] / both['kernel'][k]:.2f}" for k in keys if k in both["ours"] and both["kernel"].get(k)))
for who in ("kernel", "ours"):
    if wall[who]:
        print(f"wall {who}: median {statistics.median(wall[who]):.0f} s ({min(wall[who]):.0f}-{max(wall[who]):.0f})")
EOF
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
