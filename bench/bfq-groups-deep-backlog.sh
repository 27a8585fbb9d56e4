#!/usr/bin/env bash
# bfq's group weights under a backlog deeper than the scheduler tags: the kernel's bfq
# against ours (docs/bfq.md, "6.18's depths under a deep backlog", branch kfid43). Two cgroup
# v1 blkio groups, blkio.bfq.weight 100 (/a) and 300 (/b), on one loop device (losetup
# --direct-io=on over a file) under bfq with its own 256 scheduler tags; fio libaio 128 KiB
# O_DIRECT reads, four shapes: one job per group 1024 deep (one) or four 128 deep (four),
# random (rand) or sequential (seq), each wanting more requests than there are tags. Rounds
# interleave the shapes; then the same with the loop device's driver tags cut to 4 (under
# none, nr_requests 4, then bfq again), a device that takes 4 requests at a time. Prints
# /b's share of the bytes read (fio's io_bytes) per shape: median (range) over the rounds,
# and the start time and load average of each round. Then ours: `elevator sim` on the same
# jobs (SIM_RUNTIME simulated seconds, default 2; deterministic) with the defaults (6.9's
# per-word depths) and with whole_map_depths and tag_sleepers (6.18's).
#
#   sudo bench/bfq-groups-deep-backlog.sh [BACKING_FILE]   (default: /var/tmp/elevator-bfq-groups.img, 4 GiB)
#
# Needs root (losetup, cgroup v1 blkio with blkio.bfq.weight), fio and python3; skips with a
# message otherwise. ROUNDS (default 3), RUNTIME (seconds per run, default 30), SIM (0: skip
# ours). Undoes what it set: the device's driver tags and scheduler, the device, the groups.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
backing=${1:-/var/tmp/elevator-bfq-groups.img}
rounds=${ROUNDS:-3}
runtime=${RUNTIME:-30}
sim_runtime=${SIM_RUNTIME:-2}
blkio=/sys/fs/cgroup/blkio
if [ "$(id -u)" != 0 ] || ! command -v fio >/dev/null || ! command -v losetup >/dev/null \
    || ! command -v python3 >/dev/null || [ ! -d "$blkio" ]; then
    echo "bfq-groups-deep-backlog: skipped: needs root, fio, losetup, python3 and cgroup v1 blkio"
    exit 0
fi
elevator=${ELEVATOR:-$root/target/release/elevator}
if [ -z "${ELEVATOR:-}" ] && [ "${SIM:-1}" != 0 ]; then
    cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
