#!/usr/bin/env bash
# fio parity: `elevator run --sched none` against fio's io_uring engine, same job files, same
# file, in one run. Checks IOPS and mean latency within 10% for 4 KiB random reads at
# iodepth 32 and 1 MiB sequential writes at iodepth 32.
#
#   bench/fio-parity.sh [TARGET_FILE]     (default: /var/tmp/elevator-parity.dat, 1 GiB)
#
# Needs fio (apt-get install -y fio); skips with a message without it. Runs each side REPS
# times (default 3), interleaved (fio, ours, fio, ours ...), and compares the medians: on a
# shared machine consecutive runs of the same tool differ by 10-15%.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
target=${1:-/var/tmp/elevator-parity.dat}
reps=${REPS:-3}
if ! command -v fio >/dev/null; then
    echo "fio-parity: skipped: fio is not installed (apt-get install -y fio)"
    exit 0
fi
cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
elevator="$root/target/release/elevator"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -s "$target" ]; then
    echo "laying out $target (1 GiB)"
    fio --name=layout --filename="$target" --rw=write --bs=1m --size=1g --direct=1 \
        --ioengine=io_uring --iodepth=8 --output=/dev/null
fi
status=0
printf '%-10s %-8s %12s %12s %12s %12s\n' workload side IOPS "mean lat ms" "ours/fio IOPS" "ours/fio lat"
for w in randread seqwrite; do
    job="$here/jobs/parity-$w.fio"
    name=$w
    dir=read
    [ "$w" = seqwrite ] && dir=write
    # The side that runs first alternates from one repetition to the next: the virtio disk's
    # write speed drops after a burst of writing, so a fixed order would bias the second side.
    for rep in $(seq "$reps"); do
        run_fio() { fio --output-format=json --filename="$target" "$job" >"$tmp/fio-$w-$rep.json"; }
        run_ours() {
            "$elevator" run "$job" --target "$target" --sched none --allow-overwrite \
                --output-format json --output "$tmp/ours-$w-$rep.json"
        }
        if [ $((rep % 2)) = 1 ]; then run_fio; run_ours; else run_ours; run_fio; fi
    done
    python3 "$here/parity_check.py" "$tmp" "$w" "$name" "$dir" "$reps" || status=1
done
exit $status
