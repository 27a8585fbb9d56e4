"""Kyber's read latency target swept on the simulated Samsung 980 PRO.

A QD1 4 KiB random reader beside a 4 KiB random writer at iodepth 32; kyber's read_lat_nsec
from 0.25 ms to 8 ms, three seeds each. Prints the reader's p99 and the writer's IOPS per
target and, when matplotlib is installed, draws them to kyber-target.png.

On the bare drive model (no host CPU model, which the grid does not take yet) the target
changes nothing: this run (2026-11-29) gave the reader a p99 of 6.47 ms and the writer 46,784
IOPS at every target, the same as under `none`. docs/ssd-model.md has the configuration
(eight drives per host, `elevator sim --host`) in which kyber does cut the reader's p99.

    python examples/kyber_target_sweep.py
"""

import elevator

JOB = """
[global]
bs=4k
size=1g
runtime=300ms
time_based=1

[reader]
rw=randread
iodepth=1

[writer]
rw=randwrite
iodepth=32
"""

targets = [250_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000]
r = elevator.sim(
    fio_text=JOB,
    drive="samsung-980pro-1tb",
    sched="kyber",
    sweep={"kyber.read_lat_nsec": targets, "seed": range(1, 4)},
)
df = r.to_polars()
import polars as pl  # noqa: E402  (installed with the package's test extras)

summary = (
    df.group_by("kyber.read_lat_nsec", "job")
    .agg(pl.col("read_p99_ms").mean(), pl.col("write_iops").mean())
    .sort("kyber.read_lat_nsec", "job")
)
print(summary)

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot")
else:
    reader = summary.filter(pl.col("job") == "reader")
    writer = summary.filter(pl.col("job") == "writer")
    fig, ax = plt.subplots()
    ax.plot(reader["kyber.read_lat_nsec"] / 1e6, reader["read_p99_ms"], "o-", label="reader p99 (ms)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("kyber read_lat_nsec (ms)")
    ax.set_ylabel("reader p99 latency (ms)")
    ax2 = ax.twinx()
    ax2.plot(writer["kyber.read_lat_nsec"] / 1e6, writer["write_iops"], "s--", color="C1", label="writer IOPS")
    ax2.set_ylabel("writer IOPS")
    fig.legend(loc="upper center")
    fig.savefig("kyber-target.png", dpi=100)
    print("wrote kyber-target.png")
