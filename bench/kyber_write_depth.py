#!/usr/bin/env python3
"""Writes in the drive over time, from a blktrace that `elevator sim --blktrace-out` wrote.

Under kyber with a writer that keeps more writes allocated than the write domain's depth
(bench/jobs/kyber-read-target.fio: 128), the writes dispatched and not yet completed (the
blktrace D and C events) are the write tokens in use: the trace of kyber_timer_fn's decisions
for the write domain (the kernel's kyber_adjust tracepoint), as the drive sees them.

    kyber_write_depth.py TRACE FROM_MS SPAN_MS [STEP_MS]

Without STEP_MS: prints the time-weighted mean writes in the drive over [FROM, FROM + SPAN) ms.
With it: one line per STEP_MS from FROM_MS (SPAN_MS 0: to the end), the mean and the most.
"""
import struct
import sys

# struct blk_io_trace (blktrace_api.h): magic, sequence, time, sector, bytes, action, pid,
# device, cpu, error, pdu_len; then pdu_len bytes.
HEADER = struct.Struct("<IIQQIIIIIHH")
ISSUE, COMPLETE = 7, 8  # __BLK_TA_ISSUE (D), __BLK_TA_COMPLETE (C)
TC_WRITE = 1 << 1  # BLK_TC_WRITE, in the action's upper 16 bits


def write_events(path):
    data = open(path, "rb").read()
    off, events = 0, []
    while off + HEADER.size <= len(data):
        _, _, t, _, _, action, _, _, _, _, pdu = HEADER.unpack_from(data, off)
        off += HEADER.size + pdu
        if (action >> 16) & TC_WRITE and action & 0xFFFF in (ISSUE, COMPLETE):
            events.append((t, 1 if action & 0xFFFF == ISSUE else -1))
    events.sort()
    return events


def windows(events, start, step, end):
    """(window start ns, mean, most) of the writes in the drive, window by window."""
    level, last, i, out = 0, 0, 0, []
    t0 = start
    while t0 < end:
        t1 = t0 + step
        # Bring the level up to t0.
        while i < len(events) and events[i][0] < t0:
            level += events[i][1]
            i += 1
        area, last, most = 0, t0, level
        while i < len(events) and events[i][0] < t1:
            area += level * (events[i][0] - last)
            last = events[i][0]
            level += events[i][1]
            most = max(most, level)
            i += 1
        area += level * (t1 - last)
        out.append((t0, area / step, most))
        t0 = t1
    return out


def main():
    path, from_ms, span_ms = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    events = write_events(path)
    end_ns = events[-1][0] if events else 0
    start = int(from_ms * 1e6)
    if len(sys.argv) > 4:
        step = int(float(sys.argv[4]) * 1e6)
        end = start + int(span_ms * 1e6) if span_ms > 0 else end_ns
        for t0, mean, most in windows(events, start, step, end):
            print(f"{t0 / 1e9:8.2f} s  {mean:7.2f}  {most}")
    else:
        span = int(span_ms * 1e6)
        print(f"{windows(events, start, span, start + span)[0][1]:.2f}")


if __name__ == "__main__":
    main()
