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
