#!/usr/bin/env bash
# Trace the kernel's own I/O scheduler during one fio run, without blktrace or debugfs:
# ftrace's `blk` tracer records the block layer's events and the scheduler's messages (bfq's
# bfq_log_bfqq lines); kyber's tracepoints are switched on too. Prints a summary.
#
#   sudo bench/trace-kernel-sched.sh DEV SCHED JOB.fio OUTDIR
#
# DEV: a block device (e.g. /dev/loop0 made by `losetup --direct-io=on`); SCHED: one of its
# schedulers (none, mq-deadline, kyber, bfq); JOB.fio: run with --filename=DEV, so it WRITES
# to DEV if its jobs write. OUTDIR gets sched.trace (the raw trace), fio.json and summary.txt.
set -euo pipefail

if [ $# -ne 4 ]; then
	echo "usage: $0 DEV SCHED JOB.fio OUTDIR" >&2
	exit 2
fi
dev=$1 sched=$2 job=$3 out=$4
[ "$(id -u)" -eq 0 ] || { echo "$0: needs root (tracefs, sysfs)" >&2; exit 1; }
[ -b "$dev" ] || { echo "$0: $dev: not a block device" >&2; exit 1; }
[ -r "$job" ] || { echo "$0: $job: cannot read the job file" >&2; exit 1; }
command -v fio >/dev/null || { echo "$0: needs fio (apt-get install fio)" >&2; exit 1; }
name=$(basename "$(readlink -f "$dev")")
queue=/sys/block/$name
tr=/sys/kernel/tracing
[ -w "$tr/current_tracer" ] || { echo "$0: $tr not mounted or not writable" >&2; exit 1; }
grep -qw blk "$tr/available_tracers" || { echo "$0: this kernel has no blk tracer" >&2; exit 1; }
mkdir -p "$out"

old_sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$queue/queue/scheduler")
restore() {
	echo 0 >"$tr/tracing_on" || true
	echo nop >"$tr/current_tracer" || true
	echo 0 >"$queue/trace/enable" || true
	[ -d "$tr/events/kyber" ] && echo 0 >"$tr/events/kyber/enable" || true
	echo "$old_sched" >"$queue/queue/scheduler" || true
	[ -n "${reader:-}" ] && kill "$reader" 2>/dev/null || true
}
trap restore EXIT

echo "$sched" >"$queue/queue/scheduler"
echo 0 >"$tr/tracing_on"
echo >"$tr/trace"
echo 65536 >"$tr/buffer_size_kb"
echo 1 >"$queue/trace/enable"
echo blk >"$tr/current_tracer"
[ -d "$tr/events/kyber" ] && echo 1 >"$tr/events/kyber/enable"
echo 1 >"$tr/tracing_on"
cat "$tr/trace_pipe" >"$out/sched.trace" &
reader=$!
fio --output-format=json --output="$out/fio.json" --filename="$dev" "$job" >/dev/null
sleep 1
echo 0 >"$tr/tracing_on"
sleep 1
kill "$reader" 2>/dev/null || true
reader=

{
	echo "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), $dev, $sched, $job; load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "queues allocated: $(grep -c ' allocated$' "$out/sched.trace" || true)"
	echo "queue merges: $(grep -c 'merge_bfqqs' "$out/sched.trace" || true)"
	echo "requests over their queue's depth limit: $(grep -c 'too many requests' "$out/sched.trace" || true)"
	echo "expirations by reason (0 too idle, 1 budget timeout, 2 budget exhausted, 3 no more requests, 4 preempted):"
	grep -o 'expire ([0-9]' "$out/sched.trace" | sort | uniq -c | sed 's/expire (/  reason /' || true
	# kyber's tracepoints fire for every device: count this one's (major,minor).
	devno="$((16#$(stat -L -c %t "$dev"))),$((16#$(stat -L -c %T "$dev")))"
	echo "kyber depth changes: $(grep 'kyber_adjust' "$out/sched.trace" | grep -c " $devno " || true)"
	echo "kyber latency reports (p90 I/O, p99 total; bucket/of-target): $(grep 'kyber_latency' "$out/sched.trace" | grep -c " $devno " || true)"
	echo "completed each second (reads, writes):"
	awk '/ C  [RW]/ {
		split($4, a, ":"); t = a[1] + 0
		if (start == "") start = t
		s = int(t - start)
		if ($0 ~ / C  R/) r[s]++; else w[s]++
		if (s > last) last = s
	}
	END { for (i = 0; i <= last; i++) printf "  %2d s: %d reads, %d writes\n", i, r[i], w[i] }' "$out/sched.trace"
} | tee "$out/summary.txt"
