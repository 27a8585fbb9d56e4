"""Overhead of the Python package against the CLI, and the per-request handoff (docs/python.md).

    python bench/python/overhead.py sweep [ROUNDS]     # 200 small cells: CLI vs Python, interleaved
    python bench/python/overhead.py requests [N]       # N requests' records to a polars DataFrame
    python bench/python/overhead.py ray [CELLS]        # local engine vs Ray with 1 and 2 workers

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


def requests(n):
    import polars as pl

    import elevator

    job = f"[r]\nrw=randread\nbs=4k\nsize=64g\niodepth=32\nnumber_ios={n}\n"
    t0 = time.perf_counter()
    r = elevator.sim(fio_text=job, sched="none", requests=True)
    t_sim = time.perf_counter() - t0
    t1 = time.perf_counter()
    df = r.requests_to_polars()
    t_df = time.perf_counter() - t1
    assert isinstance(df, pl.DataFrame) and len(df) == n, len(df)
    print(f"{n} requests: simulation {t_sim:.2f} s; records -> Arrow -> polars DataFrame {t_df:.3f} s")
    print(f"load average: {os.getloadavg()}")


def ray_speedup(cells):
    import elevator

    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"], sweep={"seed": f"1..{cells // 2}"})
    out = {}
    for label, kw in (
        ("local, 1 thread", dict(engine="local", threads=1)),
        ("ray, 1 worker", dict(engine="ray", workers=1, cells_per_task=4)),
        ("ray, 2 workers", dict(engine="ray", workers=2, cells_per_task=4)),
        ("local, 2 threads", dict(engine="local", threads=2)),
    ):
        d = tempfile.mkdtemp()
        t0 = time.perf_counter()
        c = elevator.Campaign(grid, store=d)
        c.run(**kw)
        out[label] = time.perf_counter() - t0
        shutil.rmtree(d)
        print(f"{label}: {out[label]:.2f} s for {cells} cells", flush=True)
    base = out["ray, 1 worker"]
    print(f"ray speed-up 1 -> 2 workers: {base / out['ray, 2 workers']:.2f}x; "
          f"ray 1 worker vs local 1 thread: {base / out['local, 1 thread']:.2f}x the time")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "sweep"
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else None
    if what == "sweep":
        sweep(arg or 5)
    elif what == "requests":
        requests(arg or 10_000_000)
    elif what == "ray":
        ray_speedup(arg or 200)
    else:
        sys.exit(__doc__)
