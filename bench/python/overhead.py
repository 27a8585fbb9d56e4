"""Overhead of the Python package against the CLI, and the per-request handoff (docs/python.md).

    python bench/python/overhead.py sweep [ROUNDS]     # 200 small cells: CLI vs Python, interleaved
    python bench/python/overhead.py requests [N] [RUNS]  # N requests' records to a polars DataFrame
    python bench/python/overhead.py ray [CELLS] [ROUNDS] # local engine vs Ray with 1 and 2 workers

Each prints its runs, then the median and range. Needs the package installed (maturin develop)
and, for `sweep`, target/release/elevator.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ELEVATOR = os.environ.get("ELEVATOR_BIN", str(ROOT / "target" / "release" / "elevator"))

# 200 small cells: Morton's compile alone on the laptop drive, 2 schedulers x 100 seeds.
SCENARIO, SCHEDS, SEEDS = "anticipatory-no-write", "deadline,noop", "1..100"


def summary(name, xs):
    print(f"{name}: median {statistics.median(xs):.3f} s, range {min(xs):.3f}-{max(xs):.3f} s, runs {[round(x, 3) for x in xs]}")


def sweep(rounds):
    py = [sys.executable, "-c", (
        "import elevator, sys; "
        f"r = elevator.sim({SCENARIO!r}, sched={SCHEDS!r}, sweep={{'seed': {SEEDS!r}}}); "
        "assert r.table.num_rows > 0"
    )]
    cli = [ELEVATOR, "sim", SCENARIO, "--sched", SCHEDS, "--sweep", f"seed={SEEDS}", "--json", os.devnull]
    t_cli, t_py, ratios = [], [], []
    for i in range(rounds):
        pair = []
        for name, cmd in (("cli", cli), ("python", py)) if i % 2 == 0 else (("python", py), ("cli", cli)):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            dt = time.perf_counter() - t0
            (t_cli if name == "cli" else t_py).append(dt)
            pair.append((name, dt))
        d = dict(pair)
        ratios.append(d["python"] / d["cli"])
        print(f"round {i}: cli {d['cli']:.3f} s, python {d['python']:.3f} s, ratio {ratios[-1]:.3f}", flush=True)
    summary("cli (whole process)", t_cli)
    summary("python (whole process, import included)", t_py)
    print(f"python / cli, paired within a round: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
    print(f"load average: {os.getloadavg()}")


def requests(n, runs):
    """`runs` runs, each in a process of its own (the records of 10 M requests take about
    1 GB), printing each run's times and the medians."""
    t_sim, t_df, cpu_df = [], [], []
    for i in range(runs):
        p = subprocess.run([sys.executable, __file__, "requests-once", str(n)], check=True,
                           capture_output=True, text=True)
        line = p.stdout.strip().splitlines()[-1]
        a, b, c = (float(x) for x in line.split())
        t_sim.append(a)
        t_df.append(b)
        cpu_df.append(c)
        print(f"run {i}: simulation {a:.2f} s, records -> polars {b:.3f} s wall, {c:.3f} s of CPU "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    summary(f"{n} requests' records -> Arrow -> polars DataFrame, wall", t_df)
    summary("the same, CPU time of the process (every thread)", cpu_df)
    summary("the simulation before it", t_sim)
    print(f"load average: {os.getloadavg()}")


def requests_once(n):
    import polars as pl

    import elevator

    job = f"[r]\nrw=randread\nbs=4k\nsize=64g\niodepth=32\nnumber_ios={n}\n"
    t0 = time.perf_counter()
    r = elevator.sim(fio_text=job, sched="none", requests=True)
    t_sim = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    df = r.requests_to_polars()
    t_df, c_df = time.perf_counter() - t1, time.process_time() - c1
    assert isinstance(df, pl.DataFrame) and len(df) == n, len(df)
    print(f"{t_sim} {t_df} {c_df}")


def ray_speedup(cells, rounds):
    """`rounds` rounds of the four configurations, the order turned each round; the speed-up
    is paired within a round."""
    import elevator

    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"], sweep={"seed": f"1..{cells // 2}"})
    configs = [
        ("ray, 1 worker", dict(engine="ray", workers=1, cells_per_task=4)),
        ("ray, 2 workers", dict(engine="ray", workers=2, cells_per_task=4)),
        ("local, 1 thread", dict(engine="local", threads=1)),
        ("local, 2 threads", dict(engine="local", threads=2)),
    ]
    times = {label: [] for label, _ in configs}
    ray_up, local_up = [], []
    for i in range(rounds):
        order = configs[i % len(configs):] + configs[:i % len(configs)]
        out = {}
        for label, kw in order:
            d = tempfile.mkdtemp()
            t0 = time.perf_counter()
            c = elevator.Campaign(grid, store=d)
            c.run(**kw)
            out[label] = time.perf_counter() - t0
            times[label].append(out[label])
            shutil.rmtree(d)
            print(f"round {i}: {label}: {out[label]:.2f} s for {cells} cells (load {os.getloadavg()[0]:.1f})", flush=True)
        ray_up.append(out["ray, 1 worker"] / out["ray, 2 workers"])
        local_up.append(out["local, 1 thread"] / out["local, 2 threads"])
    for label, xs in times.items():
        summary(label, xs)
    print(f"ray speed-up 1 -> 2 workers, paired: median {statistics.median(ray_up):.2f}x, range {min(ray_up):.2f}-{max(ray_up):.2f}")
    print(f"local speed-up 1 -> 2 threads, paired: median {statistics.median(local_up):.2f}x, range {min(local_up):.2f}-{max(local_up):.2f}")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "sweep"
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else None
    if what == "sweep":
        sweep(arg or 5)
    elif what == "requests":
        requests(arg or 10_000_000, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    elif what == "requests-once":
        requests_once(arg)
    elif what == "ray":
        ray_speedup(arg or 200, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    else:
        sys.exit(__doc__)
