#!/usr/bin/env python3
"""Seconds per implied I/O of one cell, the figure behind ``FIRST_WAVE_S_PER_IO`` in
python/elevator/campaign.py: each built-in scenario and a fio job on an HDD and an SSD model,
under each of 7 schedulers, one cell run alone on one thread, REPS times interleaved (the
default 3); prints the implied I/Os (``Grid.implied_ios``), the median and range of the times
and the seconds per implied I/O (median and slowest).

Usage: python bench/ray_first_wave_rate.py [REPS]   (the package built: maturin develop)
"""

import json
import statistics
import sys
import time

import elevator
from elevator import _elevator

SCHEDULERS = ["noop", "deadline", "anticipatory", "cfq", "bfq", "mq-deadline", "kyber"]
FIO = (
    "[r]\nrw=randrw\nbs=4k\nsize=256m\nnumber_ios=20000\niodepth=16\n"
    "[s]\nrw=read\nbs=64k\nsize=256m\nnumber_ios=5000\n"
)
SOURCES = [(name, {"scenario": name}) for name, _ in _elevator.scenarios()] + [
    (f"fio@{drive}", {"fio_text": FIO, "drive": drive})
    for drive in ("cheetah9lp", "samsung-980pro-1tb")
]


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times: dict = {}
    implied: dict = {}
    for _ in range(reps):
        for name, source in SOURCES:
            for sched in SCHEDULERS:
                grid = _elevator.Grid(json.dumps(elevator.grid_spec(**source, sched=[sched])))
                implied[name, sched] = grid.implied_ios(0)
                began = time.perf_counter()
                grid.run([0], 1)
                times.setdefault((name, sched), []).append(time.perf_counter() - began)
    for (name, sched), ts in times.items():
        ios = implied[name, sched]
        med = statistics.median(ts)
        print(
            f"{name:24} {sched:12} implied={ios:9d} median={med:6.3f} s "
            f"range={min(ts):.3f}-{max(ts):.3f} s per I/O={med / ios:.2e} "
            f"slowest={max(ts) / ios:.2e}"
        )


if __name__ == "__main__":
    main()
