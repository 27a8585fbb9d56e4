#!/usr/bin/env bash
# Record a job mix whose fio jobs run in cgroup v1 blkio groups under each scheduler into
# MIX/SCHED beside its job (jobs/MIX.fio: the corpus here; ../kernel-pending/MIX.fio: a
# recording held out there) as record.sh records the corpus (--nr-requests 8 --size 128M --gzip, bfq with
# --bfq-log; a loop device over a file on the disk for a name ending in -file). The job file puts each job in its group with fio's own options
# (`cgroup=elevator-record-NAME`, `cgroup_nodelete=1`: fio moves the job's process there
# before its first I/O); this script makes the groups given as NAME=WEIGHT under
# /sys/fs/cgroup/blkio with that blkio.bfq.weight, and removes them at the end.
# kernel-record writes MIX/SCHED/groups.txt (each job process's group, each group's weight),
# which kernel-diff reads. Needs root, fio, tracefs and the v1 blkio hierarchy:
#
#   cargo build --release && sudo ELEVATOR=target/release/elevator \
#       crates/workload/tests/data/kernel/record-cgroup.sh \
#       cgroup-weights-three-groups g0=100 g1=300 g2=900 g3=50
#   ... record-cgroup.sh cgroup-pairs-beside-writer-and-root-reader \
#       pair100=100 pair400=400 writer=200
#
# With ROUND=2 (3 ...) in the environment the recordings go to MIX-round2/SCHED/ instead.
# THROTTLE="NAME:riops=N,wbps=N ..." (kfid57) also limits group NAME with blk-throttle
# (blkio.throttle.read_iops_device, write_iops_device, read_bps_device, write_bps_device: riops,
# wiops, rbps, wbps) on the loop device each recording will attach (`losetup --find`, taken
# just before; the recording's meta.json names the device to check it).
# NR_REQUESTS=N (default 8) and SIZE=S (default 128M) change --nr-requests and --size; an empty
# NR_REQUESTS keeps the queue's own (256 scheduler tags, 128 under none: branch kfid43's deep
# backlog, `NR_REQUESTS= SIZE=256M`).
#
# (Moving the jobs by pid from here raced fio: it forks a job's process when the job's start
# delay has passed, and the process does its first I/O at once; under load most moves came
# after it, and bfq had made the queue in the root group.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
elevator=${ELEVATOR:-elevator}
[ $# -ge 2 ] || { echo "usage: $0 MIX NAME=WEIGHT ..." >&2; exit 1; }
mix=$1
shift
suffix=${ROUND:+-round$ROUND}
[ "${ROUND:-}" != 1 ] || suffix=
cg=/sys/fs/cgroup/blkio
[ -d "$cg" ] || { echo "$0: no cgroup v1 blkio hierarchy at $cg" >&2; exit 1; }
if [ -r "$here/jobs/$mix.fio" ]; then
	job=$here/jobs/$mix.fio dir=$here
elif [ -r "$here/../kernel-pending/$mix.fio" ]; then
	job=$here/../kernel-pending/$mix.fio dir=$(cd "$here/../kernel-pending" && pwd)
else
	echo "$0: no job $mix (jobs/$mix.fio, ../kernel-pending/$mix.fio)" >&2
	exit 1
fi
groups=()
cleanup() { for g in "${groups[@]}"; do rmdir "$cg/elevator-record-$g" 2>/dev/null || true; done; }
trap cleanup EXIT
for s in "$@"; do
	g=${s%%=*} w=${s#*=}
	[[ "$g" =~ ^[A-Za-z0-9_-]+$ && "$w" =~ ^[0-9]+$ ]] || { echo "$0: $s: NAME=WEIGHT" >&2; exit 1; }
	mkdir -p "$cg/elevator-record-$g"
	groups+=("$g")
	echo "$w" > "$cg/elevator-record-$g/blkio.bfq.weight"
done
for sched in none mq-deadline kyber bfq; do
	out=$dir/$mix$suffix/$sched
	if [ -d "$out" ]; then
		rm -f "$out"/{meta.json,job.fio,trace.txt.gz,bfq-log.txt.gz,fio.out.gz,fio.stderr,groups.txt}
	fi
	extra=()
	[ "$sched" = bfq ] && extra=(--bfq-log)
	# A name ending in -file: a loop device over a file on the disk, as record.sh (kfresh19).
	case "$mix" in
	*-file) extra+=(--file "${TMPDIR:-/var/tmp}/elevator-record-$mix.img") ;;
	esac
	# blk-throttle limits on the device the recorder is about to attach (the first free one).
	if [ -n "${THROTTLE:-}" ]; then
		dev=$(losetup --find)
		majmin=$(printf '%d:%d' 7 "${dev#/dev/loop}")
		for t in $THROTTLE; do
			g=${t%%:*}
			IFS=, read -ra limits <<<"${t#*:}"
			for l in "${limits[@]}"; do
				k=${l%%=*} v=${l#*=}
				case "$k" in
				riops) f=read_iops_device ;; wiops) f=write_iops_device ;;
				rbps) f=read_bps_device ;; wbps) f=write_bps_device ;;
				*) echo "$0: $l: riops, wiops, rbps or wbps" >&2; exit 1 ;;
				esac
				echo "$majmin $v" > "$cg/elevator-record-$g/blkio.throttle.$f"
			done
		done
		echo "$0: $sched: throttling on $dev ($majmin): $THROTTLE" >&2
	fi
	nr=${NR_REQUESTS-8}
	[ -z "$nr" ] || extra+=(--nr-requests "$nr")
	"$elevator" kernel-record "$job" --sched "$sched" --size "${SIZE:-128M}" \
		--gzip --out "$dir/$mix$suffix" "${extra[@]}"
done
