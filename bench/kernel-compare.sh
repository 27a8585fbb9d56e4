#!/usr/bin/env bash
# The kernel's schedulers against ours on the same job files, the same direct-io loop device,
# in one run: W1 (1 MiB streaming writer at iodepth 32 + dependent 4 KiB random reader, psync)
# and W2 (the same writer + dependent 64 KiB sequential reader).
#
#   sudo bench/kernel-compare.sh [JOB.fio ...]     (default: bench/jobs/w1.fio bench/jobs/w2.fio)
#
# For each job file: fio under the kernel's none, mq-deadline, kyber and bfq (default
# tunables), then `elevator run` with the kernel set to none under each of OURS (default
# none,deadline,anticipatory,bfq,latency-guard; --set arguments in OURS_SET apply to all).
# Prints one table: the reader alone (its ceiling), then reader IOPS and mean latency, writer
# MB/s, each against the kernel's none, and whether a kernel scheduler dominates ours on
# (reader IOPS, writer MB/s).
#
# Needs root (losetup, sysfs) and fio; skips with a message without either. The loop device's
# backing file (9 GiB) goes in WORKDIR (default /var/tmp) and is removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ "$(id -u)" != 0 ]; then
    echo "kernel-compare: skipped: needs root (losetup, /sys/block/*/queue/scheduler)"
    exit 0
fi
if ! command -v fio >/dev/null; then
    echo "kernel-compare: skipped: fio is not installed (apt-get install -y fio)"
    exit 0
fi
jobs=("$@")
[ ${#jobs[@]} -eq 0 ] && jobs=("$here/jobs/w1.fio" "$here/jobs/w2.fio")
ours=${OURS:-none,deadline,anticipatory,bfq,latency-guard}
ours_set=${OURS_SET:-}
kernel=(none mq-deadline kyber bfq)
workdir=${WORKDIR:-/var/tmp}

cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="$root/target/release/elevator"
tmp=$(mktemp -d)
backing="$workdir/elevator-kernel-compare.$$.img"
loop=""
cleanup() {
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
    rm -f "$backing"
    rm -rf "$tmp"
}
trap cleanup EXIT
truncate -s 9G "$backing"
loop=$(losetup --find --show --direct-io=on --sector-size 4096 "$backing")
dev=$(basename "$loop")
if [ "$(cat /sys/block/$dev/loop/dio)" != 1 ]; then
    echo "kernel-compare: warning: $loop is not doing direct I/O"
fi
echo "loop device $loop (direct-io) over $backing; kernel $(uname -r)"
# Lay the device out once so reads hit allocated blocks.
fio --name=layout --filename="$loop" --rw=write --bs=1m --size=9g --direct=1 \
    --ioengine=io_uring --iodepth=16 --output=/dev/null

for job in "${jobs[@]}"; do
    w=$(basename "$job" .fio)
    # The reader alone (kernel none): the ceiling no scheduler can beat.
    echo none >"/sys/block/$dev/queue/scheduler"
    echo "  $w: fio, reader alone"
    fio --output-format=json --filename="$loop" --section=reader "$job" >"$tmp/$w-alone.json"
    for k in "${kernel[@]}"; do
        echo "$k" >"/sys/block/$dev/queue/scheduler"
        echo "  $w: fio, kernel $k"
        fio --output-format=json --filename="$loop" "$job" >"$tmp/$w-kernel-$k.json"
    done
    echo none >"/sys/block/$dev/queue/scheduler"
    echo "  $w: elevator run --sched $ours"
    set_args=()
    for s in $ours_set; do set_args+=(--set "$s"); done
    # The device is this script's own scratch loop device: writing over it is intended.
    "$elevator" run "$job" --target "$loop" --sched "$ours" --allow-overwrite \
        "${set_args[@]}" --output-format json --output "$tmp/$w-ours.json"
done
python3 "$here/compare_table.py" "$tmp" "${kernel[*]}" "${jobs[@]}"
