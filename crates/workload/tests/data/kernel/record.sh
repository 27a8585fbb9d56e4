#!/usr/bin/env bash
# Record the kernel corpus anew: every job under jobs/ under none, mq-deadline, kyber and bfq,
# each into MIX/SCHED/ (trace.txt.gz, job.fio, fio.out.gz, meta.json), on a 128 MiB
# tmpfs-backed direct-I/O loop device with nr_requests 8 (4, 16 or 32 for a mix whose name
# ends in -nr4, -nr16 or -nr32; max_sectors_kb 256 for the 2 MiB reads); bfq's log for the
# interleaved readers (queue merging), the burst of new processes (weight raising) and the
# later mixes. Needs root, fio, tracefs:
#
#   cargo build --release && sudo ELEVATOR=target/release/elevator \
#       crates/workload/tests/data/kernel/record.sh [MIX ...]
#
# The tests (crates/workload/tests/kernel_corpus.rs) read the corpus without root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
elevator=${ELEVATOR:-elevator}
mixes=("$@")
if [ ${#mixes[@]} -eq 0 ]; then
	for job in "$here"/jobs/*.fio; do mixes+=("$(basename "$job" .fio)"); done
fi
for mix in "${mixes[@]}"; do
	job=$here/jobs/$mix.fio
	[ -r "$job" ] || { echo "$0: no job $job" >&2; exit 1; }
	if grep -q '^cgroup=' "$job"; then
		# Its groups must exist first: record-cgroup.sh makes them (weights in the job's header).
		echo "$0: $mix runs in cgroups: record it with record-cgroup.sh" >&2
		continue
	fi
	for sched in none mq-deadline kyber bfq; do
		out=$here/$mix/$sched
		# The recorder wants an empty directory: clear only a previous recording's files.
		if [ -d "$out" ]; then
			rm -f "$out"/{meta.json,job.fio,trace.txt.gz,bfq-log.txt.gz,fio.out.gz,fio.stderr}
		fi
		extra=()
		nr=8
		case "$mix" in
		*-nr4) nr=4 ;;
		*-nr16) nr=16 ;;
		*-nr32) nr=32 ;;
		two-mib-reads-split-at-256k-max-sectors) extra=(--set max_sectors_kb=256) ;;
		esac
		case "$mix:$sched" in
		interleaved-readers:bfq | process-burst:bfq | reader-beside-*:bfq | prio-writers-*:bfq | \
			weighted-*:bfq | holey-*:bfq | rt-*:bfq | idle-*:bfq | deep-*:bfq | direct-*:bfq | \
			trim-*:bfq | twelve-*:bfq | thinking-*:bfq | sqpoll-*:bfq | buffered-*:bfq | \
			eight-*:bfq | posixaio-*:bfq | three-*:bfq | readers-thinking-*:bfq | \
			qd1-*:bfq | same-*:bfq | two-*:bfq | fsync-*:bfq | batched-*:bfq | per-io-*:bfq) \
			extra+=(--bfq-log) ;;
		esac
		"$elevator" kernel-record "$job" --sched "$sched" --nr-requests "$nr" --size 128M \
			--gzip --out "$here/$mix" "${extra[@]}"
	done
done
