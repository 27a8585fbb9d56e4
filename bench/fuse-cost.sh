#!/usr/bin/env bash
# What FUSE costs: fio on a file through `elevator mount --sched none` against fio on the same
# file in the backing directory, O_DIRECT both ways (no page cache on either side).
#
#   sudo bench/fuse-cost.sh         (ROUNDS=3 RUNTIME=10 WORKDIR=/var/tmp)
#
# Workloads: 4 KiB random reads at iodepth 1 (psync) and at iodepth 32 (libaio), 1 MiB
# sequential writes at iodepth 8 (libaio), each RUNTIME seconds on a 1 GiB file. Rounds
# interleave the two paths workload by workload; the table gives per workload the median and
# range of each path's IOPS or MB/s and of their ratio taken within each round.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
    echo "fuse-cost: skipped: needs /dev/fuse and fusermount3 (apt-get install fuse3)"
    exit 0
fi
if ! command -v fio >/dev/null; then
    echo "fuse-cost: skipped: fio is not installed (apt-get install -y fio)"
    exit 0
fi
rounds=${ROUNDS:-3}
runtime=${RUNTIME:-10}
workdir=${WORKDIR:-/var/tmp}
out=${OUT:-$here/results/fuse-cost.csv}
cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="${CARGO_TARGET_DIR:-$root/target}/release/elevator"
tmp=$(mktemp -d "$workdir/elevator-fuse-cost.XXXXXX")
daemon=""
cleanup() {
    mountpoint -q "$tmp/mnt" 2>/dev/null && fusermount3 -u "$tmp/mnt" 2>/dev/null || true
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/back" "$tmp/mnt"
dd if=/dev/urandom of="$tmp/back/f" bs=1M count=1024 status=none
sync
"$elevator" mount "$tmp/back" "$tmp/mnt" --sched none 2>>"$tmp/daemon.log" &
daemon=$!
for _ in $(seq 100); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done

run_fio() { # $1 file, $2 workload -> IOPS (reads) or MB/s (writes)
    local args
    case "$2" in
    randread-qd1) args="--rw=randread --bs=4k --ioengine=psync --iodepth=1" ;;
    randread-qd32) args="--rw=randread --bs=4k --ioengine=libaio --iodepth=32" ;;
    write-1m) args="--rw=write --bs=1m --ioengine=libaio --iodepth=8" ;;
    esac
    # shellcheck disable=SC2086
    fio --name=cost --filename="$1" --size=1g --direct=1 --time_based --runtime="$runtime" \
        $args --output-format=json |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]
r=j["read"]; w=j["write"]
print(r["iops"] if r["io_bytes"] else w["bw_bytes"]/1e6)'
}

mkdir -p "$(dirname "$out")"
echo "round,workload,direct,mount" >"$out"
for r in $(seq 1 "$rounds"); do
    for w in randread-qd1 randread-qd32 write-1m; do
        if [ $((r % 2)) = 1 ]; then
            d=$(run_fio "$tmp/back/f" "$w")
            m=$(run_fio "$tmp/mnt/f" "$w")
        else
            m=$(run_fio "$tmp/mnt/f" "$w")
            d=$(run_fio "$tmp/back/f" "$w")
        fi
        echo "$r,$w,$d,$m" | tee -a "$out"
    done
done
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def cell(v, f):
    v = sorted(v); return f"{f.format(statistics.median(v))} ({f.format(v[0])}-{f.format(v[-1])})"
print("| workload | direct | through the mount | mount / direct |")
print("|---|---:|---:|---:|")
for w in ["randread-qd1", "randread-qd32", "write-1m"]:
    rs = [r for r in rows if r["workload"] == w]
    d = [float(r["direct"]) for r in rs]; m = [float(r["mount"]) for r in rs]
    unit = "MB/s" if w.startswith("write") else "IOPS"
    print(f"| {w} ({unit}) | {cell(d, '{:.0f}')} | {cell(m, '{:.0f}')} | "
          f"{cell([b / a for a, b in zip(d, m)], '{:.2f}')} |")
PY
echo "load: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
