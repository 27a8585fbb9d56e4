#!/usr/bin/env bash
# An application's cold start on the emulated laptop drive, alone and beside Valente's S
# backgrounds (BFQ's comm_startup_lat: 5 sequential readers "5r0w", 2 readers + 2 writers
# "2r2w"; any NrMw up to 10 readers and 5 writers), under each scheduler (docs/emulation.md).
#
#   bench/startup-emulated.sh    (root; ROUNDS=3 DRIVE=laptop-4200 WRITE_CACHE=off CAP=60
#                                 BGS="0r0w 5r0w 2r2w"
#                                 SCHEDS="noop deadline cfq bfq anticipatory latency-guard"
#                                 RA_KB= BG_BS=1M BG_WARM=3)
#
# BG_WARM: seconds the background runs before the application starts (the S suite's
# comm_startup_lat and the simulator's bfq-merge start-up let it run 30 s or more: BFQ
# weight-raises a new process's queue as interactive for some seconds, the background's
# new dd processes too).
#
# RA_KB=N sets the mount's readahead window (its bdi's read_ahead_kb, /sys/class/bdi/MAJ:MIN)
# after each mount, and BG_BS the background dd's block size. (Measured at 11:10 UTC on
# 6.18: the mount's bdi has read_ahead_kb 128, and a `dd bs=1M` reader's requests reach the
# scheduler at 128-130 KiB on average, as with bs=128k.)
#
# The application: CPython 3.11 (Debian's /usr/bin/python3.11) starting and importing 15
# modules of its standard library (json, email, http.client, xml.etree, sqlite3, decimal,
# asyncio, unittest, argparse, logging, csv, zipfile, tarfile, urllib.request, pydoc: about
# 185 files opened, their .pyc compiled beforehand), the binary and the whole stdlib
# (/usr/lib/python3.11, 1,403 files, 54 MB, with its __pycache__ and lib-dynload) copied
# into the backing directory with `cp -a` and started from the mount (`-I -S`: no site
# packages, no user paths; it finds its stdlib beside its binary). Its shared libraries
# (libc, libm, libz, libexpat) and the loader come from the host, warm in its page cache.
#
# Cold: every run mounts afresh (the mount's page cache empty, the drive model in its
# initial state). The mount places a file on the drive when its data is first touched, so
# before each run the bench touches every file of the copy with one 4 KiB O_DIRECT read, in
# sorted path order (as an installer writes a tree), bypassing the page cache; otherwise the
# files would lie in the order the start-up reads them, every read a sequential one.
#
# Backgrounds (real dd, buffered, started 3 s before the application, stopped after it):
# readers `dd bs=1M` over their own 1 GiB file (sparse, on tmpfs), writers
# `dd if=/dev/zero bs=1M conv=notrunc` rewriting their own 256 MiB file over and over.
# A start-up still running at CAP s is stopped (">CAP", a lower bound).
#
# Each round runs every scheduler in an order rotated from round to round, and under each
# the backgrounds in turn. Raw figures: $OUT (default bench/results/startup-emulated.csv), the
# table's figures in the same name's .json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib/group.sh
source "$here/lib/group.sh"
bench=startup-emulated
# shellcheck source=bench/lib/emulated.sh
source "$here/lib/emulated.sh"
emu_require
py=/usr/bin/python3.11
pylib=/usr/lib/python3.11
if [ ! -x "$py" ] || [ ! -d "$pylib" ]; then
    echo "startup-emulated: skipped: needs Debian's $py and $pylib"
    exit 0
fi
rounds=${ROUNDS:-3}
drive=${DRIVE:-laptop-4200}
cap=${CAP:-60}
read -r -a scheds <<<"${SCHEDS:-noop deadline cfq bfq anticipatory latency-guard}"
read -r -a bgs <<<"${BGS:-0r0w 5r0w 2r2w}"
out=${OUT:-$here/results/startup-emulated.csv}
imports="json, email.mime.multipart, http.client, xml.etree.ElementTree, sqlite3, decimal, asyncio, unittest, argparse, logging, csv, zipfile, tarfile, urllib.request, pydoc"

emu_binary
back=$(mktemp -d /dev/shm/elevator-startup.XXXXXX)
mnt=$(mktemp -d)
daemon=""
bgpid=""
cleanup() {
    [ -n "$bgpid" ] && kill -- "-$bgpid" 2>/dev/null || true
    mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt" 2>/dev/null || true
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    rm -rf "$back" "$mnt" "$mnt.drive.toml"
}
trap cleanup EXIT

