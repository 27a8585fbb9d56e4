# Shared by the benches on an emulated drive behind `elevator mount --drive`
# (morton-emulated.sh, goyal-emulated.sh, startup-emulated.sh): what they need, the binary,
# the drive's write-through spec, mounting and unmounting, the daemon's lateness. Source it,
# then set `root` (the repository), `back` (the backing directory), `mnt` (the mountpoint),
# `drive` and `bench` (the script's name, for messages) before calling these.

# Exit 0 with a notice unless run as root (the daemon runs at SCHED_FIFO) with /dev/fuse and
# fusermount3.
emu_require() {
    if [ "$(id -u)" != 0 ]; then
        echo "$bench: skipped: needs root (SCHED_FIFO for the emulator)"
        exit 0
    fi
    if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
        echo "$bench: skipped: needs /dev/fuse and fusermount3 (apt-get install fuse3)"
        exit 0
    fi
}

# elevator: ELEVATOR=PATH runs that binary instead of building this tree's.
emu_binary() {
    if [ -n "${ELEVATOR:-}" ]; then
        elevator=$ELEVATOR
    else
        cargo build --release -q -p elevator --manifest-path "$root/Cargo.toml"
        elevator="${CARGO_TARGET_DIR:-$root/target}/release/elevator"
    fi
}

# WRITE_CACHE=off (the default), as in the seeds' runs (hdparm -W0): emulate the drive's spec
# with `write_policy = "write-through"`, written beside the mountpoint; `drive` names it.
emu_write_through() {
    if [ "${WRITE_CACHE:-off}" = off ]; then
        "$elevator" drive show "$drive" |
            sed 's/^write_policy = .*/write_policy = "write-through"/; s/^name = "\(.*\)"/name = "\1-wt"/' \
                >"$mnt.drive.toml"
        drive="$mnt.drive.toml"
    fi
}

# Mount `back` on `mnt`, emulating `drive` under scheduler $1, the daemon's stderr in $2 and
# any further arguments given to `elevator mount`; the daemon runs at SCHED_FIFO 50. Calls
# `emu_mounted` once the mount is there, if the script defines it. Sets `daemon`.
mount_emulated() {
    local sched=$1 log=$2
    shift 2
    chrt -f 50 "$elevator" mount "$back" "$mnt" --drive "$drive" --sched "$sched" "$@" 2>"$log" &
    daemon=$!
    for _ in $(seq 100); do
        if mountpoint -q "$mnt"; then
            if declare -F emu_mounted >/dev/null; then emu_mounted; fi
            return 0
        fi
        sleep 0.1
    done
    echo "$bench: the mount did not appear" >&2
    cat "$log" >&2
    exit 1
}

# Unmount (retrying while busy for up to a minute) and wait for the daemon.
umount_emulated() {
    for _ in $(seq 300); do fusermount3 -u "$mnt" 2>/dev/null && break; sleep 0.2; done
    wait "$daemon"
    daemon=""
}

# The daemon's lateness line in its stderr file $1: "median p99 max" in us.
emu_lateness() {
    sed -n 's/.*late against the model by median \([0-9.]*\) us, p99 \([0-9.]*\) us, max \([0-9.]*\) us.*/\1 \2 \3/p' "$1" | tail -n1
}
