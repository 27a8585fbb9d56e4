# Shared by the benches that run a background load in a process group of its own (setsid):
# morton-emulated.sh, morton-real.sh, startup-emulated.sh.

# Stop the process group led by $1 and wait until none of it is left: a killed dd may still
# be closing its file (writing back through the mount).
stop_group() {
    kill -- "-$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    while pgrep -g "$1" >/dev/null; do sleep 0.2; done
}
