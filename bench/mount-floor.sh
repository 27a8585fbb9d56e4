#!/usr/bin/env bash
# The floor under `elevator mount`'s 4 KiB O_DIRECT reads at QD1 (issue 31's 0.85x target):
# the same fio job, round by round, on
#   backing   the backing file itself
#   memory    crates/mount/examples/fuse_floor.rs answering from memory (no backing I/O):
#             FUSE's round trip alone
#   pread     fuse_floor with one O_DIRECT pread of the backing file per read, on the FUSE
#             thread: the least a fuser daemon can do for the read
#   pread-async  fuse_floor --mode pread with FUSE_ASYNC_DIO, as the mount has it (only when
#             ONLY names it)
#   mount     `elevator mount --sched SCHED` over the backing file's directory
#   before    the same with the binary ELEVATOR_BEFORE (another build, to compare two
#             versions round by round; only when ONLY names it)
# The order of the configurations rotates from round to round. Prints, per configuration,
# the median and range of the IOPS, of fio's mean completion latency and of its median
# completion latency (us), and the ratio to the backing file's IOPS taken within each round.
#
# WORKLOAD=write-1m runs mount-overhead.sh's 1 MiB O_DIRECT writes at iodepth 8 instead
# (IOPS are then 1 MiB writes per second; the fuse_floor daemons do not write: use it with
# ONLY="backing mount before").
#
#   sudo bench/mount-floor.sh   (ROUNDS=5 RUNTIME=8 WORKLOAD=randread-qd1 WORKDIR=/var/tmp
#                                SCHED=none THREADS=4 ONLY="backing memory pread mount"
#                                EXTRA_MOUNT_ARGS= ELEVATOR_BEFORE= ELEVATOR=binary
#                                FLOOR=binary, else built here)
#
# On a machine others load, run it as `sudo chrt -f 10 bench/mount-floor.sh`: fio and the
# daemons (which inherit the policy) then run before the others' compilers, and the rounds
# agree (docs/mount.md gives both ways). Needs fio, /dev/fuse and fusermount3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null || ! command -v fio >/dev/null; then
    echo "mount-floor: skipped: needs /dev/fuse, fusermount3 and fio"
    exit 0
fi
rounds=${ROUNDS:-5}
runtime=${RUNTIME:-8}
workdir=${WORKDIR:-/var/tmp}
sched=${SCHED:-none}
threads=${THREADS:-4}
only=${ONLY:-backing memory pread mount}
workload=${WORKLOAD:-randread-qd1}
target=${CARGO_TARGET_DIR:-$root/target}
if [ -z "${ELEVATOR:-}" ]; then
    nice cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
fi
if [ -z "${FLOOR:-}" ]; then
    nice cargo build --release -q -p elevator-mount --example fuse_floor \
        --manifest-path "$root/Cargo.toml"
