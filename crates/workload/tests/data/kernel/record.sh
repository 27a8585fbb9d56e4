#!/usr/bin/env bash
# Record the kernel corpus anew: every job under jobs/ under none, mq-deadline, kyber and bfq,
# each into MIX/SCHED/ (trace.txt.gz, job.fio, fio.out.gz, meta.json), on a 128 MiB
# tmpfs-backed direct-I/O loop device with nr_requests 8 (4, 16 or 32 for a mix whose name
# ends in -nr4, -nr16 or -nr32; max_sectors_kb 256 for the 2 MiB reads); bfq's log for the
# interleaved readers (queue merging), the burst of new processes (weight raising) and the
# later mixes. The mixes of branch kfresh16 change scheduler tunables and queue attributes
# from their defaults (the table of --set flags below: the queue's for every scheduler, then
# each scheduler's own), 64 tags for a name ending in -nr64, a loop device over a file on the
# disk for a name ending in -file (in $TMPDIR, else /var/tmp; rotational there) and 4096-byte
# sectors for the four-k-sectors mix. A name ending in -defaults (kfresh19) keeps the
# recorder's defaults: no --nr-requests, and a 1 GiB device. A name starting readahead-1m- raises
# the queue's read_ahead_kb to 1024 (kfresh20); one starting async-depth-2- sets mq-deadline's
# async_depth to 2 (kfresh21). Branch kfid45's mixes set the tunables of their prefix (fifo-batch-64-,
# fifo-batch-1-, wstarved1-, asyncdepth-12-, kyberlat-: the table below) and 256 tags for a
# name ending in -nr256; kfid46's those of bfqnoidle- and kyberdeep-; kfid47's those of
# prioaging5- (mq-deadline's prio_aging_expire 5 ms) and inject-lowlat0- (bfq's low_latency 0);
# kfid48's kyber's latency targets of kyberthr-rbad- and kyberthr-wbad-; kfid49's those of bfqsi0-,
# ddaging-, kybertgt-, bfqbackseek- and bfqtimeout8- (the table below); kfid50's those of ddprio20-,
# kybertight-, asyncwb-, bfqlowlat0-, ddbatch4- and ddexpire2-; kfid52's those of ddtiny-,
# kyberodd-, bfqbudget64- and bfqstrict-, and 12 or 24 tags for a name ending in -nr12 or -nr24;
# kfid54's the queue attributes of bigsplit- (max_sectors_kb 128), nomerges1- and rqaff2-, the
# tunables of nomerges1-, rqaff2-, nr6odd-, durable-, ddaging1-, bfqidle50ms- and fifo1-, and 6
# tags for a name ending in -nr6; kfid57's the queue's read_ahead_kb of ra0- and ra16m-, the tunables
# of rwseq8-, uringnowait-, bfqtune4-, hugebs-, kyberinv- and zoneddist-, and 1024 tags for a name
# ending in -nr1024. Branch kfid60's mixes use the prefixes and suffixes above (bigsplit- for
# max_sectors_kb 128); bfq's log for mmapfault-, sixteen- and libaio- too.
# Needs root, fio, tracefs:
#
#   cargo build --release && sudo ELEVATOR=target/release/elevator \
#       crates/workload/tests/data/kernel/record.sh [MIX ...]
#
# With ROUND=2 (3 ...) in the environment each goes to MIX-round2/SCHED/ instead: a second
# round of the same jobs, minutes later (branches kfresh17 and kfresh18 keep both rounds).
#
# The tests (crates/workload/tests/kernel_corpus.rs) read the corpus without root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
elevator=${ELEVATOR:-elevator}
# ROUND=N (N > 1) records into MIX-roundN/ instead: the same job again, kept beside the first.
suffix=${ROUND:+-round$ROUND}
[ "${ROUND:-}" != 1 ] || suffix=
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
		out=$here/$mix$suffix/$sched
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
		# Tag sets no power of two (kfid52).
		*-nr12) nr=12 ;;
		*-nr24) nr=24 ;;
		# Six tags (kfid54).
		*-nr6) nr=6 ;;
		# 1024 scheduler tags, past the loop device's 128 driver tags (kfid57).
		*-nr1024) nr=1024 ;;
		two-mib-reads-split-at-256k-max-sectors) extra=(--set max_sectors_kb=256) ;;
		esac
		# Tunables and queue attributes a user changes (kfresh16): the queue's for every
		# scheduler, then the scheduler's own; a disk file or 4 KiB sectors for some.
		case "$mix" in
		*-nr64) nr=64 ;;
		# The queue's own 256 scheduler tags (128 under none, whose tag set holds no more).
		*-nr256) nr= ;;
		# What a user writes for 2 tags; the kernel keeps 4 (BLKDEV_MIN_RQ, queue_requests_store),
		# which --nr-requests refuses to record as 2 and the queue's snapshot shows (kfresh18).
		*-nr2) extra+=(--set nr_requests=2) ;;
		esac
		case "$mix" in
		*-file) extra+=(--file "${TMPDIR:-/var/tmp}/elevator-record-$mix.img") ;;
		four-k-sectors-*) extra+=(--sector-size 4096) ;;
		esac
		case "$mix" in
		writes-starved-1-*) extra+=(--set nomerges=2) ;;
		short-budgets-*) extra+=(--set rotational=1) ;;
		large-writes-split-at-64k-*) extra+=(--set max_sectors_kb=64) ;;
		buffered-writeback-*) extra+=(--set wbt_lat_usec=500) ;;
		seq-readers-rotational-nomerges1-*) extra+=(--set rotational=1 --set nomerges=1) ;;
		# Buffered readers with 1 MiB of readahead (kfresh20).
		readahead-1m-*) extra+=(--set read_ahead_kb=1024) ;;
		# bfq's cooperator search on a rotational queue (kfid51).
		bfqcoop-*-rotational) extra+=(--set rotational=1) ;;
		# Queue attributes of branch kfid54's held-out mixes.
		bigsplit-*) extra+=(--set max_sectors_kb=128) ;;
		nomerges1-*) extra+=(--set nomerges=1) ;;
		rqaff2-*) extra+=(--set rq_affinity=2) ;;
		# Buffered readers without readahead, and with 16 MiB of it (kfid57).
		ra0-*) extra+=(--set read_ahead_kb=0) ;;
		ra16m-*) extra+=(--set read_ahead_kb=16384) ;;
		esac
		case "$mix:$sched" in
		short-read-expire-*:mq-deadline) extra+=(--set fifo_batch=1 --set read_expire=20) ;;
		short-read-expire-*:kyber) extra+=(--set read_lat_nsec=100000) ;;
		short-read-expire-*:bfq) extra+=(--set slice_idle=0) ;;
		writes-starved-1-*:mq-deadline) extra+=(--set writes_starved=1) ;;
		writes-starved-1-*:kyber) extra+=(--set write_lat_nsec=200000) ;;
		writes-starved-1-*:bfq) extra+=(--set low_latency=0) ;;
		front-merges-off-*:mq-deadline) extra+=(--set front_merges=0) ;;
		front-merges-off-*:kyber) extra+=(--set read_lat_nsec=50000000 --set write_lat_nsec=500000000) ;;
		front-merges-off-*:bfq) extra+=(--set back_seek_max=0) ;;
		prio-aging-*:mq-deadline) extra+=(--set prio_aging_expire=40) ;;
		prio-aging-*:kyber) extra+=(--set write_lat_nsec=1000000000) ;;
		prio-aging-*:bfq) extra+=(--set strict_guarantees=1) ;;
		short-budgets-*:mq-deadline) extra+=(--set read_expire=5 --set write_expire=50) ;;
		short-budgets-*:kyber) extra+=(--set read_lat_nsec=1000000) ;;
		short-budgets-*:bfq) extra+=(--set timeout_sync=20 --set max_budget=512) ;;
		four-k-sectors-*:mq-deadline) extra+=(--set fifo_batch=4 --set writes_starved=4) ;;
		four-k-sectors-*:kyber) extra+=(--set read_lat_nsec=150000 --set write_lat_nsec=300000) ;;
		four-k-sectors-*:bfq) extra+=(--set back_seek_penalty=1 --set fifo_expire_sync=20) ;;
		large-writes-split-at-64k-*:mq-deadline) extra+=(--set fifo_batch=8 --set write_expire=50) ;;
		large-writes-split-at-64k-*:kyber) extra+=(--set read_lat_nsec=500000) ;;
		large-writes-split-at-64k-*:bfq) extra+=(--set slice_idle_us=2000) ;;
		buffered-writeback-*:mq-deadline) extra+=(--set read_expire=50 --set writes_starved=3) ;;
		buffered-writeback-*:kyber) extra+=(--set read_lat_nsec=20000000 --set write_lat_nsec=200000000) ;;
		buffered-writeback-*:bfq) extra+=(--set timeout_sync=250 --set fifo_expire_sync=50) ;;
		seq-readers-rotational-nomerges1-*:mq-deadline) extra+=(--set front_merges=0 --set fifo_batch=2) ;;
		seq-readers-rotational-nomerges1-*:kyber) extra+=(--set read_lat_nsec=200000) ;;
		seq-readers-rotational-nomerges1-*:bfq) extra+=(--set strict_guarantees=1 --set low_latency=0) ;;
		tuned-budget-*:mq-deadline) extra+=(--set fifo_batch=4 --set write_expire=100) ;;
		tuned-budget-*:kyber) extra+=(--set read_lat_nsec=300000 --set write_lat_nsec=3000000) ;;
		tuned-budget-*:bfq) extra+=(--set max_budget=1024 --set slice_idle=2 --set low_latency=0) ;;
		# Writes held to 2 of mq-deadline's 16 tags (dd_limit_depth; kfresh21).
		async-depth-2-*:mq-deadline) extra+=(--set async_depth=2) ;;
		# Tunables of branch kfid45's held-out mixes.
		fifo-batch-64-*:mq-deadline) extra+=(--set fifo_batch=64) ;;
		fifo-batch-64-*:kyber) extra+=(--set read_lat_nsec=50000000) ;;
		fifo-batch-1-*:mq-deadline) extra+=(--set fifo_batch=1 --set read_expire=20) ;;
		fifo-batch-1-*:kyber) extra+=(--set read_lat_nsec=100000) ;;
		wstarved1-*:mq-deadline) extra+=(--set writes_starved=1 --set front_merges=0) ;;
		wstarved1-*:kyber) extra+=(--set write_lat_nsec=1000000) ;;
		asyncdepth-12-*:mq-deadline) extra+=(--set async_depth=12) ;;
		asyncdepth-12-*:kyber) extra+=(--set read_lat_nsec=50000000 --set write_lat_nsec=1000000) ;;
		kyberlat-*:mq-deadline) extra+=(--set read_expire=20) ;;
		kyberlat-*:kyber) extra+=(--set read_lat_nsec=100000 --set write_lat_nsec=1000000) ;;
		# Tunables of branch kfid46's held-out mixes.
		bfqnoidle-*:bfq) extra+=(--set low_latency=0 --set slice_idle=0 --set strict_guarantees=1) ;;
		kyberdeep-*:kyber) extra+=(--set read_lat_nsec=250000 --set write_lat_nsec=2000000) ;;
		# Tunables of branch kfid47's held-out mixes.
		prioaging5-*:mq-deadline) extra+=(--set prio_aging_expire=5) ;;
		inject-lowlat0-*:bfq) extra+=(--set low_latency=0) ;;
		# Tunables of branch kfid48's held-out mixes: one domain's target below the loop
		# device's latency (congested), the other's far above it (its depth cut).
		kyberthr-rbad-*:kyber) extra+=(--set read_lat_nsec=10000 --set write_lat_nsec=1000000000) ;;
		kyberthr-wbad-*:kyber) extra+=(--set read_lat_nsec=1000000000 --set write_lat_nsec=10000) ;;
		# Tunables of branch kfid49's held-out mixes.
		bfqsi0-*:bfq) extra+=(--set slice_idle=0) ;;
		ddaging-*:mq-deadline) extra+=(--set read_expire=5 --set write_expire=20) ;;
		ddaging-*:kyber) extra+=(--set write_lat_nsec=500000) ;;
		ddaging-*:bfq) extra+=(--set fifo_expire_async=40) ;;
		kybertgt-*:kyber) extra+=(--set read_lat_nsec=500000 --set write_lat_nsec=5000000) ;;
		bfqbackseek-*:bfq) extra+=(--set back_seek_max=16 --set back_seek_penalty=1) ;;
		bfqtimeout8-*:bfq) extra+=(--set timeout_sync=8) ;;
		# Tunables of branch kfid50's held-out mixes (deep queues, many real choices).
		ddprio20-*:mq-deadline) extra+=(--set prio_aging_expire=20 --set fifo_batch=8) ;;
		kybertight-*:kyber) extra+=(--set read_lat_nsec=20000 --set write_lat_nsec=40000) ;;
		asyncwb-*:mq-deadline) extra+=(--set async_depth=4) ;;
		bfqlowlat0-*:bfq) extra+=(--set low_latency=0) ;;
		ddbatch4-*:mq-deadline) extra+=(--set fifo_batch=4 --set writes_starved=1 --set read_expire=10) ;;
		ddexpire2-*:mq-deadline) extra+=(--set read_expire=2 --set write_expire=4 --set fifo_batch=32) ;;
		ddexpire2-*:kyber) extra+=(--set read_lat_nsec=200000) ;;
		ddexpire2-*:bfq) extra+=(--set fifo_expire_sync=8) ;;
		# Tunables of branch kfid52's held-out mixes.
		ddtiny-*:mq-deadline) extra+=(--set read_expire=1 --set write_expire=1 --set fifo_batch=2 --set writes_starved=8) ;;
		ddtiny-*:kyber) extra+=(--set read_lat_nsec=3333333 --set write_lat_nsec=777777) ;;
		ddtiny-*:bfq) extra+=(--set slice_idle_us=100 --set max_budget=64) ;;
		kyberodd-*:mq-deadline) extra+=(--set fifo_batch=3 --set writes_starved=3) ;;
		kyberodd-*:kyber) extra+=(--set read_lat_nsec=1 --set write_lat_nsec=123456789) ;;
		kyberodd-*:bfq) extra+=(--set back_seek_max=1048576 --set back_seek_penalty=64) ;;
		bfqbudget64-*:mq-deadline) extra+=(--set writes_starved=8 --set read_expire=1000) ;;
		bfqbudget64-*:bfq) extra+=(--set max_budget=64 --set timeout_sync=500 --set slice_idle_us=100) ;;
		bfqstrict-*:mq-deadline) extra+=(--set prio_aging_expire=1000) ;;
		bfqstrict-*:kyber) extra+=(--set write_lat_nsec=50000) ;;
		bfqstrict-*:bfq) extra+=(--set strict_guarantees=1 --set low_latency=0) ;;
		# Tunables of branch kfid54's held-out mixes.
		nomerges1-*:mq-deadline) extra+=(--set fifo_batch=4) ;;
		nomerges1-*:kyber) extra+=(--set read_lat_nsec=500000) ;;
		nomerges1-*:bfq) extra+=(--set slice_idle_us=500) ;;
		rqaff2-*:kyber) extra+=(--set read_lat_nsec=1000000 --set write_lat_nsec=5000000) ;;
		nr6odd-*:kyber) extra+=(--set write_lat_nsec=2000000) ;;
		nr6odd-*:bfq) extra+=(--set slice_idle_us=2000) ;;
		durable-*:mq-deadline) extra+=(--set writes_starved=1) ;;
		durable-*:kyber) extra+=(--set write_lat_nsec=1000000) ;;
		durable-*:bfq) extra+=(--set fifo_expire_async=50) ;;
		ddaging1-*:mq-deadline) extra+=(--set prio_aging_expire=1) ;;
		ddaging1-*:kyber) extra+=(--set read_lat_nsec=300000) ;;
		bfqidle50ms-*:mq-deadline) extra+=(--set read_expire=100) ;;
		bfqidle50ms-*:bfq) extra+=(--set slice_idle_us=50000) ;;
		fifo1-*:mq-deadline) extra+=(--set read_expire=2 --set write_expire=3 --set fifo_batch=1) ;;
		fifo1-*:kyber) extra+=(--set read_lat_nsec=20000000) ;;
		fifo1-*:bfq) extra+=(--set fifo_expire_sync=1 --set fifo_expire_async=1 --set slice_idle_us=10) ;;
		# Tunables of branch kfid57's held-out mixes.
		rwseq8-*:mq-deadline) extra+=(--set fifo_batch=8) ;;
		rwseq8-*:kyber) extra+=(--set read_lat_nsec=400000) ;;
		uringnowait-*:mq-deadline) extra+=(--set fifo_batch=4) ;;
		uringnowait-*:kyber) extra+=(--set write_lat_nsec=2000000) ;;
		uringnowait-*:bfq) extra+=(--set slice_idle_us=1000) ;;
		bfqtune4-*:mq-deadline) extra+=(--set read_expire=250 --set writes_starved=4) ;;
		bfqtune4-*:kyber) extra+=(--set read_lat_nsec=1500000) ;;
		bfqtune4-*:bfq) extra+=(--set back_seek_max=64 --set back_seek_penalty=8 --set fifo_expire_sync=60 \
			--set fifo_expire_async=100 --set max_budget=2048 --set timeout_sync=50) ;;
		hugebs-*:mq-deadline) extra+=(--set fifo_batch=32) ;;
		hugebs-*:kyber) extra+=(--set read_lat_nsec=3000000) ;;
		kyberinv-*:mq-deadline) extra+=(--set write_expire=200) ;;
		kyberinv-*:kyber) extra+=(--set read_lat_nsec=2000000000 --set write_lat_nsec=5000) ;;
		kyberinv-*:bfq) extra+=(--set fifo_expire_async=125) ;;
		zoneddist-*:mq-deadline) extra+=(--set front_merges=0) ;;
		zoneddist-*:bfq) extra+=(--set low_latency=0) ;;
		esac
		case "$mix:$sched" in
		interleaved-readers:bfq | process-burst:bfq | mmapfault-*:bfq | sixteen-*:bfq | libaio-*:bfq | reader-beside-*:bfq | prio-writers-*:bfq | \
			weighted-*:bfq | holey-*:bfq | rt-*:bfq | idle-*:bfq | deep-*:bfq | direct-*:bfq | \
			trim-*:bfq | twelve-*:bfq | thinking-*:bfq | sqpoll-*:bfq | buffered-*:bfq | \
			eight-*:bfq | posixaio-*:bfq | three-*:bfq | readers-thinking-*:bfq | \
			qd1-*:bfq | same-*:bfq | two-*:bfq | fsync-*:bfq | batched-*:bfq | per-io-*:bfq | \
			short-*:bfq | writes-*:bfq | front-*:bfq | prio-aging-*:bfq | four-*:bfq | \
			large-*:bfq | seq-*:bfq | rate-*:bfq | burst-*:bfq | osync-*:bfq | bssplit-*:bfq | \
			tuned-*:bfq | prio-readers-*:bfq | randread-*:bfq | randwrite-*:bfq | \
			randrw70-*:bfq | mixed-4k-*:bfq | dblog-*:bfq | big-*:bfq | thinktime-*:bfq | \
			psync-*:bfq | randrw-*:bfq | nice-*:bfq | offset-*:bfq | zipf-*:bfq | \
			readwrite-*:bfq | bs512-*:bfq | numjobs32-*:bfq | readahead-*:bfq | verify-*:bfq | \
			cpus-*:bfq | randrw90-*:bfq | iodepth-*:bfq | poisson-*:bfq | strided-*:bfq | \
			identical-*:bfq | bsrange-*:bfq | iouring-*:bfq | flow-*:bfq | \
			async-*:bfq | fifo-*:bfq | wstarved1-*:bfq | asyncdepth-*:bfq | ionice-*:bfq | \
			kyberlat-*:bfq | fdatasync-*:bfq | bfqnoidle-*:bfq | kyberdeep-*:bfq | \
			inject-*:bfq | kyber3dom-*:bfq | prioaging5-*:bfq | kyberthr-*:bfq | \
			oddbs-*:bfq | bfqsi0-*:bfq | ddaging-*:bfq | manyjobs48-*:bfq | ddtrim-*:bfq | \
			kybertgt-*:bfq | bfqbackseek-*:bfq | bfqtimeout8-*:bfq | qd64-*:bfq | \
			ddprio20-*:bfq | kybertight-*:bfq | asyncwb-*:bfq | bfqlowlat*:bfq | \
			nrsmall-*:bfq | ddbatch4-*:bfq | bfqlevels-*:bfq | ddexpire2-*:bfq | \
			bfqcoop-*:bfq | tpcclike-*:bfq | nr12odd-*:bfq | cbssplit-*:bfq | \
			vsync-*:bfq | trimwrite-*:bfq | ddtiny-*:bfq | kyberodd-*:bfq | \
			bfqbudget64-*:bfq | bfqstrict-*:bfq | numjobs12-*:bfq | mergestreams-*:bfq | \
			bigsplit-*:bfq | nomerges1-*:bfq | rqaff2-*:bfq | nr6odd-*:bfq | iodlow-*:bfq | \
			fadvise-*:bfq | durable-*:bfq | ddaging1-*:bfq | bfqidle50ms-*:bfq | fifo1-*:bfq | \
			zonestrided-*:bfq | rwseq8-*:bfq | ra0-*:bfq | ra16m-*:bfq | mmapsplice-*:bfq | \
			uringnowait-*:bfq | nr1024-*:bfq | bfqtune4-*:bfq | hugebs-*:bfq | ramp-*:bfq | \
			kyberinv-*:bfq | zoneddist-*:bfq) \
			extra+=(--bfq-log) ;;
		esac
		# A name ending in -defaults is recorded as a judge would record it, omitting the
		# flags the recorder has defaults for: no --nr-requests (the queue keeps the tags the
		# scheduler got, 256 here) and a larger device (kfresh19).
		depth=(--nr-requests "$nr") size=128M
		case "$mix" in
		*-defaults) depth=() size=1G ;;
		*-nr256) depth=() ;;
		# none's tags are the tag set's 128: it keeps its own there (kfid57).
		*-nr1024) [ "$sched" != none ] || depth=() ;;
		esac
		"$elevator" kernel-record "$job" --sched "$sched" "${depth[@]}" --size "$size" \
			--gzip --out "$here/$mix$suffix" "${extra[@]}"
	done
done
