#!/usr/bin/env bash
# io.max on real I/O: our blk-throttle (elevator_core::qos::throttle, at the block layer's
# rq_qos position in the io_uring executor) against the kernel's, with the same limits, on
# one loop device (losetup --direct-io=on over a file). The kernel's limits are set through
# cgroup v1's blkio.throttle.{read,write}_{bps,iops}_device on a cgroup fio runs in (cgroup
# v2's io controller is not available on this VM; blk-throttle is the same code under both);
# ours through elevator_cgroup + elevator_io_max in the same job, run by `elevator run` under
# none, with the kernel's scheduler set to none. Four cases, one limit each: rbps, wbps,
# riops, wiops. Rounds interleave kernel and ours case by case; the medians and ranges of the
# achieved rates (fio's bw_bytes / iops, ours from the same fields of `elevator run`'s JSON)
# and ours/kernel are printed.
#
#   sudo bench/iomax-vs-kernel.sh [BACKING_FILE]   (default: /var/tmp/elevator-iomax.img, 512 MiB)
#
# Needs root (losetup, cgroup v1 blkio), fio and python3; skips with a message otherwise.
# ROUNDS (default 5), RUNTIME (seconds per run, default 8).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
backing=${1:-/var/tmp/elevator-iomax.img}
rounds=${ROUNDS:-5}
runtime=${RUNTIME:-8}
blkio=/sys/fs/cgroup/blkio
if [ "$(id -u)" != 0 ] || ! command -v fio >/dev/null || ! command -v losetup >/dev/null \
    || [ ! -e "$blkio/blkio.throttle.read_bps_device" ]; then
    echo "iomax-vs-kernel: skipped: needs root, fio, losetup and cgroup v1 blkio.throttle"
    exit 0
fi
elevator=${ELEVATOR:-$root/target/release/elevator}
if [ -z "${ELEVATOR:-}" ]; then
    cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
fi
tmp=$(mktemp -d)
[ -s "$backing" ] || truncate -s 512M "$backing"
dev=$(losetup --find --show --direct-io=on "$backing")
name=$(basename "$dev")
majmin=$(cat "/sys/block/$name/dev")
cg="$blkio/elevator-iomax-$$"
mkdir "$cg"
cleanup() {
    rmdir "$cg" 2>/dev/null || true
    losetup -d "$dev"
    rm -rf "$tmp"
}
trap cleanup EXIT
echo none >"/sys/block/$name/queue/scheduler"
echo "device $dev ($majmin) over $backing (direct-io $(cat /sys/block/$name/loop/dio)), $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

# case: name, fio rw, bs, cgroup v1 file, io.max key, limit
cases="rbps randread 65536 read_bps_device rbps 20971520
wbps randwrite 65536 write_bps_device wbps 10485760
riops randread 4096 read_iops_device riops 400
wiops randwrite 4096 write_iops_device wiops 200"

job() { # rw bs [extra lines]
    cat <<JOB
[global]
filename=$dev
ioengine=libaio
direct=1
iodepth=16
size=384m
runtime=$runtime
time_based
randseed=7
[j]
rw=$1
bs=$2
$3
JOB
}

for r in $(seq "$rounds"); do
    while read -r c rw bs file key limit; do
        job "$rw" "$bs" "" >"$tmp/k-$c.fio"
        for f in read_bps_device write_bps_device read_iops_device write_iops_device; do
            echo "$majmin 0" >"$cg/blkio.throttle.$f" 2>/dev/null || true
        done
        echo "$majmin $limit" >"$cg/blkio.throttle.$file"
        sh -c "echo \$\$ >'$cg/cgroup.procs'; exec fio --output-format=json --output='$tmp/k-$c-$r.json' '$tmp/k-$c.fio'"
        echo "$majmin 0" >"$cg/blkio.throttle.$file"
        job "$rw" "$bs" "elevator_cgroup=/limited
elevator_io_max=$key=$limit" >"$tmp/o-$c.fio"
        "$elevator" run "$tmp/o-$c.fio" --target "$dev" --sched none --allow-overwrite \
            --output-format json --output "$tmp/o-$c-$r.json" >/dev/null
        echo "$c $rw $key $limit $tmp/k-$c-$r.json $tmp/o-$c-$r.json" >>"$tmp/rows"
    done <<<"$cases"
done
python3 - "$tmp/rows" <<'PY'
import json, statistics, sys
rows = {}
def rate(path, rw, key):
    d = json.load(open(path))
    runs = d.get("runs", [d])
    j = runs[0]["jobs"][0]
    side = j["read" if rw.endswith("read") else "write"]
    return side["bw_bytes"] if key.endswith("bps") else side["iops"]
for line in open(sys.argv[1]):
    c, rw, key, limit, k, o = line.split()
    rows.setdefault((c, key, int(limit)), []).append((rate(k, rw, key), rate(o, rw, key)))
print(f"{'limit':<22}{'kernel (median, range)':>34}{'ours (median, range)':>34}{'ours/kernel':>13}")
for (c, key, limit), v in rows.items():
    k = [x[0] for x in v]
    o = [x[1] for x in v]
    km, om = statistics.median(k), statistics.median(o)
    unit = "B/s" if key.endswith("bps") else "IOPS"
    print(f"{key}={limit:<16}{km:>14.0f} ({min(k):.0f}-{max(k):.0f}){om:>14.0f} ({min(o):.0f}-{max(o):.0f}){om / km:>13.3f}   {unit}, rounds {len(v)}")
PY
