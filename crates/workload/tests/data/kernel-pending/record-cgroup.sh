#!/usr/bin/env bash
# Record cgroup-weights-three-groups under each scheduler into cgroup-weights-three-groups/SCHED
# as record.sh records the corpus (--nr-requests 8 --size 128M --gzip, bfq with --bfq-log),
# with each of its four fio jobs moved, during its 100 ms start delay, into a cgroup v1 blkio
# group of its own (blkio.bfq.weight 100, 300, 900 and 50, in job order; fio forks the jobs in
# that order). kernel-record refuses fio's own `cgroup` options, so the groups are made here
# (under /sys/fs/cgroup/blkio, removed at the end) and the jobs moved by their pids. Needs root,
# fio, tracefs and the v1 blkio hierarchy:
#
#   cargo build --release && sudo ELEVATOR=target/release/elevator \
#       crates/workload/tests/data/kernel-pending/record-cgroup.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
elevator=${ELEVATOR:-elevator}
mix=cgroup-weights-three-groups
cg=/sys/fs/cgroup/blkio
weights=(100 300 900 50)
[ -d "$cg" ] || { echo "$0: no cgroup v1 blkio hierarchy at $cg" >&2; exit 1; }
cleanup() { for i in 0 1 2 3; do rmdir "$cg/elevator-record-g$i" 2>/dev/null || true; done; }
trap cleanup EXIT
for i in 0 1 2 3; do
	mkdir -p "$cg/elevator-record-g$i"
	echo "${weights[$i]}" > "$cg/elevator-record-g$i/blkio.bfq.weight"
done
for sched in none mq-deadline kyber bfq; do
	out=$here/$mix/$sched
	if [ -d "$out" ]; then
		rm -f "$out"/{meta.json,job.fio,trace.txt.gz,bfq-log.txt.gz,fio.out.gz,fio.stderr}
	fi
	extra=()
	[ "$sched" = bfq ] && extra=(--bfq-log)
	"$elevator" kernel-record "$here/$mix.fio" --sched "$sched" --nr-requests 8 --size 128M \
		--gzip --out "$here/$mix" "${extra[@]}" &
	rec=$!
	moved=0
	for _ in $(seq 2000); do
		main=$(pgrep -P "$rec" -x fio || true)
		if [ -n "$main" ]; then
			mapfile -t jobs < <(pgrep -P "$main" -x fio | sort -n)
			if [ "${#jobs[@]}" -ge 4 ]; then
				for i in 0 1 2 3; do echo "${jobs[$i]}" > "$cg/elevator-record-g$i/cgroup.procs"; done
				moved=1
				break
			fi
		fi
		sleep 0.005
	done
	wait "$rec"
	[ "$moved" = 1 ] || { echo "$0: $sched: the jobs were not moved into their groups" >&2; exit 1; }
done
