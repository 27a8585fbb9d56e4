#!/usr/bin/env bash
# Record a job mix whose fio jobs run in cgroup v1 blkio groups under each scheduler into
# MIX/SCHED as record.sh records the corpus (--nr-requests 8 --size 128M --gzip, bfq with
# --bfq-log). Each job is moved, during its start delay, into the group given for it (one
# GROUP=WEIGHT argument per job, in job order: fio forks the jobs in that order; `-` leaves a
# job in the root group), made here under /sys/fs/cgroup/blkio as elevator-record-GROUP with
# that blkio.bfq.weight and removed at the end. kernel-record refuses fio's own `cgroup`
# options, so the jobs are moved by their pids, and the script writes what it did into
# MIX/SCHED/groups.txt (`group PATH WEIGHT`, `pid PID PATH`), which kernel-diff reads to give
# each process its group. Needs root, fio, tracefs and the v1 blkio hierarchy:
#
#   cargo build --release && sudo ELEVATOR=target/release/elevator \
#       crates/workload/tests/data/kernel-pending/record-cgroup.sh \
#       cgroup-weights-three-groups g0=100 g1=300 g2=900 g3=50
#   ... record-cgroup.sh cgroup-pairs-beside-writer-and-root-reader \
#       pair100=100 pair100=100 pair400=400 pair400=400 writer=200 -
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
elevator=${ELEVATOR:-elevator}
[ $# -ge 2 ] || { echo "usage: $0 MIX GROUP=WEIGHT|- ..." >&2; exit 1; }
mix=$1
shift
specs=("$@")
n=${#specs[@]}
cg=/sys/fs/cgroup/blkio
[ -d "$cg" ] || { echo "$0: no cgroup v1 blkio hierarchy at $cg" >&2; exit 1; }
[ -r "$here/$mix.fio" ] || { echo "$0: no job $here/$mix.fio" >&2; exit 1; }
declare -A weight=()
for s in "${specs[@]}"; do
	[ "$s" = - ] && continue
	g=${s%%=*} w=${s#*=}
	[[ "$g" =~ ^[A-Za-z0-9_-]+$ && "$w" =~ ^[0-9]+$ ]] || { echo "$0: $s: GROUP=WEIGHT" >&2; exit 1; }
	weight[$g]=$w
done
cleanup() { for g in "${!weight[@]}"; do rmdir "$cg/elevator-record-$g" 2>/dev/null || true; done; }
trap cleanup EXIT
for g in "${!weight[@]}"; do
	mkdir -p "$cg/elevator-record-$g"
	echo "${weight[$g]}" > "$cg/elevator-record-$g/blkio.bfq.weight"
done
for sched in none mq-deadline kyber bfq; do
	out=$here/$mix/$sched
	if [ -d "$out" ]; then
		rm -f "$out"/{meta.json,job.fio,trace.txt.gz,bfq-log.txt.gz,fio.out.gz,fio.stderr,groups.txt}
	fi
	extra=()
	[ "$sched" = bfq ] && extra=(--bfq-log)
	"$elevator" kernel-record "$here/$mix.fio" --sched "$sched" --nr-requests 8 --size 128M \
		--gzip --out "$here/$mix" "${extra[@]}" &
	rec=$!
	moved=()
	for _ in $(seq 2000); do
		main=$(pgrep -P "$rec" -x fio || true)
		if [ -n "$main" ]; then
			mapfile -t jobs < <(pgrep -P "$main" -x fio | sort -n)
			if [ "${#jobs[@]}" -ge "$n" ]; then
				for i in "${!specs[@]}"; do
					[ "${specs[$i]}" = - ] && continue
					echo "${jobs[$i]}" > "$cg/elevator-record-${specs[$i]%%=*}/cgroup.procs"
				done
				moved=("${jobs[@]:0:$n}")
				# Mark the move in kernel-record's trace (its instance is named by its pid).
				echo "elevator record-cgroup: jobs moved" \
					> "/sys/kernel/tracing/instances/elevator-record-$rec/trace_marker"
				break
			fi
		fi
		sleep 0.005
	done
	wait "$rec"
	[ "${#moved[@]}" = "$n" ] || { echo "$0: $sched: the jobs were not moved into their groups" >&2; exit 1; }
	{
		echo "# record-cgroup.sh $mix ${specs[*]}: cgroup v1 blkio groups (PATH blkio.bfq.weight)"
		echo "# and the job processes moved into them (pid PID PATH); the others ran in the root."
		for g in $(printf '%s\n' "${!weight[@]}" | sort); do echo "group /elevator-record-$g ${weight[$g]}"; done
		for i in "${!specs[@]}"; do
			[ "${specs[$i]}" = - ] && continue
			echo "pid ${moved[$i]} /elevator-record-${specs[$i]%%=*}"
		done
	} > "$out/groups.txt"
	# A process moved after its first I/O had its bfq queue made in the root group (the
	# kernel moves it at the next request, bfq_bic_update_cgroup, which the replay does not
	# model; the stable merge of queues of different groups showed it): each moved job's
	# first block event must follow the mark. Under load the move can come too late: record
	# again.
	late=$(zcat "$out/trace.txt.gz" | awk -v pids=" ${moved[*]} " '
		/elevator record-cgroup: jobs moved/ { marked = 1; next }
		/block_/ && !marked && !late { n = split($1, t, "-"); if (index(pids, " " t[n] " ")) late = t[n] }
		END { if (late) print late; else if (!marked) print "no-mark" }')
	[ -z "$late" ] || { echo "$0: $sched: job $late did I/O before it was moved into its group: record again" >&2; exit 1; }
	# The pids moved must be the recording's job processes, in job order.
	want=$(jq -r '.fio.jobs[].pid' "$out/meta.json" | tr '\n' ' ')
	[ "$want" = "${moved[*]} " ] || { echo "$0: $sched: moved ${moved[*]}, fio's jobs were $want" >&2; exit 1; }
done
