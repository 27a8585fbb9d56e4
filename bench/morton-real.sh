#!/usr/bin/env bash
# Morton's experiment with real programs: how long does reading a source tree take while dd
# streams a large file into the same filesystem?
#
#   sudo bench/morton-real.sh            (ROUNDS=3 TREE=/usr/lib/python3.11 WORKDIR=/var/tmp)
#
# One ext4 filesystem on a direct-io loop device (4 KiB sectors) over a sparse file in WORKDIR,
# holding a copy of TREE (a few thousand files) and the writer's file. The reader is
# `tar cf - tree | cat >/dev/null` (one file after another: dependent reads); the writer is
# `dd if=/dev/zero of=big bs=1M conv=notrunc` rewriting 2 GiB over and over (buffered: page-cache
# writeback does the device writes; the loop device's dirty pages are bounded to 64 MiB with a
# strict per-device limit, as FUSE bounds its own). Page cache dropped before every run.
#
# Configurations: under `elevator mount` (the loop device's own scheduler set to none) our
# noop, deadline, anticipatory, cfq, bfq and latency-guard, switched through
# MOUNTPOINT/.elevator/scheduler; on the loop device mounted directly, without FUSE, the
# kernel's none, mq-deadline, kyber and bfq. Each round runs every configuration, in an order
# rotated from round to round, reader alone then reader beside the writer.
#
# Prints per configuration the median and range over rounds of: the reader alone (s), the
# reader beside the writer (s), their ratio, and the writer's MB/s during the reader's run
# (from the loop device's /sys/block/loopN/stat sectors written), then the load and date.
# Raw figures go to $OUT (default bench/results/morton-real.csv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib/group.sh
source "$here/lib/group.sh"
if [ "$(id -u)" != 0 ]; then
    echo "morton-real: skipped: needs root (losetup, mount, drop_caches)"
    exit 0
fi
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
    echo "morton-real: skipped: needs /dev/fuse and fusermount3 (apt-get install fuse3)"
    exit 0
fi
rounds=${ROUNDS:-3}
tree=${TREE:-$(ls -d /usr/lib/python3.* 2>/dev/null | head -n1)}
workdir=${WORKDIR:-/var/tmp}
out=${OUT:-$here/results/morton-real.csv}
cap=${READER_CAP:-600}
ours=(noop deadline anticipatory cfq bfq latency-guard)
kernel=(none mq-deadline kyber bfq)

cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="${CARGO_TARGET_DIR:-$root/target}/release/elevator"
tmp=$(mktemp -d)
img="$workdir/elevator-morton.$$.img"
loop=""
writer=""
daemon=""
cleanup() {
    [ -n "$writer" ] && kill -- "-$writer" 2>/dev/null || true
    mountpoint -q "$tmp/mnt" 2>/dev/null && fusermount3 -u "$tmp/mnt" 2>/dev/null || true
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    mountpoint -q "$tmp/fs" 2>/dev/null && umount "$tmp/fs" || true
    if [ -n "$loop" ]; then
        echo 0 >"/sys/block/$(basename "$loop")/bdi/strict_limit" 2>/dev/null || true
        echo 100 >"/sys/block/$(basename "$loop")/bdi/max_ratio" 2>/dev/null || true
        losetup -d "$loop" 2>/dev/null || true
    fi
    rm -f "$img"
    rm -rf "$tmp"
}
trap cleanup EXIT

truncate -s 16G "$img"
loop=$(losetup --find --show --direct-io=on --sector-size 4096 "$img")
dev=$(basename "$loop")
# Bound the loop device's dirty pages as FUSE bounds its own (strictlimit, about 1% of the
# dirty threshold): without it, dd on the unfused filesystem fills gigabytes of page cache and
# writes nothing to the device while the reader runs. Only this device's limit is changed.
bdi=/sys/block/$dev/bdi
if [ -w "$bdi/max_bytes" ]; then
    echo $((64 << 20)) >"$bdi/max_bytes"
    echo 1 >"$bdi/strict_limit"
fi
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
mkdir -p "$tmp/fs" "$tmp/mnt"
mount "$loop" "$tmp/fs"
cp -a "$tree" "$tmp/fs/tree"
dd if=/dev/zero of="$tmp/fs/big" bs=1M count=2048 status=none
sync
files=$(find "$tmp/fs/tree" -type f | wc -l)
bytes=$(du -sb "$tmp/fs/tree" | cut -f1)
echo "tree: $tree, $files files, $((bytes / 1048576)) MiB; loop $loop (dio $(cat /sys/block/$dev/loop/dio)) over $img; kernel $(uname -r)"

written_sectors() { awk '{print $7}' "/sys/block/$dev/stat"; }

start_writer() { # $1: directory holding big
    # Its own process group (setsid), so stopping it stops the dd it is running too.
    setsid bash -c "while :; do dd if=/dev/zero of='$1/big' bs=1M count=2048 conv=notrunc status=none; done" &
    writer=$!
    sleep 3 # let writeback reach its stride
}

stop_writer() {
    stop_group "$writer"
    writer=""
    sync
}

drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}

# Time the reader over $1/tree; prints seconds (or the cap, marked with >).
read_tree() {
    local t0 t1
    t0=$(date +%s.%N)
    if ! timeout "$cap" sh -c "tar cf - -C '$1' tree | cat >/dev/null"; then
        echo ">$cap"
        return
    fi
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

mount_fuse() {
    echo none >"/sys/block/$dev/queue/scheduler"
    "$elevator" mount "$tmp/fs" "$tmp/mnt" --sched noop 2>>"$tmp/daemon.log" &
    daemon=$!
    for _ in $(seq 100); do mountpoint -q "$tmp/mnt" && return; sleep 0.1; done
    echo "morton-real: the mount did not appear" >&2
    exit 1
}

umount_fuse() {
    for _ in $(seq 150); do fusermount3 -u "$tmp/mnt" 2>/dev/null && break; sleep 0.2; done
    wait "$daemon"
    daemon=""
}

mkdir -p "$(dirname "$out")"
echo "round,config,alone_s,beside_s,writer_MBps" >"$out"
configs=()
for s in "${ours[@]}"; do configs+=("ours:$s"); done
for s in "${kernel[@]}"; do configs+=("kernel:$s"); done
n=${#configs[@]}
for r in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        c=${configs[$(((i + r - 1) % n))]}
        kind=${c%%:*}
        name=${c#*:}
        if [ "$kind" = ours ]; then
            mount_fuse
            echo "$name" >"$tmp/mnt/.elevator/scheduler"
            dir="$tmp/mnt"
        else
            echo "$name" >"/sys/block/$dev/queue/scheduler"
            dir="$tmp/fs"
        fi
        drop_caches
        alone=$(read_tree "$dir")
        drop_caches
        start_writer "$dir"
        w0=$(written_sectors)
        t0=$(date +%s.%N)
        beside=$(read_tree "$dir")
        t1=$(date +%s.%N)
        w1=$(written_sectors)
        stop_writer
        mbps=$(echo "($w1 - $w0) * 512 / 1000000 / ($t1 - $t0)" | bc -l)
        [ "$kind" = ours ] && umount_fuse
        printf '%s,%s,%s,%s,%.1f\n' "$r" "$c" "$alone" "$beside" "$mbps" | tee -a "$out"
    done
done
echo "none" >"/sys/block/$dev/queue/scheduler"
python3 "$here/morton_table.py" "$out"
echo "load: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
