"""Morton's anticipatory-scheduler table (2.5.59-mm5, January 2003) from Python.

A compile on a simulated 2003 laptop drive with and without a streaming writer, under the
2.5.59's deadline and the anticipatory scheduler, seeds 1 to 5: the compile's time and
its ratio to the compile alone, as `elevator reproduce anticipatory` prints it (its own
scenario for 2.4, whose block layer queues differently, is left out here for brevity).

    python examples/morton_table.py

On 2026-11-29 (10:57 UTC, 23 s at load 29 on a shared 2-core machine) it printed: compile
alone 48.6 s (Morton: 48 s); deadline-2.5 360.3 s, 7.42x alone (Morton: 400 s, 8.33x);
anticipatory 72.2 s, 1.49x alone (Morton: 70 s, 1.46x): the README's table.
"""

import polars as pl

import elevator

seeds = range(1, 6)
writer = elevator.sim("anticipatory", sched=["deadline-2.5", "anticipatory"], sweep={"seed": seeds}).to_polars()
alone = elevator.sim("anticipatory-no-write", sched="anticipatory", sweep={"seed": seeds}).to_polars()

compile_alone = alone.filter(pl.col("job") == "compile")["seconds"].mean()
table = (
    writer.filter(pl.col("job") == "compile")
    .group_by("scheduler")
    .agg(pl.col("seconds").mean().alias("compile_s"), pl.col("seconds").std().alias("sd"))
    .with_columns((pl.col("compile_s") / compile_alone).alias("x_alone"))
    .sort("compile_s", descending=True)
)
published = {"deadline-2.5": 400.0, "anticipatory": 70.0}
print(f"compile alone: {compile_alone:.1f} s (Morton: 48 s)")
for row in table.iter_rows(named=True):
    print(
        f"{row['scheduler']:>13}: {row['compile_s']:7.1f} s ± {row['sd']:.1f}, "
        f"{row['x_alone']:.2f}x alone (Morton: {published[row['scheduler']]:.0f} s, "
        f"{published[row['scheduler']] / 48:.2f}x)"
    )
