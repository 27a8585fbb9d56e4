#!/usr/bin/env bash
# Morton's experiment with real programs on his disk: a real compile (make + gcc over a
# generated C tree) alone and beside a real streaming writer (dd), through
# `elevator mount --drive laptop-4200` (the emulated 2003 4200 rpm laptop drive), under each
# scheduler (docs/emulation.md).
#
#   bench/morton-emulated.sh     (root; ROUNDS=3 DRIVE=laptop-4200 WRITE_CACHE=off MODULES=20
#                                 FILES=15 CAP=600
#                                 SCHEDS="noop deadline-2.5 anticipatory cfq bfq latency-guard")
#
# The drive's write cache is off by default, as in Morton's test and scenarios/anticipatory.toml
# (hdparm -W0): the bench writes the built-in spec with `write_policy = "write-through"` to a
# file and emulates that (WRITE_CACHE=on keeps the spec's write-back cache).
#
# The tree: bench/gen_ctree.py (MODULES x FILES .c files of 3-6 KiB, a header per module and
# three project headers; system headers come from /usr/include, outside the mount), built
# with `make -j1` (gcc -O0). The backing directory is on tmpfs (/dev/shm): the model, not the
# host's disk, gives every data request's time. The writer is `dd if=/dev/zero bs=1M
# conv=notrunc` rewriting a 256 MiB file over and over (buffered: the mount's writeback).
# Every run mounts afresh (cold page cache of the mount, the drive model in its initial
# state, files placed on the drive in the order they are first touched) and unmounts; the
# daemon runs at SCHED_FIFO 50 (chrt), the compile and the writer at normal priority.
#
# Each round runs every scheduler, in an order rotated from round to round: compile alone,
# then compile beside the writer (the writer started 3 s before). A compile still running
# after CAP seconds is stopped and reported as ">CAP". Prints per scheduler the median and
# range over rounds of: alone (s), beside (s), their ratio (within a round), the writer's
# MB/s (sectors written in the mount's .elevator/stat during the compile), and the
# emulator's lateness (median of the runs' medians and p99s, the largest max), then load and
# date. A compile stopped at the cap is a lower bound; the table also gives the time it would
# have taken at the rate it went (objects made by the cap), marked "~". Raw figures: $OUT
# (default bench/results/morton-emulated.csv), the table's figures in the same name's .json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib/group.sh
source "$here/lib/group.sh"
bench=morton-emulated
# shellcheck source=bench/lib/emulated.sh
source "$here/lib/emulated.sh"
emu_require
rounds=${ROUNDS:-3}
drive=${DRIVE:-laptop-4200}
cap=${CAP:-600}
read -r -a scheds <<<"${SCHEDS:-noop deadline-2.5 anticipatory cfq bfq latency-guard}"
out=${OUT:-$here/results/morton-emulated.csv}

emu_binary
back=$(mktemp -d /dev/shm/elevator-morton.XXXXXX)
mnt=$(mktemp -d)
writer=""
daemon=""
cleanup() {
    [ -n "$writer" ] && kill -- "-$writer" 2>/dev/null || true
    mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt" 2>/dev/null || true
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    rm -rf "$back" "$mnt" "$mnt.drive.toml"
}
trap cleanup EXIT

python3 "$here/gen_ctree.py" "$back/tree" --modules "${MODULES:-20}" --files "${FILES:-15}"
dd if=/dev/zero of="$back/big" bs=1M count=256 status=none
emu_write_through
files=$(find "$back/tree" -type f | wc -l)
cfiles=$(find "$back/tree" -name '*.c' | wc -l)
bytes=$(du -sb "$back/tree" | cut -f1)
echo "tree: $cfiles .c of $files files, $((bytes / 1024)) KiB (bench/gen_ctree.py); drive ${DRIVE:-laptop-4200}, write cache ${WRITE_CACHE:-off}; kernel $(uname -r); $(gcc --version | head -n1)"

start_writer() {
    setsid bash -c "while :; do dd if=/dev/zero of='$mnt/big' bs=1M count=256 conv=notrunc status=none; done" &
    writer=$!
    sleep 3
}

stop_writer() {
    stop_group "$writer"
    writer=""
}

# Time `make` over the tree in the mount; prints seconds, or ">CAP:DONE" (DONE of the
# $cfiles objects made when the cap stopped it: the compile's progress, from which the table
# estimates the time it would have taken at the rate it went).
compile() {
    local t0 t1
    t0=$(date +%s.%N)
    if ! timeout "$cap" make -s -j1 -C "$mnt/tree" >/dev/null 2>&1; then
        echo ">$cap:$(find "$back/tree" -name '*.o' | wc -l)"
        return
    fi
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

written_sectors() { awk '{print $7}' "$mnt/.elevator/stat"; }

mkdir -p "$(dirname "$out")"
echo "round,sched,alone_s,beside_s,writer_MBps,alone_late_med_us,alone_late_p99_us,alone_late_max_us,beside_late_med_us,beside_late_p99_us,beside_late_max_us,load1,utc" >"$out"
n=${#scheds[@]}
echo "load before: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
for r in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        s=${scheds[$(((i + r - 1) % n))]}
        log1=$(mktemp); log2=$(mktemp)
        make -s -C "$back/tree" clean >/dev/null
        mount_emulated "$s" "$log1"
        alone=$(compile)
        umount_emulated
        make -s -C "$back/tree" clean >/dev/null
        mount_emulated "$s" "$log2"
        start_writer
        w0=$(written_sectors)
        t0=$(date +%s.%N)
        beside=$(compile)
        t1=$(date +%s.%N)
        w1=$(written_sectors)
        stop_writer
        umount_emulated
        mbps=$(echo "($w1 - $w0) * 512 / 1000000 / ($t1 - $t0)" | bc -l)
        read -r a1 a2 a3 <<<"$(emu_lateness "$log1")"
        read -r b1 b2 b3 <<<"$(emu_lateness "$log2")"
        grep -h "warning" "$log1" "$log2" >&2 || true
        load1=$(cut -d' ' -f1 /proc/loadavg)
        printf '%s,%s,%s,%s,%.2f,%s,%s,%s,%s,%s,%s,%s,%s\n' "$r" "$s" "$alone" "$beside" "$mbps" \
            "$a1" "$a2" "$a3" "$b1" "$b2" "$b3" "$load1" "$(date -u +%H:%M:%S)" | tee -a "$out"
        rm -f "$log1" "$log2"
    done
done
python3 "$here/morton_emulated_table.py" "$out" --objects "$cfiles" --json "${out%.csv}.json" \
    --meta "tree=$cfiles .c of $files files, $((bytes / 1024)) KiB; cap=${cap}s; rounds=$rounds; $(uname -r); $(gcc --version | head -n1)"
echo "load after: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