mkdir -p "$back/py/bin" "$back/py/lib"
cp -a "$py" "$back/py/bin/"
cp -a "$pylib" "$back/py/lib/"
# Compile what the start-up imports (as the distribution's postinst does), so that it reads
# .pyc files and writes none.
"$back/py/bin/python3.11" -I -S -c "import $imports" >/dev/null
for i in $(seq 0 9); do truncate -s 1G "$back/r$i"; done
for i in $(seq 0 4); do dd if=/dev/zero of="$back/w$i" bs=1M count=256 status=none; done
emu_write_through
echo "background started ${BG_WARM:-3} s before; readahead ${RA_KB:-as the mount sets it} KiB, background dd bs=${BG_BS:-1M}; application: $($py --version) importing $imports; $(find "$back/py" -type f | wc -l) files copied; drive ${DRIVE:-laptop-4200}, write cache ${WRITE_CACHE:-off}; kernel $(uname -r)"

emu_mounted() { # RA_KB: the mount's readahead
    if [ -n "${RA_KB:-}" ]; then
        echo "$RA_KB" >"/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb"
    fi
}

# Place the application's files on the drive in sorted path order, without caching them.
place() {
    python3 - "$mnt/py" <<'EOF'
import mmap, os, sys
buf = mmap.mmap(-1, 4096)
paths = []
for d, _, fs in os.walk(sys.argv[1]):
    paths += [os.path.join(d, f) for f in fs]
for p in sorted(paths):
    if os.path.islink(p):
        continue
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        os.preadv(fd, [buf], 0)
    finally:
        os.close(fd)
EOF
}

start_bg() { # $1: NrMw (N sequential readers, M sequential writers), 0r0w for none
    local nr nw cmd="" i
    if [[ ! $1 =~ ^([0-9]+)r([0-9]+)w$ ]]; then
        echo "startup-emulated: background $1 is not NrMw" >&2
        exit 1
    fi
    nr=${BASH_REMATCH[1]} nw=${BASH_REMATCH[2]}
    [ "$nr$nw" = 00 ] && return
    for ((i = 0; i < nr; i++)); do cmd+="while :; do dd if='$mnt/r$i' of=/dev/null bs=${BG_BS:-1M} status=none; done & "; done
    for ((i = 0; i < nw; i++)); do cmd+="while :; do dd if=/dev/zero of='$mnt/w$i' bs=1M count=256 conv=notrunc status=none; done & "; done
    setsid bash -c "${cmd}wait" &
    bgpid=$!
    sleep "${BG_WARM:-3}"
}

stop_bg() {
    [ -z "$bgpid" ] && return
    stop_group "$bgpid"
    bgpid=""
}

# The start-up's time in seconds (or >CAP).
startup() {
    local t0 t1
    t0=$(date +%s.%N)
    if ! timeout "$cap" "$mnt/py/bin/python3.11" -I -S -c "import $imports" >/dev/null 2>&1; then
        echo ">$cap"
        return
    fi
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

stat_sectors() { awk '{print $3 + $7}' "$mnt/.elevator/stat"; }

mkdir -p "$(dirname "$out")"
echo "round,sched,bg,startup_s,bg_MBps,late_med_us,late_p99_us,late_max_us,load1,utc" >"$out"
echo "load before: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
n=${#scheds[@]}
for r in $(seq 1 "$rounds"); do
    for i in $(seq 0 $((n - 1))); do
        s=${scheds[$(((i + r - 1) % n))]}
        for bg in "${bgs[@]}"; do
            log=$(mktemp)
            mount_emulated "$s" "$log"
            place
            start_bg "$bg"
            w0=$(stat_sectors)
            t0=$(date +%s.%N)
            t=$(startup)
            t1=$(date +%s.%N)
            w1=$(stat_sectors)
            stop_bg
            umount_emulated
            mbps=$(echo "($w1 - $w0) * 512 / 1000000 / ($t1 - $t0)" | bc -l)
            read -r l1 l2 l3 <<<"$(emu_lateness "$log")"
            grep -h "warning" "$log" >&2 || true
            printf '%s,%s,%s,%s,%.2f,%s,%s,%s,%s,%s\n' "$r" "$s" "$bg" "$t" "$mbps" "$l1" "$l2" "$l3" \
                "$(cut -d' ' -f1 /proc/loadavg)" "$(date -u +%H:%M:%S)" | tee -a "$out"
            rm -f "$log"
        done
    done
done
echo "load after: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
python3 "$here/startup_emulated_table.py" "$out" --json "${out%.csv}.json"
