"""Round 23 of issue 32: without ``timeout_s``, a Ray task's bound before any task had finished
was a constant 1800 s whatever its cells cost, so a worker frozen in the first wave held
``Campaign.run`` half an hour (an hour with the retry). Now every task's bound follows from
its work: the I/Os its cells imply, told from their parameters before they run
(``Grid.implied_ios``), at an assumed cost per I/O until a task finishes and at the slowest
finished task's measured cost after. Nothing is computed in the calling process: every cell
goes to Ray, so Ray's refusals and failures are still reported as before."""

import pytest

import elevator
from elevator import campaign


def test_the_bound_follows_from_the_tasks_work_and_names_its_rule():
    floor, factor = campaign.TASK_TIMEOUT_FLOOR_S, campaign.TASK_TIMEOUT_FACTOR
    assumed = campaign.FIRST_WAVE_S_PER_IO
    # Before any task finished: the task's implied I/Os at the assumed cost, or the floor.
    big = int(5 * floor / (factor * assumed))
    seconds, rule = campaign._task_bound(big, 0.0, None)
    assert seconds == pytest.approx(factor * big * assumed)
    assert f"the {big} I/Os its cells imply" in rule and "no task has finished" in rule, rule
    seconds, rule = campaign._task_bound(1000, 0.0, None)
    assert seconds == floor and "TASK_TIMEOUT_FLOOR_S" in rule, rule
    # Twice the work, twice the bound: a task of more cells or bigger cells gets more time.
    assert campaign._task_bound(2 * big, 0.0, None)[0] == pytest.approx(2 * factor * big * assumed)
    # A first wave of much work: at most the cap (the implied I/Os may be loose).
    seconds, rule = campaign._task_bound(1000 * big, 0.0, None)
    assert seconds == campaign.FIRST_WAVE_MAX_S and "FIRST_WAVE_MAX_S" in rule, rule
    # After: at the slowest finished task's measured cost per I/O ...
    seconds, rule = campaign._task_bound(big, 1.0, 0.5)
    assert seconds == pytest.approx(factor * big * 0.5)
    assert "the slowest finished task's" in rule, rule
    # ... and at least the factor times the longest finished task, as before.
    seconds, rule = campaign._task_bound(10, 1000.0, 1e-6)
    assert seconds == factor * 1000.0 and "the longest finished task" in rule, rule


def test_implied_ios_tell_each_cells_work_before_it_runs(tmp_path):
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"],
                              sweep={"job.compile.files": [100, 350]})
    camp = elevator.Campaign(grid, store=tmp_path / "s")
    ios = [camp._grid.implied_ios(c) for c in range(len(camp))]
    # Cells 0 and 2 (100 files) alike, 1 and 3 (350 files) alike and costlier.
    assert ios[0] == ios[2] and ios[1] == ios[3] and ios[1] > ios[0], ios
    with pytest.raises(elevator.ElevatorError, match="cell"):
        camp._grid.implied_ios(len(camp))
    assert not camp.done(), "telling the work runs no cell"


def test_a_worker_frozen_in_the_first_wave_ends_within_a_bound_from_the_work(
    tmp_path, monkeypatch, ray_sweep_with_workers_stopped
):
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"],
                              sweep={"seed": range(1, 9)})
    camp = elevator.Campaign(grid, store=tmp_path / "ray")
    ios = camp._grid.implied_ios(0)
    # The assumed cost per I/O set so that a one-cell task's bound is 4 s and the floor below
    # it: the rule under test (the bound follows from the work) is unchanged. Before the
    # change the first wave's bound was 1800 s whatever the work.
    monkeypatch.setattr(campaign, "FIRST_WAVE_S_PER_IO", 4.0 / (campaign.TASK_TIMEOUT_FACTOR * ios),
                        raising=False)
    monkeypatch.setattr(campaign, "TASK_TIMEOUT_FLOOR_S", 1.0)
    # Ray's start (10 to 40 s here, loaded) + two bounds of 4 s; before, 1800 s twice.
    sweep = ray_sweep_with_workers_stopped(camp, 600)
    assert not sweep["alive"], (
        f"run(engine='ray') still waiting 600 s after its workers stopped ({sweep['stuck']})"
    )
    outcome = sweep["outcome"]
    err = outcome.get("error")
    assert isinstance(err, elevator.ElevatorError), outcome
    msg = str(err)
    assert "ran past its bound of 4.0 s twice" in msg, msg
    assert f"the {ios} I/Os its cells imply" in msg and "no task has finished" in msg, msg
    assert not camp.done(), "no cell was computed outside Ray"
    assert len(camp.missing()) == len(camp)
