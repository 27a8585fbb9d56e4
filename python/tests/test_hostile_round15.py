"""Hostile arguments, issue 32's fifteenth round: every public function and class given
wrong types, None, NaN, infinities, negative and huge numbers, empty and 60 KB strings, paths
that are FIFOs, directories, /dev/zero or unreadable, and generators that raise (303
calls, each in a fresh interpreter under a 60 s bound). Three classes still escaped: a hang,
an exception that was not the package's, and messages sized by their input."""

import os
import subprocess
import sys
import textwrap

import pytest

import elevator

FIO = "[r]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=50\n"
LONG = "x" * 60_000


def test_scenario_load_of_a_fifo_is_refused_not_a_hang(tmp_path):
    """``Scenario.load(FIFO)``: ``open()`` of a FIFO nothing writes waited for ever (the case
    was killed after 60 s). It is opened without waiting and a FIFO refused; a directory and
    /dev/zero are refused as before."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = textwrap.dedent(
        f"""
        import elevator
        try:
            elevator.Scenario.load({str(fifo)!r})
        except elevator.ElevatorError as e:
            print("refused:", e)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
    )
    assert "refused:" in out.stdout and "a FIFO" in out.stdout, (out.stdout, out.stderr)
    for path, said in [(tmp_path, "Is a directory"), ("/dev/zero", "larger than 4 MiB")]:
        with pytest.raises(elevator.ElevatorError) as e:
            elevator.Scenario.load(path)
        assert said in str(e.value), str(e.value)


def _raising():
    yield "noop"
    raise RuntimeError("the generator raised")


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: elevator.sim(fio_text=FIO, sched=_raising()), "sched"),
        (lambda: elevator.sim(trace=_raising(), sched="noop"), "trace"),
        (lambda: elevator.sim(fio_text=FIO, sched="deadline", sweep={"seed": _raising()}), "seed"),
        (lambda: elevator.merge(_raising(), "/nonexistent/out.parquet"), "inputs"),
    ],
    ids=["sched", "trace", "sweep-values", "merge-inputs"],
)
def test_a_generator_that_raises_gives_the_packages_error(call, name):
    """The generator's own RuntimeError escaped the API, naming neither the argument nor the
    package; now an ElevatorError names the argument and what the iterable raised (chained
    to it as its cause)."""
    with pytest.raises(elevator.ElevatorError) as e:
        call()
    msg = str(e.value)
    assert name in msg and "RuntimeError: the generator raised" in msg, msg
    assert isinstance(e.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: elevator.Scenario.builtin(LONG),
        lambda: elevator.Scenario.load("/tmp/" + LONG),
        lambda: elevator.sim("/tmp/" + LONG, sched="noop"),
        lambda: elevator.sim(fio_text=FIO, sched=LONG),
        lambda: elevator.sim(fio_text=FIO, sched="deadline", set={LONG: 1}),
        lambda: elevator.sim(fio_text=FIO, sched="deadline", sweep={LONG: [1]}),
        lambda: elevator.sim(trace="/tmp/h.msr", trace_format=LONG, sched="noop"),
        lambda: elevator.run(fio_text=FIO, target="/tmp/" + LONG),
        lambda: elevator.merge(["/tmp/" + LONG], "/tmp/out.parquet"),
    ],
    ids=["builtin", "load", "sim-path", "sched", "set", "sweep", "trace-format", "target", "merge"],
)
def test_a_60_kb_string_is_cut_in_its_error(call):
    """Each of these quoted the 60 KB name or path whole (errors of 60,000 to 120,000
    characters); the package's and the native errors now show at most a few hundred."""
    with pytest.raises(elevator.ElevatorError) as e:
        call()
    assert len(str(e.value)) < 1500, len(str(e.value))


def test_a_store_the_system_refuses_gives_the_packages_error(tmp_path):
    """``Campaign(grid, store=60 KB path)``: Python's ``OSError`` (ENAMETOOLONG) escaped from
    the store's check; now an ``ElevatorError`` naming ``store``, the path cut."""
    grid = elevator.grid_spec(fio_text=FIO, sched="noop")
    for store in [tmp_path / LONG, "/proc/elevator-store"]:
        with pytest.raises(elevator.ElevatorError) as e:
            elevator.Campaign(grid, store=store)
        assert str(e.value).startswith("store: "), str(e.value)
        assert len(str(e.value)) < 300, len(str(e.value))


@pytest.mark.parametrize("output", [None, float("nan"), "", {}, 2**64])
def test_results_of_anything_but_a_run_is_refused(output):
    """``Results(None, False)`` (the class is public): an ``AttributeError`` about ``jobs``
    escaped; now an ``ElevatorError`` naming ``output``."""
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.Results(output, False)
    assert str(e.value).startswith("output: "), str(e.value)
