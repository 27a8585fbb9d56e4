#!/usr/bin/env bash
# Goyal's IO-controller comparison (Sept 2009) with real processes in groups on his disk:
# group /a = 16 sequential readers, group /b = n (n = 1, 2, 4, 8, 16), equal weights, each
# reader a real `dd` reading its own file through `elevator mount --drive ibm18es` (the
# emulated 7200 rpm disk `elevator reproduce io-controller` simulated until branch seeds6;
# the reproduce now runs on laptop-4200: DRIVE=laptop-4200), under each scheduler; B's
# share of the bandwidth beside Goyal's and the simulator's (docs/emulation.md).
#
#   bench/goyal-emulated.sh      (root; ROUNDS=3 DRIVE=ibm18es RUNTIME=15 WARM=2
#                                 NS="1 2 4 8 16" SCHEDS="cfq-flat cfq bfq" IO=direct
#                                 SET="")
#
# SET="low_latency=0" (space-separated TUNABLE=V) sets tunables of the schedulers, in the
# mount and in the simulator alike (`--set`): BFQ's documentation asks for low_latency off
# where group weights are to be controlled (its weight raising multiplies queues' weights).
#
# The readers: `dd bs=4k iflag=direct` (IO=direct, the default: one 4 KiB read at a time,
# as the simulator's fio readers; IO=buffered drops iflag=direct: the kernel's readahead then
# makes the requests), started through symlinks named readA and readB so that their
# /proc/PID/comm puts them in the groups (`--group readA=/a --group readB=/b`, each group at
# the scheduler's default weight, as Goyal's equal weights). Their files are sparse files on
# tmpfs (no memory used; the model gives the time), 1/100 of the drive each: the mount places
# a file on the drive when first touched, and files of 8 MiB and more from 60% of the drive
# on (crates/real/src/emulate.rs, Layout), so the 17-32 files lie side by side there (the
# simulator's readers lie at 1/40 of the drive apart over 80% of it: the seeks here are
# shorter; the bench also simulates this placement).
#
# Each reader's bytes come from dd's own count (SIGUSR1 prints it) at WARM s after the
# start and RUNTIME s later: bandwidth over the same RUNTIME s for every reader. Every run
# mounts afresh (new drive state). The order of the schedulers and of n rotates from round
# to round. Raw figures: $OUT (default bench/results/goyal-emulated.csv), the table's figures
# in the same name's .json; the simulator's for the same n, schedulers and both placements
# are computed with `elevator sim` (its seeds 1-3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
bench=goyal-emulated
# shellcheck source=bench/lib/emulated.sh
source "$here/lib/emulated.sh"
emu_require
rounds=${ROUNDS:-3}
drive=${DRIVE:-ibm18es}
runtime=${RUNTIME:-15}
warm=${WARM:-2}
io=${IO:-direct}
read -r -a ns <<<"${NS:-1 2 4 8 16}"
read -r -a scheds <<<"${SCHEDS:-cfq-flat cfq bfq}"
out=${OUT:-$here/results/goyal-emulated.csv}
sets=()
for kv in ${SET:-}; do sets+=(--set "$kv"); done

emu_binary
back=$(mktemp -d /dev/shm/elevator-goyal.XXXXXX)
mnt=$(mktemp -d)
bin=$(mktemp -d)
daemon=""
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    for _ in $(seq 50); do
        mountpoint -q "$mnt" 2>/dev/null || break
        fusermount3 -u "$mnt" 2>/dev/null || sleep 0.2
    done
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    rm -rf "$back" "$mnt" "$bin"
}
trap cleanup EXIT

ln -s "$(command -v dd)" "$bin/readA"
ln -s "$(command -v dd)" "$bin/readB"
cap_bytes=$(( $("$elevator" drive show "$drive" | sed -n 's/^# capacity \([0-9]*\) sectors.*/\1/p') * 512 ))
fsize=$((cap_bytes / 100 / 1048576 * 1048576))
for i in $(seq 0 15); do truncate -s "$fsize" "$back/a$i" "$back/b$i"; done
flag=""
[ "$io" = direct ] && flag="iflag=direct"
echo "settings: ${SET:-defaults}; drive $drive ($((cap_bytes / 1000000)) MB), files of $((fsize / 1048576)) MiB, dd bs=4k $flag; ${runtime} s measured after ${warm} s; kernel $(uname -r)"