fi
tmp=$(mktemp -d)
# Written through, not sparse: a hole or an unwritten extent reads back without disk I/O.
[ -s "$backing" ] || dd if=/dev/urandom of="$backing" bs=1M count=4096 oflag=direct status=none
dev=$(losetup --find --show --direct-io=on "$backing")
name=$(basename "$dev")
majmin=$(cat "/sys/block/$name/dev")
q=/sys/block/$name/queue
cg_a=$blkio/elevator-bfq-groups-a-$$ cg_b=$blkio/elevator-bfq-groups-b-$$
# Writing nr_requests under none resizes the driver tags; writing the value it shows is a
# no-op, so one less first (docs/kernel-recording.md, "regrow_driver_tags").
driver_tags() {
    echo none >"$q/scheduler"
    echo $(($1 - 1)) >"$q/nr_requests"
    echo "$1" >"$q/nr_requests"
    echo bfq >"$q/scheduler"
}
cleanup() {
    driver_tags 128 2>/dev/null || true
    echo none >"$q/scheduler" 2>/dev/null || true
    losetup -d "$dev" 2>/dev/null || true
    rmdir "$cg_a" "$cg_b" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg_a" "$cg_b"
echo 100 >"$cg_a/blkio.bfq.weight"
echo 300 >"$cg_b/blkio.bfq.weight"
echo "bfq-groups-deep-backlog: $dev ($majmin) over $backing; $(uname -r)"

# job RW NJOBS DEPTH RUNTIME KIND: the two groups' jobs; KIND kernel (fio's cgroup options,
# numjobs) or sim (elevator_weight, each copy spelt out).
job() {
    local rw=$1 nj=$2 qd=$3 rt=$4 kind=$5 g w base i
    printf '[global]\ndirect=1\nioengine=libaio\nbs=128k\niodepth=%s\nrw=%s\n' "$qd" "$rw"
    printf 'time_based=1\nruntime=%s\n' "$rt"
    for g in a b; do
        if [ $g = a ]; then w=100 base=0; else w=300 base=2048; fi
        for ((i = 0; i < nj; i++)); do
            printf '[%s%d]\noffset=%dm\nsize=%dm\n' $g $i $((base + i * 2048 / nj)) $((2048 / nj))
            if [ "$kind" = kernel ]; then
                printf 'randrepeat=0\ncgroup=%s\ncgroup_nodelete=1\n' "$(basename "$([ $g = a ] && echo "$cg_a" || echo "$cg_b")")"
            else
                printf 'filename=/dev/loop0\nelevator_cgroup=/%s\nelevator_weight=%s\n' $g $w
            fi
        done
    done
}
shapes=("one-rand randread 1 1024" "four-rand randread 4 128" "one-seq read 1 1024" "four-seq read 4 128")
: >"$tmp/rows"
for tags in 128 4; do
    driver_tags "$tags"
    for ((r = 1; r <= rounds; r++)); do
        for s in "${shapes[@]}"; do
            set -- $s
            job "$2" "$3" "$4" "$runtime" kernel >"$tmp/$1.fio"
            start=$(date -u +%H:%M:%S) load=$(cut -d' ' -f1 /proc/loadavg)
            fio --output-format=json --output="$tmp/out.json" --filename="$dev" "$tmp/$1.fio"
            python3 - "$tmp/out.json" "$tags" "$1" "$start" "$load" >>"$tmp/rows" <<'EOF'
import json, sys
out, tags, shape, start, load = sys.argv[1:]
jobs = json.load(open(out))["jobs"]
a = sum(j["read"]["io_bytes"] for j in jobs if j["jobname"].startswith("a"))
b = sum(j["read"]["io_bytes"] for j in jobs if j["jobname"].startswith("b"))
print(tags, shape, b / (a + b), start, load)
EOF
        done
    done
done
python3 - "$tmp/rows" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tags, shape, share, start, load = line.split()
    rows.setdefault((int(tags), shape), []).append((float(share), start, load))
print("kernel: /b's share of the bytes read, median (range); rounds' starts (UTC) and load")
for (tags, shape), v in sorted(rows.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
    s = [x[0] for x in v]
    print(f"  {tags:3} driver tags {shape:9} {statistics.median(s):.3f} "
          f"({min(s):.3f}-{max(s):.3f})  " + " ".join(f"{x[1]}/{x[2]}" for x in v))
EOF
[ "${SIM:-1}" != 0 ] || exit 0
echo "ours (elevator sim, $sim_runtime s simulated, deterministic): /b's share per word / 6.18 rules"
for s in "${shapes[@]}"; do
    set -- $s
    job "$2" "$3" "$4" "$sim_runtime" sim >"$tmp/$1.sim.fio"
    shares=()
    for rules in "" "--set bfq.whole_map_depths=1 --set bfq.tag_sleepers=1"; do
        # shellcheck disable=SC2086
        "$elevator" sim "$tmp/$1.sim.fio" --sched bfq --output-format json $rules >"$tmp/sim.json"
        shares+=("$(python3 -c '
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
a = sum(j["read"]["io_bytes"] for j in jobs if j["jobname"].startswith("a"))
b = sum(j["read"]["io_bytes"] for j in jobs if j["jobname"].startswith("b"))
print(f"{b / (a + b):.3f}")' "$tmp/sim.json")")
    done
    echo "  $1: ${shares[0]} / ${shares[1]}"
done
