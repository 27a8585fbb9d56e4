"""Bad input raises Python exceptions carrying file, line and field."""

import pytest

import elevator


def test_a_bad_scenario_names_file_line_and_field():
    text = 'name = "x"\ndrive = "no-such-drive"\n\n[[job]]\nname = "r"\nkind = "compile"\n'
    with pytest.raises(elevator.InputError) as e:
        elevator.Scenario.from_toml(text, "mine.toml")
    assert (e.value.file, e.value.line, e.value.field) == ("mine.toml", 2, "drive")
    assert "no-such-drive" in e.value.message
    assert isinstance(e.value, elevator.ElevatorError)


def test_a_bad_fio_option_names_its_line_and_field():
    with pytest.raises(elevator.InputError) as e:
        elevator.sim(fio_text="[a]\nbs=4k\nrw=sideways\n")
    assert (e.value.file, e.value.line, e.value.field) == ("<input>", 3, "rw")


def test_a_bad_file_on_disk_is_named_by_its_path(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\ndrive = 7\n\n[[job]]\nname = "r"\nkind = "compile"\n')
    with pytest.raises(elevator.InputError) as e:
        elevator.sim(str(p))
    assert e.value.file == str(p)
    assert e.value.line == 2


def test_arguments_are_checked_before_anything_runs():
    cases = [
        (dict(sched="nosuch"), "nosuch"),
        (dict(sweep={"anticipatory.no_such": [1]}), "no_such"),
        (dict(sweep={"seed": "5..1"}), "empty range"),
        (dict(sweep={"seed": range(100000), "drive": ["a", "b"]}), "cells"),
        (dict(set={"antic_expire": -3}, sched="anticipatory"), "antic_expire"),
        (dict(drive="cheetah9lp"), "names its drive"),
    ]
    for kw, want in cases:
        with pytest.raises(elevator.ElevatorError) as e:
            elevator.sim("anticipatory-no-write", **kw)
        assert want in str(e.value), (kw, str(e.value))


def test_a_missing_trace_or_no_source_is_refused(tmp_path):
    with pytest.raises(elevator.InputError) as e:
        elevator.sim(trace=tmp_path / "absent.trace")
    assert "absent.trace" in e.value.file
    with pytest.raises(elevator.ElevatorError):
        elevator.sim()
