"""Round 23 of issue 32: ``ray.shutdown()`` from another thread just after the engine's wait
and before its get (round 16's test hit it at random under load: 2026-12-02 04:24 UTC, load
10). Ray's get started a new local cluster and raised Ray's ValueError ("owners not found"),
and cancelling the other tasks then escaped as Ray's TypeError ("No owner found for object")
instead of the package's report that Ray was shut down."""

import pytest

import elevator

ray = pytest.importorskip("ray", reason="notice: ray is not installed; the Ray test skips")


def test_ray_shut_down_between_the_wait_and_the_get_gives_the_packages_error(
    tmp_path, monkeypatch
):
    grid = elevator.grid_spec("anticipatory-no-write", sched=["deadline", "noop"],
                              sweep={"seed": range(1, 5)})
    c = elevator.Campaign(grid, store=tmp_path / "s")
    real_get = ray.get

    def get_after_a_shutdown(*args, **kwargs):
        # The other thread's shutdown, at the one moment the race needs, once.
        monkeypatch.setattr(ray, "get", real_get)
        ray.shutdown()
        return real_get(*args, **kwargs)

    monkeypatch.setattr(ray, "get", get_after_a_shutdown)
    with pytest.raises(elevator.ElevatorError) as e:
        c.run(engine="ray", workers=2)
    assert "Ray was shut down during the sweep" in str(e.value), str(e.value)
    assert c.missing(), "every cell ran: the shutdown did not happen mid-sweep"
    assert not ray.is_initialized(), "the cluster Ray's get started is shut down too"
