"""A block trace replayed under every scheduler into one DataFrame.

docs/traces/two-readers.trace (two processes reading) replayed closed loop, 4x faster than recorded, on the simulated
Cheetah 9LP under each of elevator's schedulers, per-request records
kept: one DataFrame of every request under every scheduler, then each one's mean and p99 read
latency from the records.

    python examples/trace_every_scheduler.py [TRACE]
"""

import sys
from pathlib import Path

import polars as pl

import elevator

trace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent.parent / "docs" / "traces" / "two-readers.trace"
scheds = [s["name"] for s in elevator.schedulers()]
r = elevator.sim(trace=trace, sched=scheds, closed_loop=True, speed=4, requests=True)

jobs = r.to_polars().select("cell", "scheduler")
requests = r.requests_to_polars().join(jobs, on="cell")
print(f"{len(requests)} requests under {len(scheds)} schedulers")
latency = (
    requests.with_columns(((pl.col("c_ns") - pl.col("q_ns")) / 1e6).alias("latency_ms"))
    .group_by("scheduler")
    .agg(
        pl.len().alias("requests"),
        pl.col("latency_ms").mean().alias("mean_ms"),
        pl.col("latency_ms").quantile(0.99).alias("p99_ms"),
    )
    .sort("mean_ms")
)
print(latency)