fi
elevator=${ELEVATOR:-$target/release/elevator}
floor=${FLOOR:-$target/release/examples/fuse_floor}
tmp=$(mktemp -d "$workdir/elevator-mount-floor.XXXXXX")
pids=()
cleanup() {
    for m in "$tmp"/mnt-*; do
        mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/back" "$tmp/mnt-memory" "$tmp/mnt-pread" "$tmp/mnt-pread-async" "$tmp/mnt-mount" \
    "$tmp/mnt-before"
dd if=/dev/urandom of="$tmp/back/f" bs=1M count=1024 status=none
sync

wait_mount() {
    for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.1; done
    echo "mount-floor: $1 did not mount" >&2
    cat "$tmp"/*.log >&2
    exit 1
}
case " $only " in *" memory "*)
    "$floor" "$tmp/back/f" "$tmp/mnt-memory" --mode memory --threads "$threads" \
        2>>"$tmp/memory.log" &
    pids+=($!); wait_mount "$tmp/mnt-memory" ;;
esac
case " $only " in *" pread "*)
    "$floor" "$tmp/back/f" "$tmp/mnt-pread" --mode pread --threads "$threads" \
        2>>"$tmp/pread.log" &
    pids+=($!); wait_mount "$tmp/mnt-pread" ;;
esac
case " $only " in *" pread-async "*)
    "$floor" "$tmp/back/f" "$tmp/mnt-pread-async" --mode pread --threads "$threads" \
        --async-dio 2>>"$tmp/pread-async.log" &
    pids+=($!); wait_mount "$tmp/mnt-pread-async" ;;
esac
case " $only " in *" mount "*)
    # shellcheck disable=SC2086
    "$elevator" mount "$tmp/back" "$tmp/mnt-mount" --sched "$sched" --threads "$threads" \
        ${EXTRA_MOUNT_ARGS:-} 2>>"$tmp/mount.log" &
    pids+=($!); wait_mount "$tmp/mnt-mount" ;;
esac
case " $only " in *" before "*)
    # shellcheck disable=SC2086
    "${ELEVATOR_BEFORE:?before needs ELEVATOR_BEFORE}" mount "$tmp/back" "$tmp/mnt-before" \
        --sched "$sched" --threads "$threads" ${EXTRA_MOUNT_ARGS:-} 2>>"$tmp/before.log" &
    pids+=($!); wait_mount "$tmp/mnt-before" ;;
esac

path_of() {
    case "$1" in
    backing) echo "$tmp/back/f" ;;
    *) echo "$tmp/mnt-$1/f" ;;
    esac
}

echo "mount-floor: $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results="$tmp/results"
: >"$results"
case "$workload" in
randread-qd1) job="--rw=randread --bs=4k --ioengine=psync --iodepth=1" ;;
write-1m) job="--rw=write --bs=1m --ioengine=libaio --iodepth=8" ;;
*) echo "mount-floor: WORKLOAD must be randread-qd1 or write-1m" >&2; exit 1 ;;
esac
echo "mount-floor: $workload" >&2
read -r -a configs <<<"$only"
n=${#configs[@]}
for r in $(seq "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        c=${configs[$(((i + r - 1) % n))]}
        # shellcheck disable=SC2086
        fio --name=floor --filename="$(path_of "$c")" $job --direct=1 --size=1g --time_based \
            --runtime="$runtime" --output-format=json |
            python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]
r=j["read"] if j["read"]["io_bytes"] else j["write"]
print(sys.argv[1], sys.argv[2], r["iops"], r["clat_ns"]["mean"] / 1e3,
      r["clat_ns"]["percentile"]["50.000000"] / 1e3)' "$r" "$c" >>"$results"
    done
    echo "mount-floor: round $r done, $(date -u +%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$results" "$only" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
configs = sys.argv[2].split()
by = {}
for r, c, iops, lat, p50 in rows:
    by.setdefault(c, {})[int(r)] = (float(iops), float(lat), float(p50))
def fmt(xs, f):
    return f"{f(statistics.median(xs))} ({f(min(xs))}-{f(max(xs))})"
print(f"{'config':8} {'IOPS':>24} {'mean latency us':>22} {'median latency us':>22} "
      f"{'/ backing IOPS':>18}")
for c in configs:
    d = by.get(c, {})
    iops = [v[0] for v in d.values()]
    lat = [v[1] for v in d.values()]
    p50 = [v[2] for v in d.values()]
    us = lambda x: f"{x:.0f}"
    line = (f"{c:8} {fmt(iops, lambda x: f'{x:,.0f}'):>24} {fmt(lat, us):>22} "
            f"{fmt(p50, us):>22}")
    if "backing" in by and c != "backing":
        ratio = [d[r][0] / by["backing"][r][0] for r in d if r in by["backing"]]
        line += f" {fmt(ratio, lambda x: f'{x:.2f}'):>18}"
    print(line)
# The bound at QD1 (issue 31), estimated: a daemon that adds nothing to FUSE's round trip
# (`memory`) but one read of the backing file completes a read in about the two latencies'
# sum, so its IOPS over the backing file's are about backing / (backing + round trip), per
# round. The `pread` row measures that daemon directly (some of the two costs overlap, so it
# can come out a few points above the estimate).
if "backing" in by and "memory" in by:
    b, m = by["backing"], by["memory"]
    rounds = [r for r in b if r in m]
    bound = [b[r][1] / (b[r][1] + m[r][1]) for r in rounds]
    allowed = [b[r][1] * 0.15 / 0.85 for r in rounds]
    print(f"estimated bound at QD1: backing / (backing + memory round trip), mean latencies: "
          f"{fmt(bound, lambda x: f'{x:.2f}')}; a 0.85x mount needs a round trip under "
          f"{fmt(allowed, lambda x: f'{x:.0f}')} us, FUSE's alone is "
          f"{fmt([m[r][1] for r in rounds], lambda x: f'{x:.0f}')} us")
PY
echo "mount-floor: end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
