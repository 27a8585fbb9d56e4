#!/usr/bin/env bash
# The kernel's schedulers against ours on the same job files and the same target, in one run:
# W1 (1 MiB streaming writer at iodepth 32 + dependent 4 KiB random reader, psync) and W2 (the
# same writer + dependent 64 KiB sequential reader).
#
#   sudo bench/kernel-compare.sh [JOB.fio ...]     (default: bench/jobs/w1.fio bench/jobs/w2.fio)
#   sudo TARGET=file bench/kernel-compare.sh       (a file instead of a loop device)
#
# TARGET=loop (default): a direct-io loop device over a file in WORKDIR; the kernel's scheduler
# is the loop device's. TARGET=file: a file in WORKDIR itself, read and written with O_DIRECT;
# the kernel's scheduler is that of the disk holding WORKDIR's filesystem, switched for the
# kernel runs, set to none for ours, and restored at the end.
#
# For each job file: fio under the kernel's none, mq-deadline, kyber and bfq (default
# tunables), then `elevator run` with the kernel set to none under each of OURS (default
# none,mq-deadline,kyber,deadline,anticipatory,bfq,latency-guard; --set arguments in OURS_SET
# apply to all).
# Prints one table: the reader alone (its ceiling), then reader IOPS and mean latency, writer
# MB/s, each against the kernel's none, and whether a kernel scheduler dominates ours on
# (reader IOPS, writer MB/s).
#
# Needs root (losetup, sysfs) and fio; skips with a message without either. The 9 GiB file (the
# loop device's backing file, or the target itself) goes in WORKDIR (default /var/tmp) and is
# removed at the end.
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
ours=${OURS:-none,mq-deadline,kyber,deadline,anticipatory,bfq,latency-guard}
ours_set=${OURS_SET:-}
kernel=(none mq-deadline kyber bfq)
workdir=${WORKDIR:-/var/tmp}
mode=${TARGET:-loop}
case "$mode" in
loop | file) ;;
*)
    echo "kernel-compare: TARGET must be loop or file, not '$mode'" >&2
    exit 2
    ;;
esac

cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="$root/target/release/elevator"
tmp=$(mktemp -d)
backing="$workdir/elevator-kernel-compare.$$.img"
loop=""
dev=""
saved_sched=""
cleanup() {
    [ -n "$saved_sched" ] && echo "$saved_sched" >"/sys/block/$dev/queue/scheduler"
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null || true
    rm -f "$backing"
    rm -rf "$tmp"
}
trap cleanup EXIT
truncate -s 9G "$backing"
if [ "$mode" = loop ]; then
    loop=$(losetup --find --show --direct-io=on --sector-size 4096 "$backing")
    dev=$(basename "$loop")
    target=$loop
    if [ "$(cat /sys/block/$dev/loop/dio)" != 1 ]; then
        echo "kernel-compare: warning: $loop is not doing direct I/O"
    fi
    echo "loop device $loop (direct-io) over $backing; kernel $(uname -r)"
else
    # The whole disk under WORKDIR's filesystem: its scheduler is the one the file's I/O meets.
    source=$(findmnt -no SOURCE --target "$workdir")
    parent=$(lsblk -no PKNAME "$source" 2>/dev/null | head -n1)
    dev=${parent:-$(basename "$source")}
    if [ ! -w "/sys/block/$dev/queue/scheduler" ]; then
        echo "kernel-compare: skipped: no I/O scheduler to switch for $source ($dev)"
        exit 0
    fi
    saved_sched=$(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$dev/queue/scheduler")
    target=$backing
    echo "file $backing on $source (disk $dev, scheduler $saved_sched restored at the end); kernel $(uname -r)"
fi
# Lay the target out once so reads hit allocated blocks.
fio --name=layout --filename="$target" --rw=write --bs=1m --size=9g --direct=1 \
    --ioengine=io_uring --iodepth=16 --output=/dev/null

for job in "${jobs[@]}"; do
    w=$(basename "$job" .fio)
    # The reader alone (kernel none): the ceiling no scheduler can beat.
    echo none >"/sys/block/$dev/queue/scheduler"
    echo "  $w: fio, reader alone"
    fio --output-format=json --filename="$target" --section=reader "$job" >"$tmp/$w-alone.json"
    for k in "${kernel[@]}"; do
        echo "$k" >"/sys/block/$dev/queue/scheduler"
        echo "  $w: fio, kernel $k"
        fio --output-format=json --filename="$target" "$job" >"$tmp/$w-kernel-$k.json"
    done
    echo none >"/sys/block/$dev/queue/scheduler"
    echo "  $w: elevator run --sched $ours"
    set_args=()
    for s in $ours_set; do set_args+=(--set "$s"); done
    # The target is this script's own scratch file or loop device: writing over it is intended.
    "$elevator" run "$job" --target "$target" --sched "$ours" --allow-overwrite \
        "${set_args[@]}" --output-format json --output "$tmp/$w-ours.json"
done
python3 "$here/compare_table.py" "$tmp" "${kernel[*]}" "${jobs[@]}"
