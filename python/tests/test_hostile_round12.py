"""Hostile arguments, issue 32's twelfth round: the package rebuilt and swept again (about 120
calls, each in a fresh interpreter: none crashed it, none hung). The classes still open, one
test each: an unordered or mapping argument taken as if ordered, a cell written twice at once,
a store's requests read before any cell ran, and the Ray engine without Ray."""

import json
import sys

import pytest

import elevator

FIO = "[r]\nrw=randread\nbs=4k\nsize=16m\nnumber_ios=50\n"


@pytest.mark.parametrize(
    "kw,name",
    [
        # ran seed 1 without a word: a mapping gave its keys only
        (dict(sweep={"seed": {1: 2}}), "sweep['seed']"),
        # a set of strings is ordered by hash randomisation: another order in every process
        (dict(sweep={"seed": {1, 2}}), "sweep['seed']"),
        (dict(sched={"deadline", "noop"}), "sched"),
        (dict(sweep={"seed=1", "seed=2"}), "sweep"),
    ],
    ids=["axis-mapping", "axis-set", "sched-set", "axes-set"],
)
def test_a_set_or_mapping_where_order_matters_is_refused(kw, name):
    kw.setdefault("sched", "deadline")
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.sim(fio_text=FIO, **kw)
    assert str(e.value).startswith(name), str(e.value)
    assert "list" in str(e.value), str(e.value)


def test_merge_refuses_a_set_of_inputs(tmp_path):
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.merge({str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")}, tmp_path / "o.parquet")
    assert str(e.value).startswith("inputs"), str(e.value)


def test_a_cell_written_twice_at_once_is_refused_not_a_lost_file(tmp_path):
    """The native `Grid.write_cells([0, 0, 0], store)` wrote cell 0 from three threads through
    one temporary file: "cells/0000000.parquet: No such file or directory"."""
    spec = json.dumps(elevator.grid_spec(fio_text=FIO, sched="none"))
    grid = elevator._elevator.Grid(spec)
    with pytest.raises(elevator.ElevatorError) as e:
        grid.write_cells([0, 0, 0], str(tmp_path / "store"))
    assert "cell 0 is given twice" in str(e.value), str(e.value)
    assert grid.write_cells([0], str(tmp_path / "store")) == [0]


def test_requests_of_an_empty_store_say_so(tmp_path):
    """pyarrow's "Must pass at least one table" said nothing of the campaign."""
    c = elevator.Campaign(elevator.grid_spec(fio_text=FIO, sched="none", requests=True), store=tmp_path / "s")
    with pytest.raises(elevator.ElevatorError) as e:
        c.requests()
    assert "no cells stored yet" in str(e.value), str(e.value)


def test_the_ray_engine_without_ray_says_how_to_get_it(tmp_path, monkeypatch):
    """Ray absent (its import fails): an ElevatorError naming the install, nothing stored."""
    monkeypatch.setitem(sys.modules, "ray", None)
    c = elevator.Campaign(elevator.grid_spec(fio_text=FIO, sched="none"), store=tmp_path / "s")
    with pytest.raises(elevator.ElevatorError) as e:
        c.run(engine="ray")
    assert "pip install" in str(e.value), str(e.value)
    assert c.done() == []


def test_a_ray_address_nobody_answers_is_refused_at_once(tmp_path):
    """`run(engine="ray", address="127.0.0.1:1")`: `ray.init` retried for more than five
    minutes before raising. The address is now tried first (a connection within 10 s)."""
    pytest.importorskip("ray")
    c = elevator.Campaign(elevator.grid_spec(fio_text=FIO, sched="none"), store=tmp_path / "s")
    with pytest.raises(elevator.ElevatorError) as e:
        c.run(engine="ray", address="127.0.0.1:1")
    assert str(e.value).startswith("address: '127.0.0.1:1'"), str(e.value)
    assert c.done() == []
