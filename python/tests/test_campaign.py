"""Campaigns: cells stored as Parquet as they finish, a rerun computes only the missing ones."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow.parquet as pq
import pytest

import elevator

GRID = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"], sweep={"seed": range(1, 4)})


def test_a_campaign_stores_each_cell_and_reads_them_back(tmp_path):
    c = elevator.Campaign(GRID, store=tmp_path / "s")
    assert len(c) == 6 and c.missing() == list(range(6))
    assert c.run() == 6
    assert c.missing() == [] and c.run() == 0
    assert (tmp_path / "s" / "grid.json").exists()
    table = c.results()
    whole = elevator.sim("anticipatory-no-write", sched=["deadline", "noop"], sweep={"seed": range(1, 4)}).table
    assert table.equals(whole)
    assert len(c.to_polars()) == len(c.to_pandas()) == whole.num_rows
    # Reopened from the store alone, it is the same campaign.
    again = elevator.Campaign(store=tmp_path / "s")
    assert again.results().equals(table)
    assert c.coordinates(4) == {"scheduler": "noop", "seed": 2}


def test_a_store_keeps_one_grid(tmp_path):
    elevator.Campaign(GRID, store=tmp_path)
    other = dict(GRID, sweep=["seed=1..5"])
    with pytest.raises(elevator.ElevatorError, match="another grid"):
        elevator.Campaign(other, store=tmp_path)
    with pytest.raises(elevator.ElevatorError, match="not a campaign store"):
        elevator.Campaign(store=tmp_path / "nothing")


def test_merging_the_cell_files_gives_the_results(tmp_path):
    c = elevator.Campaign(GRID, store=tmp_path / "s")
    c.run()
    files = [c.cell_path(i) for i in reversed(range(len(c)))]
    out = tmp_path / "merged.parquet"
    elevator.merge(files, out)
    assert pq.read_table(out).equals(c.results())


def test_requests_are_stored_per_cell(tmp_path, small_fio):
    grid = elevator.grid_spec(fio_text=small_fio, sched=["none", "kyber"], requests=True)
    c = elevator.Campaign(grid, store=tmp_path)
    c.run(threads=1)
    q = c.requests()
    assert q.num_rows == 600
    assert q.column("cell").to_pylist()[:1] == [0] and q.column("cell").to_pylist()[-1] == 1


def test_a_killed_run_resumes_computing_only_the_missing_cells(tmp_path):
    store = tmp_path / "s"
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "anticipatory"],
                              sweep={"seed": range(1, 61)})
    script = textwrap.dedent(f"""
        import elevator
        c = elevator.Campaign({grid!r}, store={str(store)!r})
        c.run(threads=1)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    cells = store / "cells"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            if cells.is_dir() and len([f for f in os.listdir(cells) if f.endswith(".parquet")]) >= 3:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    c = elevator.Campaign(grid, store=store)
    before = c.done()
    if not c.missing():
        pytest.skip("notice: the run finished before it could be killed")
    assert len(before) >= 3
    # Whatever the kill interrupted left no partial cell: every stored file reads whole.
    for i in before:
        pq.read_table(c.cell_path(i))
    missing = c.missing()
    assert c.run() == len(missing)
    # The resumed store is byte for byte the store of an uninterrupted run.
    fresh = elevator.Campaign(grid, store=tmp_path / "fresh")
    fresh.run()
    for i in range(len(c)):
        assert c.cell_path(i).read_bytes() == fresh.cell_path(i).read_bytes(), i


TWO_GROUPS = """[a]
rw=read
bs=64k
size=4m
elevator_cgroup=/a

[b]
rw=read
bs=64k
size=4m
offset=1g
elevator_cgroup=/b
"""


def test_a_campaign_sweeps_the_io_controllers_settings(tmp_path):
    grid = elevator.grid_spec(
        fio_text=TWO_GROUPS, sched=["none", "bfq"],
        sweep={"/a/io.max": ["rbps=1048576", "rbps=max"], "/b/io.weight": [100, 1000]},
    )
    c = elevator.Campaign(grid, store=tmp_path / "io")
    assert len(c) == 8 and c.run() == 8
    t = c.results()
    assert t.column_names[:4] == ["cell", "scheduler", "/a/io.max", "/b/io.weight"]
    assert str(t.schema.field("/b/io.weight").type) == "int64"
    assert c.coordinates(5) == {"scheduler": "bfq", "/a/io.max": "rbps=1048576", "/b/io.weight": 1000}
    df = c.to_polars()
    a = df.filter(df["job"] == "a")
    limited = a.filter(a["/a/io.max"] == "rbps=1048576")["read_mb_s"]
    free = a.filter(a["/a/io.max"] == "rbps=max")["read_mb_s"]
    # blk-throttle (tg_may_dispatch) holds /a to about 1 MiB/s under every scheduler.
    assert limited.max() < 1.2 * 1.048576 and free.min() > 20 * limited.max()
    # A group the job file does not name is refused before anything runs.
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.Campaign(elevator.grid_spec(fio_text=TWO_GROUPS, sweep={"/c/io.weight": [1]}),
                          store=tmp_path / "bad")
    assert e.value.field == "--sweep /c/io.weight"
