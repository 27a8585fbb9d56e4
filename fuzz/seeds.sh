#!/usr/bin/env bash
# Seed corpora for the fuzz targets, generated (nothing from shared/data is committed):
# small hand-made lines of every trace format, a blktrace our simulator writes, the project's own
# scenario, drive and fio files, and (when ../shared/data is present) the DiskSim .parv files.
set -euo pipefail
cd "$(dirname "$0")"
c=corpus
mkdir -p $c/traces $c/fio_job $c/scenario_toml $c/drive_toml $c/disksim_import $c/ftrace \
  $c/io_settings $c/campaign_grid $c/kernel_diff
printf 'fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n/dev/sdb wait 100\n/dev/sdb write 8192 512\n/dev/sdb close\n' > $c/traces/fio2
printf 'fio version 3 iolog\n2 a add\n878 a write 0 16384\n900 a trim 4096 4096\n901 a sync 0 0\n' > $c/traces/fio3
printf '128166372003061629,web,0,Read,3813654528,4096,1264\n128166372016382155,web,1,Write,1024,512,0\n' > $c/traces/msr
printf '0,303567,3584,w,0.000000\n1,55596,3072,r,0.078643\n' > $c/traces/spc
printf '419,W,8637440,4096,1577808000000003\n419,R,0,512,1577808000000010\n' > $c/traces/alibaba
printf '1538323200,12551232,8,1,1063\n1538323201,100,16,0,7\n' > $c/traces/tencent
printf '0.5 0 100 8 1\n1.25 1 200 16 0\n' > $c/traces/disksim
printf '938513000 4 264719034 16 0\n938828000 3 197570570 16 0\n' > $c/traces/mqsim
printf '  8,16   1        1     0.000000000  4162  Q  WS 2048 + 8 [dd]\n  8,16   1        2     0.000004000  4162  D  WS 2048 + 8 [dd]\n  8,16   0        1     0.000104000     0  C  WS 2048 + 8 [0]\n  8,16   1        7     0.000300000   99  A   R 4096 + 16 <- (8,17) 2048\nCPU0 (8,16):\n' > $c/traces/blkparse
tmp=$(mktemp -d)
printf '0.5 0 100 8 1\n1.0 1 5000 8 0\n1.5 0 108 8 1\n2.0 1 5008 8 0\n' > "$tmp/t.trace"
if [ -n "${ELEVATOR:-}" ]; then run=("$ELEVATOR"); else
  run=(cargo run --release -q --manifest-path ../Cargo.toml -p elevator --); fi
"${run[@]}" replay "$tmp/t.trace" --sched deadline --blktrace-out "$tmp/bt" >/dev/null
cp "$tmp/bt/deadline.blktrace.0" $c/traces/blktrace-v7
rm -rf "$tmp"
# The kernel corpus's tracefs text: the first lines of each mix under each scheduler.
for t in ../crates/workload/tests/data/kernel/*/*/trace.txt.gz; do
  mix=$(basename "$(dirname "$(dirname "$t")")"); sched=$(basename "$(dirname "$t")")
  gzip -dc "$t" | head -n 200 > "$c/ftrace/$mix-$sched" || true
done
# The replay's: a byte naming the scheduler (low two bits: none, mq-deadline, kyber, bfq) and
# the queue depth (the rest, plus one: 8 here), then the first lines of a recording under it.
n=0
for t in ../crates/workload/tests/data/kernel/*/*/trace.txt.gz; do
  sched=$(basename "$(dirname "$t")")
  case $sched in none) s=0;; mq-deadline) s=1;; kyber) s=2;; bfq) s=3;; *) continue;; esac
  n=$((n + 1)); [ $((n % 7)) -eq 0 ] || continue
  mix=$(basename "$(dirname "$(dirname "$t")")")
  { printf "\\$(printf '%03o' $(( (7 << 2) | s )))"; gzip -dc "$t" | head -n 400; } > "$c/kernel_diff/$mix-$sched" || true
