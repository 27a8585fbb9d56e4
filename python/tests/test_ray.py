"""The Ray engine: cells as Ray tasks on a local 2-worker cluster, the same bytes as locally."""

import pytest

import elevator

ray = pytest.importorskip("ray", reason="notice: ray is not installed; the Ray engine test skips")


def test_the_ray_engine_writes_the_same_bytes_as_the_local_engine(tmp_path):
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop", "anticipatory"],
                              sweep={"seed": range(1, 5)})
    local = elevator.Campaign(grid, store=tmp_path / "local")
    assert local.run(threads=1) == 12
    remote = elevator.Campaign(grid, store=tmp_path / "ray")
    assert remote.run(engine="ray", workers=2, cells_per_task=2) == 12
    assert remote.missing() == []
    for i in range(len(local)):
        assert local.cell_path(i).read_bytes() == remote.cell_path(i).read_bytes(), i
    assert remote.results().equals(local.results())
    assert not ray.is_initialized(), "a cluster the engine started is shut down"
