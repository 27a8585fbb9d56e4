"""Hostile cases of issue 32's sixteenth round against the Ray engine, with Ray installed
(round 15 tried it absent only): a cluster address Ray itself cannot use, a worker that dies
at every attempt, Ray shut down mid-sweep. Each must end in the package's own exception,
the cells already written kept, never Ray's exception or a silent exit."""

import os
import signal
import threading
import time

import pytest

import elevator

ray = pytest.importorskip("ray", reason="notice: ray is not installed; the Ray engine tests skip")


def _grid(cells):
    return elevator.grid_spec(
        "anticipatory-no-write",
        sched=["deadline", "noop"],
        sweep={"seed": range(1, cells // 2 + 1)},
    )


def test_an_address_ray_cannot_use_gives_the_packages_error(tmp_path):
    """``address="auto"`` with no cluster running raised Ray's ``ConnectionError``, and
    ``"localhost:notaport"`` Ray's ``ValueError`` (``ray.init`` was called unguarded after the
    reachability probe, which leaves names Ray resolves itself to Ray). Now the package's
    error naming ``address``, Ray's own reason kept as its cause."""
    assert not ray.is_initialized()
    c = elevator.Campaign(_grid(4), store=tmp_path / "s")
    for address in ["auto", "localhost:notaport"]:
        with pytest.raises(elevator.ElevatorError) as e:
            c.run(engine="ray", address=address)
        assert str(e.value).startswith("address: "), str(e.value)
        assert e.value.__cause__ is not None
        assert not ray.is_initialized()


def test_a_worker_that_dies_at_every_attempt_gives_the_packages_error(
    tmp_path, descendants_named
):
    """A task whose worker dies (SIGABRT, what a panic that aborts or a crash in native code
    does) at every attempt: after Ray's retries ``ray.get`` raised Ray's
    ``WorkerCrashedError``, which escaped as is. Now the package's error naming the task's
    cells; the cluster the engine started is shut down."""
    c = elevator.Campaign(_grid(8), store=tmp_path / "s")
    stop = threading.Event()

    def killer():
        while not stop.is_set():
            for pid in descendants_named("ray::_write_cells"):
                try:
                    os.kill(pid, signal.SIGABRT)
                except OSError:
                    pass
            time.sleep(0.1)

    threading.Thread(target=killer, daemon=True).start()
    try:
        with pytest.raises(elevator.ElevatorError) as e:
            c.run(engine="ray", workers=2, cells_per_task=8)
    finally:
        stop.set()
    assert "cells [0, 1, 2, 3, 4, 5, 6, 7] failed" in str(e.value), str(e.value)
    assert "WorkerCrashedError" in str(e.value), str(e.value)
    assert not ray.is_initialized()


def test_ray_shut_down_mid_sweep_gives_the_packages_error_not_a_silent_exit(tmp_path):
    """``ray.shutdown()`` from another thread while the engine waits: the wait ended with
    ``SystemExit(0)``, so a script exited 0 with the sweep unfinished. Now the package's error
    saying how many cells were written; those are kept and a second run computes the rest."""
    c = elevator.Campaign(_grid(400), store=tmp_path / "s")

    def shut_down_after_the_first_cell():
        cells = tmp_path / "s" / "cells"
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300:
            if cells.is_dir() and any(n.endswith(".parquet") for n in os.listdir(cells)):
                ray.shutdown()
                return
            time.sleep(0.05)

    threading.Thread(target=shut_down_after_the_first_cell, daemon=True).start()
    with pytest.raises(elevator.ElevatorError) as e:
        c.run(engine="ray", workers=2)
    assert "Ray was shut down during the sweep" in str(e.value), str(e.value)
    assert c.missing(), "every cell ran: the shutdown did not happen mid-sweep"
    assert not ray.is_initialized()
