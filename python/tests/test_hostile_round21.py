"""Round 21 of issue 32: without ``timeout_s``, a Ray task's first bound was a constant
1800 s whatever the cells cost, so a worker frozen in the first wave held ``run`` half an
hour. Now the first missing cell is computed in the calling process first and the bound
follows from its time."""

import os
import signal
import threading
import time

import pytest

import elevator
from elevator import campaign


def test_the_bound_follows_from_the_measured_cell_then_from_finished_tasks():
    floor, factor = campaign.TASK_TIMEOUT_FLOOR_S, campaign.TASK_TIMEOUT_FACTOR
    # A cheap cell: the floor; a costly one: the factor times its time, per cell of a task.
    assert campaign._task_bound(0.01, 1, 0.0) == floor
    assert campaign._task_bound(30.0, 1, 0.0) == factor * 30.0
    assert campaign._task_bound(30.0, 4, 0.0) == factor * 120.0
    # Once a task finished, its time rules, whatever the first cell took.
    assert campaign._task_bound(30.0, 4, 10.0) == factor * 10.0
    assert campaign._task_bound(0.01, 1, 0.001) == floor


def _running_task_pids():
    """Processes whose title Ray set to the running task (``ray::_write_cells``)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith(b"ray::_write_cells"):
            out.append(int(pid))
    return out


def test_a_stopped_ray_worker_without_timeout_s_ends_within_a_bound_from_the_work(
    tmp_path, monkeypatch
):
    pytest.importorskip("ray", reason="notice: ray is not installed; the Ray test skips")
    # The floor lowered so that the bound is the measured cell's (a cell here takes well
    # under a second); the rule under test is unchanged.
    monkeypatch.setattr(campaign, "TASK_TIMEOUT_FLOOR_S", 3.0)
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"],
                              sweep={"seed": range(1, 9)})
    camp = elevator.Campaign(grid, store=tmp_path / "ray")
    first = camp.missing()[0]
    stopped = []
    quit_ = threading.Event()

    def freezer():
        while not quit_.is_set():
            for pid in _running_task_pids():
                if pid not in stopped:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            time.sleep(0.005)

    outcome = {}

    def run():
        try:
            outcome["ran"] = camp.run(engine="ray", workers=2)
        except Exception as e:  # the outcome under test
            outcome["error"] = e

    t = threading.Thread(target=freezer, daemon=True)
    t.start()
    r = threading.Thread(target=run, daemon=True)
    r.start()
    # Ray's start (~10 s here) + two bounds of a few seconds + slack; before, 1800 s twice.
    r.join(150)
    quit_.set()
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert not r.is_alive(), "run(engine='ray') still waiting 150 s after its workers stopped"
    err = outcome.get("error")
    assert isinstance(err, elevator.ElevatorError), outcome
    msg = str(err)
    assert "the first cell took here" in msg, msg
    assert "twice" in msg and "timeout_s" in msg, msg
    # The measured cell was computed here and kept; nothing else silently missing.
    assert first in camp.done()
    assert len(camp.done()) + len(camp.missing()) == len(camp)
