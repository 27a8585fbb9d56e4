#!/usr/bin/env bash
# What `elevator mount` costs against its backing directory (issue 31's mount targets).
#
#   sudo bench/mount-overhead.sh      (ROUNDS=3 RUNTIME=10 WORKDIR=/var/tmp SCHED=none
#                                      ENTRIES=60000 GITFILES=4000 THREADS= ONLY=
#                                      ELEVATOR=binary, else built here)
#
# The daemon and every client run with `ulimit -n 1024` (soft and hard), the default limit.
# Per round, each workload on the backing directory and through the mount, the order of the
# two alternating from round to round:
#   randread-qd1  fio 4 KiB random reads, psync, iodepth 1, O_DIRECT (IOPS)
#   randread-qd32 fio 4 KiB random reads, libaio, iodepth 32, O_DIRECT (IOPS; not in the
#                 default set, ask with ONLY=)
#   write-1m      fio 1 MiB sequential writes, libaio, iodepth 8, O_DIRECT (MB/s)
#   buffered-fsync fio 1 GiB of 1 MiB buffered writes then one fsync (end_fsync), MB/s over
#                 the whole run, fsync included
#   untar         tar x of a generated tree of ENTRIES entries (files, directories, symlinks)
#                 (seconds; must succeed and leave every entry)
#   git-clone     git clone --no-local of a generated repository of GITFILES files (seconds;
#                 must succeed, `git fsck` clean)
#   git-status    `git status` of that clone with the page cache dropped first
#                 (echo 3 > /proc/sys/vm/drop_caches) (seconds)
# The table gives medians and ranges of each side and of the ratio taken within each round
# (mount / backing for throughputs, backing / mount for times: >= 1 means the mount is as
# fast). This is also what FUSE itself costs (the former bench/fuse-cost.sh measured the
# same fio runs, randread-qd32 included, against the same backing file). Needs root (drop_caches), fio, git, /dev/fuse and fusermount3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
    echo "mount-overhead: skipped: needs /dev/fuse and fusermount3 (apt-get install fuse3)"
    exit 0
fi
for t in fio git tar; do
    command -v $t >/dev/null || { echo "mount-overhead: skipped: $t is not installed"; exit 0; }
done
if [ "$(id -u)" != 0 ]; then
    echo "mount-overhead: needs root (it drops the page cache for the cold git status)" >&2
    exit 1
fi
rounds=${ROUNDS:-3}
runtime=${RUNTIME:-10}
workdir=${WORKDIR:-/var/tmp}
sched=${SCHED:-none}
entries=${ENTRIES:-60000}
gitfiles=${GITFILES:-4000}
only=${ONLY:-randread-qd1 write-1m buffered-fsync untar git-clone git-status}
out=${OUT:-$here/results/mount-overhead.csv}
if [ -z "${ELEVATOR:-}" ]; then
    nice cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
fi
elevator=${ELEVATOR:-"${CARGO_TARGET_DIR:-$root/target}/release/elevator"}
tmp=$(mktemp -d "$workdir/elevator-mount-overhead.XXXXXX")
daemon=""
cleanup() {
    mountpoint -q "$tmp/mnt" 2>/dev/null && fusermount3 -u "$tmp/mnt" 2>/dev/null || true
    [ -n "$daemon" ] && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/back" "$tmp/mnt" "$tmp/src"
echo "mount-overhead: preparing in $tmp" >&2
dd if=/dev/urandom of="$tmp/back/f" bs=1M count=1024 status=none

# The tree to untar: ENTRIES entries, 100 per directory (files of 0-16 KiB, one symlink in
# ten), made by tar from a generated directory; and the repository to clone.
want_entries=0
case " $only " in *" untar "*)
python3 - "$tmp/src/tree" "$entries" <<'PY'
import os, random, sys
top, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
made, d = 0, 0
while made < n:
    dp = os.path.join(top, f"d{d // 50:03d}", f"s{d:04d}")
    os.makedirs(dp)
    made += 1 if d % 50 else 2
    for i in range(99):
        if made >= n:
            break
        p = os.path.join(dp, f"f{i:02d}")
        if i % 10 == 9:
            os.symlink(f"f{i - 1:02d}", p)
        else:
            with open(p, "wb") as f:
                f.write(rng.randbytes(rng.choice([0, 100, 1000, 4096, 5000, 16384])))
        made += 1
    d += 1
