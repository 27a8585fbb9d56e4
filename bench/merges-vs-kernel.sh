#!/usr/bin/env bash
# Merging on real I/O: the merges our block layer makes under our none, mq-deadline and bfq
# against those the kernel's block layer makes under its own, for one job
# (bench/jobs/merge-4k.fio: 4 KiB sequential writes then reads, four processes at iodepth 32)
# on one loop device. The kernel's figures are the merges fields of /sys/block/loopN/stat
# over its fio run; ours are disk_util's read_merges and write_merges in `elevator run`'s JSON
# (the kernel's scheduler is set to none for our runs). Rounds interleave kernel and ours for
# each scheduler; the medians and their ratio are printed.
#
#   sudo bench/merges-vs-kernel.sh [BACKING_FILE]   (default: /var/tmp/elevator-merge.img, 320 MiB)
#
# Needs root (losetup), fio and python3; skips with a message otherwise. ROUNDS (default 5).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
backing=${1:-/var/tmp/elevator-merge.img}
rounds=${ROUNDS:-5}
if [ "$(id -u)" != 0 ] || ! command -v fio >/dev/null || ! command -v losetup >/dev/null; then
    echo "merges-vs-kernel: skipped: needs root, fio and losetup"
    exit 0
fi
cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="$root/target/release/elevator"
job="$here/jobs/merge-4k.fio"
tmp=$(mktemp -d)
[ -s "$backing" ] || truncate -s 320M "$backing"
dev=$(losetup --find --show --direct-io=on "$backing")
name=$(basename "$dev")
trap 'losetup -d "$dev"; rm -rf "$tmp"' EXIT
echo "device $dev over $backing (direct-io $(cat /sys/block/$name/loop/dio)), $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
merges() { awk '{print $2, $6}' "/sys/block/$name/stat"; }
for r in $(seq "$rounds"); do
    for s in none mq-deadline bfq; do
        echo "$s" >"/sys/block/$name/queue/scheduler"
        before=$(merges)
        fio --filename="$dev" --output=/dev/null "$job"
        after=$(merges)
        echo "$s kernel $r $before $after" >>"$tmp/rows"
        echo none >"/sys/block/$name/queue/scheduler"
        "$elevator" run "$job" --target "$dev" --sched "$s" --allow-overwrite \
            --output-format json --output "$tmp/ours-$s-$r.json" >/dev/null
        echo "$s ours $r $tmp/ours-$s-$r.json" >>"$tmp/rows"
    done
done
python3 - "$tmp/rows" <<'PY'
import json, statistics, sys
kernel, ours = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    s, side = f[0], f[1]
    if side == "kernel":
        rb, wb, ra, wa = map(int, f[3:7])
        kernel.setdefault(s, []).append((ra - rb, wa - wb))
    else:
        d = json.load(open(f[3]))
        runs = d.get("runs", [d])
        u = runs[0]["disk_util"][0]
        ours.setdefault(s, []).append((u["read_merges"], u["write_merges"]))
print(f"{'sched':<12}{'dir':<6}{'kernel (median, range)':>28}{'ours (median, range)':>28}{'ours/kernel':>13}")
worst = 0.0
for s in kernel:
    for i, d in enumerate(("read", "write")):
        k = [x[i] for x in kernel[s]]
        o = [x[i] for x in ours[s]]
        km, om = statistics.median(k), statistics.median(o)
        ratio = om / km if km else float("nan")
        print(f"{s:<12}{d:<6}{km:>14.0f} ({min(k)}-{max(k)}){om:>16.0f} ({min(o)}-{max(o)}){ratio:>13.2f}")
PY