done
gzip -dc ../crates/workload/tests/data/kernel/interleaved-readers/bfq/bfq-log.txt.gz | head -n 100 > $c/ftrace/bfq-log || true
cp ../scenarios/*.toml $c/scenario_toml/
cp ../crates/sim/drives/*.toml $c/drive_toml/
printf '[global]\nioengine=io_uring\ndirect=1\nbs=4k\n\n[reader]\nrw=randread\nsize=16m\niodepth=8\n\n[writer]\nstonewall\nrw=write\nsize=8m\n' > $c/fio_job/two.fio
printf '[global]\nioengine=libaio\ndirect=1\nsize=1m\nnumber_ios=300\n\n[b]\nrw=randrw\nbssplit=4k/50:64k/30:512/20,16k\niodepth=16\niodepth_batch_submit=4\niodepth_low=2\niodepth_batch_complete_min=3\niodepth_batch_complete_max=8\nfsync=5\nend_fsync=1\n\n[c]\nrw=read:-8k\nbsrange=4k-16k\nstartdelay=1-2\nrate_iops=1000\n\n[d]\nrw=randread:4\nrw_sequencer=identical\niodepth_batch_complete_min=0\niodepth_batch_complete_max=0\niodepth=4\n' > $c/fio_job/batches.fio
# The offset options: random_distribution (each kind, centers, per-direction zones),
# random_generator, percentage_random, blockalign/ba, rate_process=poisson, strided zones.
printf '[global]\nioengine=psync\nsize=4m\nnumber_ios=200\n\n[z]\nrw=randrw\nrandom_distribution=zipf:1.2:0.5\nrandom_generator=lfsr\n\n[p]\nrw=randread\nrandom_distribution=pareto:0.3\nba=512\nrate_iops=5000\nrate_process=poisson\n\n[n]\nrw=randwrite\nrandom_distribution=normal:10:0\nnorandommap\npercentage_random=40,70\n\n[zo]\nrw=randrw\nbssplit=4k/50:16k/50\nrandom_distribution=zoned:60/10:30/20:10/,100/\nblockalign=8k,4k\n\n[za]\nrw=randread\nrandom_distribution=zoned_abs:90/1m:10/3m\ntime_based\nruntime=1\n' > $c/fio_job/distributions.fio
printf '[global]\nioengine=libaio\niodepth=4\nsize=8m\nnumber_ios=100\n\n[s]\nrw=read\nzonemode=strided\nzonesize=8k\nzonerange=6k\nzoneskip=1m\n\n[r]\nrw=randrw\nzonemode=strided\nzonesize=64k\nzonerange=1m\nzoneskip=960k\nrandom_distribution=zoned_abs:50/64k:50/512k\npercentage_random=50\n\n[w]\nrw=randread\nzonemode=strided\nzonesize=2m\nzonerange=512k\nrate=1m\nrate_process=poisson\n' > $c/fio_job/strided.fio
data=../../shared/data/disksim-valid
if [ -d "$data" ]; then
  for f in "$data"/*.parv; do cp "$f" "$c/disksim_import/"; done
else
  echo "shared/data absent: the disksim_import corpus starts empty" >&2
fi
# io settings: an io.max line, then io.cost.qos (first and second lines), then numbers.
printf 'rbps=2097152 wiops=120 wbps=max\nenable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=150\n' > $c/io_settings/max-qos
printf 'ctrl=user model=linear rbps=2706339840 rseqiops=89698 rrandiops=110036 wbps=1063126016 wseqiops=135560 wrandiops=130734\n\n100 200 5000\n' > $c/io_settings/model
printf 'riops=1 wiops=1\nenable=1\n1 1 1\n' > $c/io_settings/tight
# campaign grids: axes, one a line.
printf 'seed=1..5\ndeadline.fifo_batch=1,4,16\n' > $c/campaign_grid/seed-tunable
printf 'job.r.number_ios=1..8\ndrive=laptop-4200,cheetah9lp\n' > $c/campaign_grid/job-drive
printf 'seed=-9223372036854775808..9223372036854775807\n' > $c/campaign_grid/wide-range