PY
tar -C "$tmp/src" -cf "$tmp/src/tree.tar" tree
want_entries=$(tar -tf "$tmp/src/tree.tar" | wc -l)
rm -rf "$tmp/src/tree"
;;
esac
python3 - "$tmp/src/repo" "$gitfiles" <<'PY'
import os, random, sys
top, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(2)
for i in range(n):
    d = os.path.join(top, f"m{i // 40:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"file{i:05d}.c"), "w") as f:
        f.write("".join(f"int f{i}_{k}(int x) {{ return x * {rng.randint(1, 999)}; }}\n"
                        for k in range(rng.randint(5, 80))))
PY
git -C "$tmp/src/repo" init -q
git -C "$tmp/src/repo" add -A
git -C "$tmp/src/repo" -c user.name=bench -c user.email=bench@localhost commit -qm tree
sync

# The daemon under the default limit of 1,024 open files (soft and hard: it cannot raise it).
# shellcheck disable=SC2086
(ulimit -n 1024 && exec "$elevator" mount "$tmp/back" "$tmp/mnt" --sched "$sched" \
    ${THREADS:+--threads $THREADS}) 2>>"$tmp/daemon.log" &
daemon=$!
for _ in $(seq 100); do mountpoint -q "$tmp/mnt" && break; sleep 0.1; done
mountpoint -q "$tmp/mnt" || { cat "$tmp/daemon.log" >&2; exit 1; }

fio_run() { # $1 dir, $2 workload -> IOPS (reads) or MB/s (writes)
    local args f="$1/f"
    case "$2" in
    randread-qd1) args="--rw=randread --bs=4k --ioengine=psync --iodepth=1 --direct=1 \
        --size=1g --time_based --runtime=$runtime" ;;
    randread-qd32) args="--rw=randread --bs=4k --ioengine=libaio --iodepth=32 --direct=1 \
        --size=1g --time_based --runtime=$runtime" ;;
    write-1m) args="--rw=write --bs=1m --ioengine=libaio --iodepth=8 --direct=1 \
        --size=1g --time_based --runtime=$runtime" ;;
    buffered-fsync)
        f="$1/bf"
        rm -f "$f"
        sync
        args="--rw=write --bs=1m --ioengine=psync --direct=0 --size=1g --end_fsync=1" ;;
    esac
    # shellcheck disable=SC2086
    (ulimit -n 1024 && fio --name=cost --filename="$f" $args --output-format=json) |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]
r=j["read"]; w=j["write"]
if r["io_bytes"]: print(r["iops"])
else: print(w["io_bytes"] / (j["job_runtime"] / 1e3) / 1e6)'
    [ "$2" = buffered-fsync ] && rm -f "$f"
    return 0
}

secs() { # run "$@" with ulimit -n 1024, print its wall time in seconds; fail if it fails
    local t0 t1
    t0=$(date +%s.%N)
    (ulimit -n 1024 && "$@") >/dev/null 2>>"$tmp/client.log" || {
        echo "mount-overhead: FAILED: $*" >&2; tail -5 "$tmp/client.log" >&2; echo nan; return 0; }
    t1=$(date +%s.%N)
    python3 -c "print($t1 - $t0)"
}

untar() { # $1 dir -> seconds; checks every entry arrived
    local d="$1/untar" s n
    rm -rf "$d"; mkdir "$d"; sync
    s=$(secs tar -C "$d" -xf "$tmp/src/tree.tar")
    n=$(cd "$d" && find tree | wc -l)
    if [ "$n" != "$want_entries" ]; then
        echo "mount-overhead: untar into $1 left $n of $want_entries entries" >&2; s=nan
    fi
    rm -rf "$d"
    echo "$s"
}

clone() { # $1 dir -> seconds; checks fsck
    local d="$1/clone" s
    rm -rf "$d"; sync
    s=$(secs git clone -q --no-local "$tmp/src/repo" "$d")
    (ulimit -n 1024 && git -C "$d" fsck --full --strict) >/dev/null 2>>"$tmp/client.log" ||
        { echo "mount-overhead: git fsck failed in $1" >&2; s=nan; }
    git -C "$d" status --porcelain >/dev/null # settles the index (racy entries)
    echo "$s"
}

cold_status() { # $1 dir -> seconds of `git status` with the page cache dropped
    sync
    echo 3 >/proc/sys/vm/drop_caches
    secs git -C "$1/clone" status --porcelain
}

measure() { # $1 dir, $2 workload
    case "$2" in
    untar) untar "$1" ;;
    git-clone) clone "$1" ;;
    git-status) cold_status "$1" ;;
    *) fio_run "$1" "$2" ;;
    esac
}

mkdir -p "$(dirname "$out")"
echo "round,workload,backing,mount" >"$out"
for r in $(seq 1 "$rounds"); do
    for w in $only; do
        if [ $((r % 2)) = 1 ]; then
            b=$(measure "$tmp/back" "$w")
            m=$(measure "$tmp/mnt" "$w")
        else
            m=$(measure "$tmp/mnt" "$w")
            b=$(measure "$tmp/back" "$w")
        fi
        echo "$r,$w,$b,$m" | tee -a "$out"
    done
done
if ! mountpoint -q "$tmp/mnt"; then
    echo "mount-overhead: the mount is gone" >&2; cat "$tmp/daemon.log" >&2; exit 1
fi
fusermount3 -u "$tmp/mnt"
wait "$daemon"; daemon=""
grep -i "error\|too many" "$tmp/daemon.log" >&2 || true
python3 - "$out" <<'PY'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def cell(v, f):
    v = sorted(v)
    if any(math.isnan(x) for x in v): return "failed in " + str(sum(map(math.isnan, v))) + " round(s)"
    return f"{f.format(statistics.median(v))} ({f.format(v[0])}-{f.format(v[-1])})"
units = {"randread-qd1": "IOPS", "randread-qd32": "IOPS", "write-1m": "MB/s", "buffered-fsync": "MB/s"}
print("| workload | backing | through the mount | ratio (>= 1: mount as fast) |")
print("|---|---:|---:|---:|")
for w in dict.fromkeys(r["workload"] for r in rows):
    rs = [r for r in rows if r["workload"] == w]
    b = [float(r["backing"]) for r in rs]; m = [float(r["mount"]) for r in rs]
    unit = units.get(w, "s")
    ratio = [y / x for x, y in zip(b, m)] if w in units else [x / y for x, y in zip(b, m)]
    f = "{:.0f}" if w in units else "{:.2f}"
    print(f"| {w} ({unit}) | {cell(b, f)} | {cell(m, f)} | {cell(ratio, '{:.2f}')} |")
PY
echo "load: $(uptime | sed 's/.*load average: //'); $(date -u '+%Y-%m-%d %H:%M UTC')"
