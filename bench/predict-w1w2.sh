#!/bin/sh
# Calibrate the SSD model on a target, then set the simulator's W1 and W2 predictions (reader
# IOPS, writer MB/s under none, mq-deadline, kyber and latency-guard) beside the executor's
# medians over interleaved rounds on the same target (docs/ssd-model.md, "Predicting this
# machine").
#
#   sudo bench/predict-w1w2.sh file OUTDIR      # a 9 GiB file in $WORKDIR (default /var/tmp)
#   sudo bench/predict-w1w2.sh loop OUTDIR      # a direct-io loop device (4 KiB sectors) over one
#
# Environment: ROUNDS (default 3), DURATION (calibration seconds, default 120), RT (the
# command prefix for every measured run, default `chrt -f 50`: our executor is one thread, and
# a loaded machine otherwise measures its CPU queue), ELEVATOR (default target/release/elevator),
# SETTLE (seconds to wait after laying the image out before calibrating, default 180: the host
# below this VM goes on writing the layout back for minutes, and a calibration taken meanwhile
# fitted a drive that W1 and W2 then did not meet, 9 of 16 within +-30% in session 23).
set -eu
ON=${1:?usage: predict-w1w2.sh file|loop OUTDIR}
OUT=${2:?usage: predict-w1w2.sh file|loop OUTDIR}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-120}
RT=${RT:-chrt -f 50}
ELEVATOR=${ELEVATOR:-target/release/elevator}
WORKDIR=${WORKDIR:-/var/tmp}
SETTLE=${SETTLE:-180}
SCHEDS="none mq-deadline kyber latency-guard"
mkdir -p "$OUT"
IMG="$WORKDIR/elevator-predict.$$.img"
LOOP=""
cleanup() {
    [ -n "$LOOP" ] && losetup -d "$LOOP" || true
    rm -f "$IMG"
}
trap cleanup EXIT INT TERM
case "$ON" in
file) TARGET="$IMG"; ALLOW="" ;;
loop)
    # Written in full first (as `run` lays out a file): on a sparse image the calibration's
    # reads hit holes (12 us at depth 1 in session 22, where W1's reader, reading blocks the
    # calibration had written, took 115 us alone).
    dd if=/dev/zero of="$IMG" bs=1M count=9216 oflag=direct status=none
    LOOP=$(losetup --find --show --direct-io=on --sector-size 4096 "$IMG")
    TARGET="$LOOP"
    # Our own scratch device: every run after the first writes over the previous one's data.
    ALLOW="--allow-overwrite" ;;
*) echo "file or loop, not $ON" >&2; exit 2 ;;
esac
if [ "$ON" = file ]; then
    # Lay the file out (8 GiB, owned by elevator) with one run of W1, left out of the figures.
    $ELEVATOR run bench/jobs/w1.fio --target "$IMG" --sched none --output /dev/null
fi
sync
echo "letting the host write the layout back: ${SETTLE} s" >&2
sleep "$SETTLE"
{ date -u; uptime; } > "$OUT/start.txt"
$RT $ELEVATOR calibrate --target "$TARGET" --duration "$DURATION" $ALLOW \
    --name "calibrated-$ON" -o "$OUT/spec.toml" --json "$OUT/calibrate.json"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for w in w1 w2; do
        for s in $SCHEDS; do
            uptime >> "$OUT/loads.txt"
            $RT $ELEVATOR run "bench/jobs/$w.fio" --target "$TARGET" --sched "$s" $ALLOW \
                --output-format json --output "$OUT/$w-$s-r$r.json"
        done
    done
    r=$((r + 1))
done
{ date -u; uptime; } > "$OUT/end.txt"
for w in w1 w2; do
    $ELEVATOR sim "bench/jobs/$w.fio" --drive "$OUT/spec.toml" \
        --sched none,mq-deadline,kyber,latency-guard --output-format json > "$OUT/$w-sim.json"
done
python3 bench/predict_w1w2.py "$OUT"