# The bytes dd last reported in its stderr file $1 (0 before its first report).
dd_bytes() {
    local b
    b=$(grep -o '^[0-9]* bytes' "$1" | tail -n1 | cut -d' ' -f1 || true)
    echo "${b:-0}"
}

# One run: scheduler $1, n = $2; appends a CSV line.
run() {
    local s=$1 n=$2 log errs i k f
    log=$(mktemp)
    errs=$(mktemp -d)
    mount_emulated "$s" "$log" "${sets[@]}" --group readA=/a --group readB=/b
    pids=()
    for i in $(seq 0 15); do
        "$bin/readA" if="$mnt/a$i" of=/dev/null bs=4k $flag 2>"$errs/a$i" &
        pids+=($!)
    done
    for i in $(seq 0 $((n - 1))); do
        "$bin/readB" if="$mnt/b$i" of=/dev/null bs=4k $flag 2>"$errs/b$i" &
        pids+=($!)
    done
    sleep "$warm"
    local t0 t1
    t0=$(date +%s.%N)
    for p in "${pids[@]}"; do kill -USR1 "$p"; done
    sleep 1
    for f in "$errs"/*; do dd_bytes "$f" >"$f.0"; done
    sleep "$(echo "$runtime - 1" | bc -l)"
    t1=$(date +%s.%N)
    for p in "${pids[@]}"; do kill -USR1 "$p"; done
    sleep 1
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
    umount_emulated
    local a=() b=()
    for i in $(seq 0 15); do
        a+=($(($(dd_bytes "$errs/a$i") - $(cat "$errs/a$i.0"))))
    done
    for i in $(seq 0 $((n - 1))); do
        b+=($(($(dd_bytes "$errs/b$i") - $(cat "$errs/b$i.0"))))
    done
    read -r l1 l2 l3 <<<"$(emu_lateness "$log")"
    grep -h "warning" "$log" >&2 || true
    printf '%s,%s,%s,%.3f,%s,%s,%s,%s,%s,%s,%s\n' "$r" "$s" "$n" "$(echo "$t1 - $t0" | bc -l)" \
        "$(IFS=' '; echo "${a[*]}")" "$(IFS=' '; echo "${b[*]}")" "$l1" "$l2" "$l3" \
        "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%H:%M:%S)" | tee -a "$out"
    rm -rf "$log" "$errs"
}

mkdir -p "$(dirname "$out")"
echo "round,sched,n,elapsed_s,a_bytes,b_bytes,late_med_us,late_p99_us,late_max_us,load1,utc" >"$out"
echo "load before: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
nn=${#ns[@]}
m=${#scheds[@]}
for r in $(seq 1 "$rounds"); do
    for j in $(seq 0 $((nn - 1))); do
        n=${ns[$(((j + r - 1) % nn))]}
        for i in $(seq 0 $((m - 1))); do
            run "${scheds[$(((i + r - 1) % m))]}" "$n"
        done
    done
done
echo "load after: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"

# The simulator: the io-controller scenario (Goyal's placement: files at 1/40 of the drive)
# and this bench's placement (files of 1/100 from 60% on), seeds 1-3.
simdir=$(mktemp -d)
simcsv="${out%.csv}.sim.csv"
echo "placement,sched,n,seed,a_bytes,b_bytes" >"$simcsv"
for place in goyal emulated; do
    for n in "${ns[@]}"; do
        f="$simdir/$place-$n.toml"
        python3 "$here/goyal_emulated_table.py" --scenario "$place" "$n" "$drive" "$runtime" >"$f"
        for seed in 1 2 3; do
            for s in "${scheds[@]}"; do
                "$elevator" sim "$f" --sched "$s" "${sets[@]}" --seed "$seed" --json "$simdir/o.json" >/dev/null 2>&1
                python3 "$here/goyal_emulated_table.py" --sim-json "$simdir/o.json" |
                    sed "s/^/$place,$s,$n,$seed,/" >>"$simcsv"
            done
        done
    done
done
rm -rf "$simdir"
python3 "$here/goyal_emulated_table.py" --table "$out" "$simcsv" --json "${out%.csv}.json"
