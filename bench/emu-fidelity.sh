#!/usr/bin/env bash
# Fidelity of the emulated drive: the same fio job file in the simulator and on the emulated
# drive (real clock, data in a file on tmpfs), compared job by job (docs/emulation.md).
#
#   bench/emu-fidelity.sh [JOB.fio ...]   (ROUNDS=3 DRIVE=laptop-4200 SCHEDS=deadline,anticipatory,cfq,bfq)
#
# Per job file: one simulator run per scheduler (deterministic), then ROUNDS emulated runs,
# the schedulers' order rotated from round to round. With root the emulated runs are given
# SCHED_FIFO 50 (chrt), so the emulator's timer wake-ups are not queued behind the host's
# other work. Prints bench/emu_fidelity.py's tables, the load and the date.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
rounds=${ROUNDS:-3}
drive=${DRIVE:-laptop-4200}
scheds=${SCHEDS:-deadline,anticipatory,cfq,bfq}
work=${WORKDIR:-/dev/shm}
jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || jobs=("$here/jobs/emu-reader-writer.fio" "$here/jobs/emu-compile.fio")
cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="${CARGO_TARGET_DIR:-$root/target}/release/elevator"
rt=()
if [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then rt=(chrt -f 50); fi
tmp=$(mktemp -d)
target="$work/elevator-emu-fidelity.$$.dat"
trap 'rm -rf "$tmp"; rm -f "$target"' EXIT
IFS=, read -r -a list <<<"$scheds"
n=${#list[@]}
echo "load before: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
for job in "${jobs[@]}"; do
    name=$(basename "$job" .fio)
    "$elevator" sim "$job" --drive "$drive" --sched "$scheds" --output-format json \
        >"$tmp/$name.sim.json"
    for r in $(seq 1 "$rounds"); do
        order=()
        for i in $(seq 0 $((n - 1))); do order+=("${list[$(((i + r - 1) % n))]}"); done
        for s in "${order[@]}"; do
            "${rt[@]}" "$elevator" run "$job" --target "$target" --drive "$drive" --sched "$s" \
                --output-format json --output "$tmp/$name.$r.$s.json" --allow-overwrite ||
                echo "emu-fidelity: $name round $r $s: the run failed (see above)" >&2
        done
        # One document per round, the schedulers in the simulator's order.
        python3 - "$tmp/$name.$r" "$scheds" >"$tmp/$name.emu.$r.json" <<'PY'
import json, sys
prefix, scheds = sys.argv[1], sys.argv[2].split(",")
runs = []
for s in scheds:
    try:
        with open(f"{prefix}.{s}.json") as f:
            runs.append(json.load(f))
    except (OSError, ValueError):
        pass
print(json.dumps({"runs": runs}))
PY
    done
    echo "== $name on $drive ($rounds emulated rounds)"
    python3 "$here/emu_fidelity.py" "$tmp/$name.sim.json" "$tmp"/"$name".emu.*.json
done
echo "load after: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
